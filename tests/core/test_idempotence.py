"""Idempotent producers on a partition: a retried batch is answered with its first offsets and never
appended twice; a gap or an old epoch is refused; a new leader knows what its predecessor appended."""

from dataclasses import dataclass, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.core.errors import ErrorCode
from replog.core.log import MemoryBatch, MemoryLog, fetch_response
from replog.core.messages import ACKS_ALL, CompleteProduce, PartitionState, ProduceRequest
from replog.core.partition_driver import PartitionDriver
from replog.core.producer_state import (
    CACHED_BATCHES_MAX,
    ProducerAppend,
    ProducerStates,
    last_sequence,
    next_sequence,
)
from replog.core.replica import PartitionReplica
from replog.core.topic_partition import TopicPartition

from .harness import Node, RecordingSink, catch_up, partition_state

PID = 7


def batch(sequence: int, count: int = 1, epoch: int = 0, pid: int = PID, max_timestamp: int = -1) -> ProducerAppend:
    return ProducerAppend(pid, epoch, sequence, last_sequence(sequence, count), max_timestamp=max_timestamp)


def produce(request_id, sequence: int, count: int = 1, epoch: int = 0, acks: int = 1,
            max_timestamp: int = -1) -> ProduceRequest:
    records = (MemoryBatch(tuple(b"%s-%d" % (str(request_id).encode(), i) for i in range(count)),
                           producer_id=PID, producer_epoch=epoch, base_sequence=sequence,
                           max_timestamp=max_timestamp),)
    return ProduceRequest(request_id, records, count, acks, 1_000, -1, batch(sequence, count, epoch,
                                                                             max_timestamp=max_timestamp))


@pytest.mark.parametrize(("known", "sent", "error"), [
    (None, batch(0), ErrorCode.NONE),
    (None, batch(3), ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),
    ([batch(0, 2)], batch(2), ErrorCode.NONE),
    ([batch(0, 2)], batch(3), ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),
    ([batch(0, 2, epoch=3)], batch(2, epoch=2), ErrorCode.INVALID_PRODUCER_EPOCH),
    ([batch(0, 2, epoch=3)], batch(0, epoch=4), ErrorCode.NONE),
    ([batch(0, 2, epoch=3)], batch(5, epoch=4), ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),
    (None, batch(0, epoch=-1), ErrorCode.INVALID_RECORD),
])
def test_each_row_of_the_table_is_what_a_leader_answers(known, sent, error):
    states = ProducerStates()
    for offset, appended in enumerate(known or ()):
        states.update(appended, offset * 10, offset * 10 + 1, 0)
    check = states.check(sent)
    assert check.error == error and check.duplicate_of is None
    assert (check.message != "") == (error != ErrorCode.NONE)


def test_a_retry_of_any_of_the_last_five_batches_is_recognised_and_an_older_one_is_not():
    states = ProducerStates()
    for sequence in range(8):
        states.update(batch(sequence), 100 + sequence, 100 + sequence, 0)
    for sequence in range(8 - CACHED_BATCHES_MAX, 8):
        assert states.check(batch(sequence)).duplicate_of.first_offset == 100 + sequence
    assert states.check(batch(2)).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_sequences_wrap_from_the_largest_back_to_zero():
    assert next_sequence(2**31 - 1) == 0 and last_sequence(2**31 - 2, 3) == 0
    states = ProducerStates()
    states.update(batch(2**31 - 2, 2), 0, 1, 0)
    assert states.check(batch(0)).error == ErrorCode.NONE


def test_a_retried_batch_is_answered_with_its_first_offset_and_not_appended_again():
    leader = leader_alone()
    leader.replica.handle_produce(produce("a", 0, count=3), 0)
    first = leader.apply().completions[0]
    leader.replica.handle_produce(produce("a-again", 0, count=3), 1)
    retry = leader.apply()
    assert retry.log_ops == () and retry.completions[0].base_offset == first.base_offset == 0
    leader.replica.handle_produce(produce("b", 3), 2)
    assert leader.apply().completions[0].base_offset == 3
    assert leader.log.log_end_offset == 4


def test_a_retry_is_answered_with_the_time_its_first_append_stored_on_the_leader_and_on_a_new_one():
    """On a LogAppendTime topic each attempt is stamped with the leader's clock when it arrives; the
    answer to a retry carries the first attempt's time, which is what the log holds."""
    one, two, state = two_replicas()
    one.replica.handle_produce(produce("a", 0, count=2, max_timestamp=1_000), 0)
    assert one.apply().completions[0].first_max_timestamp == -1, "a first append is answered with its own time"
    one.replica.handle_produce(produce("a-again", 0, count=2, max_timestamp=2_000), 1)
    assert one.apply().completions[0].first_max_timestamp == 1_000
    one.replica.handle_produce(produce("a-all", 0, count=2, acks=ACKS_ALL, max_timestamp=3_000), 2)
    assert one.apply().completions == ()
    catch_up(two, one, 3)
    assert [(c.request_id, c.first_max_timestamp) for c in one.completions if c.request_id == "a-all"] == \
        [("a-all", 1_000)], "an acks=all retry waits for its original to commit and carries its time"
    two.replica.handle_leader_and_isr(replace(state, leader=2, leader_epoch=2, isr=(2,), partition_epoch=1), 5)
    two.apply()
    two.replica.handle_produce(produce("a-new-leader", 0, count=2, max_timestamp=5_000), 6)
    assert two.apply().completions[-1].first_max_timestamp == 1_000, "the follower kept the time it fetched"


def two_replicas() -> tuple[Node, Node, PartitionState]:
    """Broker 1 leading, broker 2 following, both in the ISR."""
    leader, follower = Node(1), Node(2)
    state = partition_state(leader=1, isr=(1, 2), replicas=(1, 2))
    leader.replica.handle_leader_and_isr(state, 0)
    follower.replica.handle_leader_and_isr(state, 0)
    leader.apply()
    return leader, follower, state


def test_an_acks_all_retry_waits_for_its_original_to_commit():
    leader, follower, _ = two_replicas()
    leader.replica.handle_produce(produce("a", 0, acks=ACKS_ALL), 0)
    leader.apply()
    leader.replica.handle_produce(produce("a-again", 0, acks=ACKS_ALL), 1)
    assert leader.apply().completions == (), "not committed yet: the retry waits like the original"
    catch_up(follower, leader, 2)
    assert sorted(c.request_id for c in leader.completions) == ["a", "a-again"]
    assert {c.base_offset for c in leader.completions} == {0}


def test_a_new_leader_recognises_a_retry_its_predecessor_appended():
    one, two, state = two_replicas()
    one.replica.handle_produce(produce("a", 0, count=2), 0)
    one.apply()
    catch_up(two, one, 1)
    # Broker 1 dies before the producer hears back; the producer retries on broker 2, the new leader.
    two.replica.handle_leader_and_isr(replace(state, leader=2, leader_epoch=2, isr=(2,), partition_epoch=1), 5)
    two.apply()
    two.replica.handle_produce(produce("a-retry", 0, count=2), 6)
    answered = two.apply()
    assert answered.log_ops == () and answered.completions[0].base_offset == 0
    assert two.log.log_end_offset == 2


def test_a_truncated_batch_is_appended_again_when_retried():
    leader = leader_alone()
    leader.replica.handle_produce(produce("a", 0), 0)
    leader.apply()
    leader.replica.handle_produce(produce("b", 1), 1)
    leader.apply()
    states = leader.replica._log.producers
    states.truncate(1)  # as a follower would when its tail diverged
    assert states.check(batch(1)).duplicate_of is None and states.check(batch(1)).error == ErrorCode.NONE
    assert states.check(batch(0)).duplicate_of is not None


def test_a_silent_producer_is_forgotten_after_the_expiration():
    leader = leader_alone(producer_id_expiration_ms=10_000)
    leader.replica.handle_produce(produce("a", 0), 0)
    leader.apply()
    leader.replica.tick(5_000)
    assert [p.producer_id for p in leader.replica.producers] == [PID]
    leader.replica.tick(12_000)
    assert leader.replica.producers == ()


def leader_alone(**config) -> Node:
    from replog.core.config import ReplicaConfig
    node = Node(1, config=ReplicaConfig(**config))
    node.replica.handle_leader_and_isr(partition_state(leader=1, isr=(1,), replicas=(1,)), 0)
    node.apply()
    return node


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.booleans(), st.booleans()), min_size=1, max_size=30))
def test_retries_in_any_number_append_each_batch_once_in_order(batches):
    """A producer sends batches in order; any of them may be sent again (a lost answer), right away
    or after the next one was sent. The log holds each batch once, in the order sent."""
    leader = leader_alone()
    sequence, sent = 0, []
    for index, (count, again, late) in enumerate(batches):
        request = produce(index, sequence, count)
        leader.replica.handle_produce(request, index)
        leader.apply(index)
        sent.append(request)
        if again:
            retried = sent[-2] if late and len(sent) > 1 else request
            leader.replica.handle_produce(replace(retried, request_id=f"{index}-again"), index)
            leader.apply(index)
        sequence = next_sequence(last_sequence(sequence, count))
    logged = [record for b in leader.log.batches for record in b.records]
    assert logged == [record for request in sent for b in request.records for record in b.records]


@dataclass
class DrivenBroker:
    """A broker as the core sees it: the production driver over a MemoryLog, and what it hands over."""

    driver: PartitionDriver
    sink: RecordingSink


def driven_broker(broker_id: int) -> DrivenBroker:
    sink = RecordingSink()
    return DrivenBroker(PartitionDriver(TopicPartition("t", 0), PartitionReplica(broker_id), MemoryLog(),
                                        write_epoch_entries=lambda entries: None, wall_clock_ms=lambda: 0,
                                        sink=sink), sink)


def fetch_once(follower: DrivenBroker, leader: DrivenBroker, now_ms: int) -> None:
    fetch = follower.sink.fetches.pop()
    plan = leader.driver.fetch(replace(fetch.request, replica_epoch=1), now_ms)
    follower.driver.fetch_response(fetch.fetch_id, fetch_response(plan, leader.driver.read(plan, plan.max_bytes)),
                                   now_ms)


def test_a_follower_whose_truncation_drops_every_cached_batch_takes_the_producers_next_sequence_as_leader():
    """Found by the simulator (transaction seed 263): the follower's truncation took all five batches its
    cache held for the producer; the driver rebuilds the producer from the log, so the batches before them
    count again, and the replica, once leader, takes the retry of the first lost batch."""
    one, two = driven_broker(1), driven_broker(2)
    for broker in (one, two):
        broker.driver.leader_and_isr(partition_state(leader=1, isr=(1, 2), replicas=(1, 2)), 0)
    for sequence in range(5):  # committed on both
        one.driver.produce(produce(sequence, sequence, acks=ACKS_ALL), 1)
    fetch_once(two, one, 2)
    fetch_once(two, one, 3)
    assert [c.error for c in one.sink.completions] == [ErrorCode.NONE] * 5
    for sequence in range(5, 10):  # appended on broker 1 alone, never acknowledged
        one.driver.produce(produce(sequence, sequence, acks=ACKS_ALL), 4)
    # Broker 1 is cut off; broker 2 leads, and broker 1, back as its follower, truncates its epoch 1 tail.
    second = partition_state(leader=2, leader_epoch=2, isr=(1, 2), partition_epoch=1, replicas=(1, 2))
    two.driver.leader_and_isr(second, 5)
    one.driver.leader_and_isr(second, 5)
    fetch_once(one, two, 6)
    assert one.driver.log.log_end_offset == 5
    # Broker 2 dies before anything more is written; broker 1 leads.
    one.driver.leader_and_isr(replace(second, leader=1, leader_epoch=3, isr=(1,), partition_epoch=2), 7)
    assert one.driver.produce(produce("retry-4", 4), 8) and one.sink.completions[-1].base_offset == 4, \
        "a retry of sequence 4 is recognised: the log still holds it"
    assert one.driver.produce(produce("retry-5", 5), 9)
    assert one.sink.completions[-1] == CompleteProduce("retry-5", ErrorCode.NONE, 5)
