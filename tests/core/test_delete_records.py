"""DeleteRecords: the leader's log start moves at once, each follower's from its next fetch answer, and
the request is answered once the lowest log start over the replicas on live brokers (the low watermark,
as Kafka's) has reached its offset."""

from dataclasses import replace

from replog.core.config import ReplicaConfig
from replog.core.errors import ErrorCode
from replog.core.fetch_session import PartitionFetch, SessionPartition
from replog.core.log import MemoryLog
from replog.core.messages import (
    DELETE_TO_HIGH_WATERMARK,
    LATEST_TIMESTAMP,
    CompleteDeleteRecords,
    DeleteRecordsRequest,
    FetchRequest,
)
from replog.core.partition_driver import PartitionDriver
from replog.core.producer_state import ProducerAppend
from replog.core.replica import PartitionReplica
from replog.core.topic_partition import TopicPartition

from .harness import Node, RecordingSink, catch_up, partition_state, produce, replicate


def cluster_with_records(count: int = 10, isr=(1, 2, 3), config: ReplicaConfig | None = None,
                         alive=(1, 2, 3)):
    """A leader (1) and two followers, `count` one-record batches committed on all three; UpdateMetadata
    named `alive` the live brokers (None: not yet heard)."""
    config = config or ReplicaConfig(min_insync_replicas=1, replica_lag_time_ms_max=1_000)
    leader, f2, f3 = Node(1, config), Node(2, config), Node(3, config)
    state = partition_state(leader=1, isr=isr)
    for node in (leader, f2, f3):
        if alive is not None:
            node.replica.handle_alive_brokers(alive)
        node.replica.handle_leader_and_isr(state, 0)
        node.apply()
    for index in range(count):
        leader.replica.handle_produce(produce(f"p{index}", acks=1), 0)
        leader.apply()
    for _ in range(2):
        for follower in (f2, f3):
            catch_up(follower, leader)
    assert leader.replica.high_watermark == count
    return leader, f2, f3


def delete(leader: Node, offset: int, request_id: str = "d", timeout_ms: int = 1_000, now_ms: int = 0):
    leader.replica.handle_delete_records(DeleteRecordsRequest(request_id, offset, timeout_ms), now_ms)
    leader.apply(now_ms)
    return deleted(leader, request_id)


def follow_log_start(follower: Node, leader: Node) -> None:
    """Two fetches: the answer to the first moves the follower's log start, the second tells the leader."""
    replicate(follower, leader)
    replicate(follower, leader)


def answered(leader: Node, low_watermark: int) -> bool:
    answer = deleted(leader)
    return answer is not None and answer.error is ErrorCode.NONE and answer.low_watermark == low_watermark


def deleted(leader: Node, request_id: str = "d") -> CompleteDeleteRecords | None:
    return next((c for c in leader.completions if isinstance(c, CompleteDeleteRecords) and c.request_id == request_id),
                None)


def test_the_leader_deletes_at_once_and_answers_once_both_followers_start_there_too():
    leader, f2, f3 = cluster_with_records()
    assert delete(leader, 4) is None
    assert leader.replica.log_start_offset == leader.log.log_start_offset == 4
    assert leader.log.read(3, 1 << 20).error is ErrorCode.OFFSET_OUT_OF_RANGE
    replicate(f2, leader)  # learns the log start from the answer
    assert f2.replica.log_start_offset == f2.log.log_start_offset == 4
    replicate(f2, leader)  # its next fetch tells the leader
    assert deleted(leader) is None  # f3 still starts at 0
    replicate(f3, leader)
    replicate(f3, leader)
    answer = deleted(leader)
    assert answer.error is ErrorCode.NONE and answer.low_watermark == 4
    assert leader.replica.low_watermark == 4


def test_minus_one_deletes_up_to_the_high_watermark_and_not_past_it():
    leader, f2, f3 = cluster_with_records(count=6)
    leader.replica.handle_produce(produce("uncommitted", acks=1), 0)  # in the leader's log, above the HW
    leader.apply()
    delete(leader, DELETE_TO_HIGH_WATERMARK)
    assert leader.replica.log_start_offset == 6 and leader.replica.log_end_offset == 7


def test_an_offset_past_the_high_watermark_or_below_minus_one_is_refused_and_nothing_is_deleted():
    leader, _, _ = cluster_with_records(count=5)
    for offset in (6, -2):
        answer = delete(leader, offset, request_id=str(offset))
        assert answer.error is ErrorCode.OFFSET_OUT_OF_RANGE
        assert "high watermark 5" in answer.message
    assert leader.replica.log_start_offset == 0 and leader.log.log_start_offset == 0


def test_an_offset_below_the_log_start_deletes_nothing_more_and_is_answered_at_once():
    leader, f2, f3 = cluster_with_records()
    delete(leader, 5, request_id="first")
    for follower in (f2, f3):
        replicate(follower, leader)
        replicate(follower, leader)
    answer = delete(leader, 2, request_id="again")
    assert answer.error is ErrorCode.NONE and answer.low_watermark == 5
    assert leader.replica.log_start_offset == 5


def test_a_follower_outside_the_isr_on_a_live_broker_holds_the_answer_back_as_in_kafka():
    leader, f2, f3 = cluster_with_records(isr=(1, 2))
    delete(leader, 3)
    follow_log_start(f2, leader)
    assert deleted(leader) is None  # broker 3 is alive: its replica may still serve records below 3
    follow_log_start(f3, leader)
    assert answered(leader, 3)


def test_a_follower_out_of_the_isr_on_a_dead_broker_does_not_hold_the_answer_back():
    leader, f2, _ = cluster_with_records(isr=(1, 2), alive=(1, 2))
    delete(leader, 3)
    follow_log_start(f2, leader)
    assert answered(leader, 3)


def test_an_in_sync_follower_on_a_dead_broker_holds_the_answer_back_until_it_leaves_the_isr():
    """A clean election may make it the leader when its broker returns: it must not bring deleted records back."""
    leader, f2, _ = cluster_with_records(alive=(1, 2))
    delete(leader, 3)
    follow_log_start(f2, leader)
    assert deleted(leader) is None
    leader.replica.handle_leader_and_isr(partition_state(leader=1, isr=(1, 2), partition_epoch=2), 0)
    leader.apply()  # the controller took broker 3 out of the ISR
    assert answered(leader, 3)


def test_a_broker_that_dies_while_its_follower_holds_the_answer_back_releases_it():
    leader, f2, _ = cluster_with_records(isr=(1, 2))
    delete(leader, 3)
    follow_log_start(f2, leader)
    assert deleted(leader) is None  # broker 3 is alive, out of the ISR
    leader.replica.handle_alive_brokers((1, 2))  # UpdateMetadata: broker 3 is gone
    leader.apply()
    assert answered(leader, 3)
    leader.replica.handle_alive_brokers((1, 2, 3))  # back: it holds the next request until it has fetched
    leader.apply()
    assert leader.replica.low_watermark == 0


def test_until_the_live_brokers_are_known_every_follower_counts():
    leader, f2, f3 = cluster_with_records(isr=(1, 2), alive=None)
    delete(leader, 3)
    follow_log_start(f2, leader)
    assert deleted(leader) is None
    follow_log_start(f3, leader)
    assert deleted(leader).error is ErrorCode.NONE


def test_a_new_leader_counts_the_live_brokers_it_heard_of_as_a_follower():
    leader, f2, f3 = cluster_with_records(isr=(1, 2), alive=(1, 2))
    f2.replica.handle_leader_and_isr(partition_state(leader=2, leader_epoch=2, isr=(1, 2)), 0)
    f2.apply()
    leader.replica.handle_leader_and_isr(partition_state(leader=2, leader_epoch=2, isr=(1, 2)), 0)
    leader.apply()
    assert delete(f2, 4) is None
    follow_log_start(leader, f2)
    assert answered(f2, 4)  # broker 3's follower is not waited for


def test_a_follower_that_never_catches_up_leaves_the_request_to_time_out_with_the_low_watermark():
    leader, f2, _ = cluster_with_records()
    delete(leader, 3, timeout_ms=500)
    replicate(f2, leader)
    replicate(f2, leader)
    leader.replica.tick(400)
    leader.apply(400)
    assert deleted(leader) is None
    leader.replica.tick(500)
    leader.apply(500)
    answer = deleted(leader)
    assert answer.error is ErrorCode.REQUEST_TIMED_OUT and answer.low_watermark == 0
    assert answer.message.endswith("replica's: broker 3 at 0")
    assert leader.replica.log_start_offset == 3  # the leader's records are gone all the same


def test_a_timed_out_answer_names_the_replicas_that_have_not_fetched_from_a_new_leader():
    _, f2, _ = cluster_with_records()
    f2.replica.handle_leader_and_isr(partition_state(leader=2, leader_epoch=2), 0)
    f2.apply()
    assert delete(f2, 4, timeout_ms=500) is None
    f2.replica.tick(500)
    f2.apply(500)
    answer = deleted(f2)
    assert answer.error is ErrorCode.REQUEST_TIMED_OUT and answer.low_watermark == -1
    assert answer.message.endswith("replica's: brokers 1 at -1, 3 at -1 (-1: not fetched from this leader yet)")


def test_a_leader_that_loses_its_leadership_answers_not_leader_at_once():
    leader, _, _ = cluster_with_records()
    delete(leader, 3)
    leader.replica.handle_leader_and_isr(partition_state(leader=2, leader_epoch=2), 0)
    leader.apply()
    assert deleted(leader).error is ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_follower_is_asked_to_delete_records_and_refuses_as_not_the_leader():
    _, f2, _ = cluster_with_records()
    assert delete(f2, 3).error is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert f2.replica.log_start_offset == 0


def test_followers_take_the_log_start_the_leaders_retention_moved_too():
    leader, f2, _ = cluster_with_records()
    leader.log.delete_records_before(6)  # retention deletes from the log first, then tells the core
    leader.replica.advance_log_start_offset(6)
    assert leader.replica.ready().log_ops == ()  # nothing for the leader's log to do again
    replicate(f2, leader)
    assert f2.replica.log_start_offset == f2.log.log_start_offset == 6


def test_the_follower_fetch_carries_its_log_start_offset():
    leader, f2, _ = cluster_with_records()
    delete(leader, 7)
    replicate(f2, leader)
    f2.apply()
    assert f2.take_fetch().request.log_start_offset == 7


def test_a_follower_whose_log_starts_before_the_leaders_is_answered_without_waiting_for_records():
    leader, f2, _ = cluster_with_records()
    f2.apply()
    fetch = f2.take_fetch()
    assert leader.replica.handle_fetch(fetch.request, 0).quiet  # nothing new: a long poll would hold it
    delete(leader, 4)
    plan = leader.replica.handle_fetch(fetch.request, 0)
    assert not plan.quiet and plan.log_start_offset == 4  # the held fetch answers now, with the new log start


def test_a_follower_told_the_log_start_before_but_still_behind_it_is_told_again():
    """An answer the follower's core did not take (a divergence, a fetch it had given up) told it the log
    start: the session must not leave the partition out of the next answers, or the fetch would be answered
    at once, empty, again and again."""
    leader, f2, _ = cluster_with_records()
    delete(leader, 4)
    f2.apply()
    fetch = f2.take_fetch().request  # still says its log starts at 0
    plan = leader.replica.handle_fetch(fetch, 0)
    told = SessionPartition(PartitionFetch(fetch.fetch_offset, log_start_offset=0))
    told.told(plan)
    assert plan.start_moved and told.worth_answering(plan, has_news=False)


def test_a_consumer_that_leaves_the_log_start_unset_is_held_as_ever():
    leader, _, _ = cluster_with_records()
    delete(leader, 4)
    consumer = FetchRequest(replica_id=-1, fetch_offset=10, max_bytes=1 << 20, log_start_offset=0)  # proto's default
    assert leader.replica.handle_fetch(consumer, 0).quiet


def test_the_last_stable_offset_never_falls_below_a_log_start_moved_into_an_open_transaction():
    config = ReplicaConfig(min_insync_replicas=1, replica_lag_time_ms_max=1_000,
                           transaction_partition_verification_enable=0)
    leader, f2, f3 = cluster_with_records(count=10, config=config)
    opened = replace(produce("txn", acks=1), producer=ProducerAppend(7, 0, 0, 0, transactional=True))
    leader.replica.handle_produce(opened, 0)  # offset 10, a transaction left open
    for index in range(3):
        leader.replica.handle_produce(produce(f"after{index}", acks=1), 0)
    leader.apply()
    for _ in range(2):
        for follower in (f2, f3):
            catch_up(follower, leader)
    assert leader.replica.last_stable_offset == 10
    delete(leader, 12)
    assert leader.replica.last_stable_offset == 12
    assert leader.replica.handle_list_offsets(-1, LATEST_TIMESTAMP, read_committed=True).offset == 12


def test_retention_moving_a_leaders_log_start_wakes_the_fetches_held_on_its_partition():
    log = MemoryLog()
    driver = PartitionDriver(TopicPartition("t", 0), PartitionReplica(1), log, write_epoch_entries=lambda entries: None,
                             wall_clock_ms=lambda: 0, sink=RecordingSink())
    driver.leader_and_isr(partition_state(leader=1, isr=(1,), replicas=(1,)), 0)
    for index in range(4):
        driver.produce(produce(index, acks=1), 0)
    before = driver.changes
    log.delete_records_before(2)  # what retention does to the log, before the driver tells the core
    driver.advance_log_start_offset()
    assert driver.replica.log_start_offset == 2 and driver.changes > before
