"""Acks under any interleaving: one answer per request, and success only for committed records."""

from hypothesis import given, settings
from hypothesis import strategies as st

from replog.core.config import ReplicaConfig
from replog.core.election import alter_partition
from replog.core.errors import ErrorCode
from replog.core.messages import ACKS_ALL, AlterPartitionResponse

from .harness import Node, partition_state, produce, replicate

steps = st.lists(
    st.one_of(
        st.tuples(st.just("produce"), st.sampled_from([0, 1, ACKS_ALL])),
        st.tuples(st.just("fetch"), st.sampled_from([2, 3])),
        st.tuples(st.just("tick"), st.integers(1, 800)),
        st.tuples(st.just("controller"), st.booleans()),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(steps, st.sampled_from([1, 2, 3]))
def test_each_request_is_answered_once_and_success_means_every_isr_member_has_it(script, min_insync_replicas):
    config = ReplicaConfig(min_insync_replicas=min_insync_replicas, replica_lag_time_ms_max=1_000)
    nodes = {broker: Node(broker, config) for broker in (1, 2, 3)}
    registration = partition_state(leader=1)
    for node in nodes.values():
        node.replica.handle_leader_and_isr(registration, 0)
        node.apply()
    leader = nodes[1]
    now_ms, sent = 0, {}
    for kind, argument in script:
        answered_before = len(leader.completions)
        if kind == "produce":
            request_id = len(sent)
            sent[request_id] = argument
            leader.replica.handle_produce(produce(request_id, acks=argument, timeout_ms=1_500), now_ms)
            leader.apply(now_ms)
        elif kind == "fetch":
            replicate(nodes[argument], leader, now_ms)
        elif kind == "tick":
            now_ms += argument
            leader.replica.tick(now_ms)
            leader.apply(now_ms)
        elif leader.proposals:
            # The controller answers the latest proposal, or the answer is lost.
            proposal = leader.proposals.pop()
            if argument:
                error, registration = alter_partition(registration, proposal.request, {1: 1, 2: 1, 3: 1})
                leader.replica.handle_alter_partition_response(
                    proposal.proposal_id, AlterPartitionResponse(error, registration), now_ms
                )
                leader.apply(now_ms)
        for completion in leader.completions[answered_before:]:
            if completion.error == ErrorCode.NONE and sent[completion.request_id] == ACKS_ALL:
                batch = leader.log.batch_at(completion.base_offset)
                assert len(leader.replica.maximal_isr) >= min_insync_replicas
                for member in leader.replica.maximal_isr:
                    assert nodes[member].log.batch_at(completion.base_offset) == batch
    answered = [completion.request_id for completion in leader.completions]
    assert len(answered) == len(set(answered)), "a request was answered twice"
    now_ms += 2_000
    leader.replica.tick(now_ms)
    leader.apply(now_ms)
    answered = {completion.request_id for completion in leader.completions}
    assert answered == {request_id for request_id, acks in sent.items() if acks != 0}
