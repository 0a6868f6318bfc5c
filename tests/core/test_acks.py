"""Given a leader and its ISR, each acks setting answers producers as Kafka's does."""

import pytest

from replog.core.config import ReplicaConfig
from replog.core.errors import ErrorCode
from replog.core.messages import AlterPartitionResponse, PartitionState

from .harness import Node, partition_state, produce, replicate


def leader_with_followers(min_insync_replicas: int = 2, isr=(1, 2, 3)):
    config = ReplicaConfig(min_insync_replicas=min_insync_replicas, replica_lag_time_ms_max=1_000)
    leader, f2, f3 = Node(1, config), Node(2, config), Node(3, config)
    state = partition_state(leader=1, isr=isr)
    for node in (leader, f2, f3):
        node.replica.handle_leader_and_isr(state, 0)
        node.apply()
    return leader, f2, f3


def test_acks_0_appends_and_answers_nothing():
    leader, _, _ = leader_with_followers()
    leader.replica.handle_produce(produce("a", acks=0), 0)
    ready = leader.apply()
    assert [op.base_offset for op in ready.log_ops] == [0]
    assert ready.completions == ()


def test_acks_1_answers_once_the_leader_appended():
    leader, _, _ = leader_with_followers()
    leader.replica.handle_produce(produce("a", acks=1), 0)
    ready = leader.apply()
    assert ready.log_ops and ready.completions[0].error == ErrorCode.NONE
    assert ready.completions[0].base_offset == 0


def test_acks_all_answers_when_the_high_watermark_passes_the_batch():
    leader, f2, f3 = leader_with_followers()
    leader.replica.handle_produce(produce("a", b"r1", b"r2"), 0)
    leader.apply()
    replicate(f2, leader)  # fetches the batch
    replicate(f3, leader)
    assert leader.completion("a") is None  # both hold it, but the leader does not know yet
    replicate(f2, leader)
    assert leader.completion("a") is None  # f3 has not asked past it yet
    replicate(f3, leader)
    assert leader.completion("a").error == ErrorCode.NONE
    assert leader.completion("a").base_offset == 0
    assert leader.replica.high_watermark == 2


def test_acks_all_with_too_small_an_isr_is_refused_before_any_append():
    leader, _, _ = leader_with_followers(min_insync_replicas=3, isr=(1, 2))
    leader.replica.handle_produce(produce("a"), 0)
    ready = leader.apply()
    assert ready.log_ops == ()
    assert leader.completion("a").error == ErrorCode.NOT_ENOUGH_REPLICAS
    assert leader.completion("a").message == "the ISR [1, 2] has fewer replicas than min.insync.replicas=3"


def test_acks_1_is_not_held_to_min_insync_replicas():
    leader, _, _ = leader_with_followers(min_insync_replicas=3, isr=(1, 2))
    leader.replica.handle_produce(produce("a", acks=1), 0)
    assert leader.apply().completions[0].error == ErrorCode.NONE


def test_waiting_producer_fails_when_the_isr_shrinks_below_min():
    leader, f2, _ = leader_with_followers(min_insync_replicas=2, isr=(1, 2))
    leader.replica.handle_produce(produce("a"), 0)
    leader.apply()
    shrunk = partition_state(leader=1, isr=(1,), partition_epoch=1)
    leader.replica.handle_leader_and_isr(shrunk, 10)
    leader.apply(10)
    assert leader.completion("a").error == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND


def test_waiting_producer_times_out_at_its_deadline():
    leader, _, _ = leader_with_followers()
    leader.replica.handle_produce(produce("a", timeout_ms=500), 0)
    leader.replica.tick(499)
    leader.apply(499)
    assert leader.completion("a") is None
    leader.replica.tick(500)
    leader.apply(500)
    assert leader.completion("a").error == ErrorCode.REQUEST_TIMED_OUT


def test_waiting_producers_learn_at_once_that_leadership_moved():
    leader, _, _ = leader_with_followers()
    leader.replica.handle_produce(produce("a"), 0)
    leader.replica.handle_leader_and_isr(partition_state(leader=2, leader_epoch=2), 5)
    leader.apply(5)
    assert leader.completion("a").error == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_lone_leader_commits_at_once():
    leader = Node(1, ReplicaConfig(min_insync_replicas=1))
    leader.replica.handle_leader_and_isr(PartitionState(1, 1, (1,), 0, (1, 2)), 0)
    leader.replica.handle_produce(produce("a"), 0)
    assert leader.apply().completions[0].error == ErrorCode.NONE


@pytest.mark.parametrize("acks", [2, -2, 3])
def test_unknown_acks_are_refused(acks):
    leader, _, _ = leader_with_followers()
    leader.replica.handle_produce(produce("a", acks=acks), 0)
    ready = leader.apply()
    assert ready.log_ops == () and ready.completions[0].error == ErrorCode.INVALID_REQUIRED_ACKS


def test_the_leaders_own_shrink_below_min_fails_waiting_producers_when_accepted():
    leader, _, _ = leader_with_followers(min_insync_replicas=2, isr=(1, 2))
    leader.replica.handle_produce(produce("a", timeout_ms=10_000), 0)
    leader.apply()
    leader.replica.tick(0)  # the lag clock runs from the leader's first tick
    leader.replica.tick(2_000)  # follower 2 never fetched: out of sync
    leader.apply(2_000)
    proposal = leader.proposals.pop()
    assert proposal.request.isr == (1,)
    assert leader.completion("a") is None  # still pending: the HW counts follower 2
    answer = AlterPartitionResponse(ErrorCode.NONE, partition_state(leader=1, isr=(1,), partition_epoch=1))
    leader.replica.handle_alter_partition_response(proposal.proposal_id, answer, 2_001)
    leader.apply(2_001)
    assert leader.completion("a").error == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    assert leader.replica.high_watermark == 1  # committed by the leader alone, and said so


def test_raising_min_insync_replicas_above_the_isr_fails_waiting_producers_and_refuses_new_ones():
    leader, f2, f3 = leader_with_followers(min_insync_replicas=2, isr=(1, 2))
    leader.replica.handle_produce(produce("waiting"), 0)
    leader.apply()
    leader.replica.reconfigure(ReplicaConfig(min_insync_replicas=3, replica_lag_time_ms_max=1_000))
    leader.apply()
    assert leader.completion("waiting").error == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    replicate(f2, leader)
    replicate(f2, leader)  # the HW passes the batch, whose producer was already answered
    assert leader.replica.high_watermark == 1

    leader.replica.handle_produce(produce("refused"), 0)
    leader.apply()
    assert leader.completion("refused").error == ErrorCode.NOT_ENOUGH_REPLICAS

    leader.replica.reconfigure(ReplicaConfig(min_insync_replicas=2, replica_lag_time_ms_max=1_000))
    leader.replica.handle_produce(produce("accepted"), 0)
    leader.apply()
    replicate(f2, leader)
    replicate(f2, leader)
    assert leader.completion("accepted").error == ErrorCode.NONE
