"""A follower fetches, truncates by epoch, appends, and ignores what the network garbles."""

from dataclasses import replace

from replog.core.config import ReplicaConfig
from replog.core.epoch_cache import EpochEndOffset
from replog.core.errors import ErrorCode
from replog.core.messages import NO_LEADER, FetchResponse, PartitionState

from .harness import Node, answer, catch_up, partition_state, produce, replicate

CONFIG = ReplicaConfig(replica_fetch_backoff_ms=100, replica_fetch_timeout_ms=1_000)


def pair(isr=(1, 2)) -> tuple[Node, Node]:
    leader, follower = Node(1, CONFIG), Node(2, CONFIG)
    state = PartitionState(1, 1, isr, 0, (1, 2))
    for node in (leader, follower):
        node.replica.handle_leader_and_isr(state, 0)
        node.apply()
    return leader, follower


def write(leader: Node, *request_ids: str, now_ms: int = 0) -> None:
    for request_id in request_ids:
        leader.replica.handle_produce(produce(request_id, acks=1), now_ms)
    leader.apply(now_ms)


def test_follower_copies_the_leaders_batches_and_epochs():
    leader, follower = pair()
    write(leader, "a", "b", "c")
    catch_up(follower, leader)
    assert follower.log.batches == leader.log.batches
    assert follower.epoch_checkpoint == leader.epoch_checkpoint
    assert follower.replica.high_watermark == 3


def test_follower_high_watermark_is_the_leaders_capped_by_its_own_log():
    leader, follower = pair()
    write(leader, "a", "b")
    response = replicate(follower, leader)  # takes both; leader HW still 0
    assert (response.high_watermark, follower.replica.high_watermark) == (0, 0)
    replicate(follower, leader)
    assert follower.replica.high_watermark == 2


def test_answers_to_other_fetches_are_ignored():
    leader, follower = pair()
    write(leader, "a")
    fetch = follower.take_fetch()
    plan = leader.replica.handle_fetch(replace(fetch.request, replica_epoch=1), 0)
    response = answer(leader, plan)
    follower.replica.handle_fetch_response(fetch.fetch_id + 1, response, 0)  # not ours
    follower.replica.handle_fetch_response(fetch.fetch_id, response, 0)
    follower.replica.handle_fetch_response(fetch.fetch_id, response, 0)  # duplicated
    follower.apply()
    assert follower.replica.log_end_offset == 1 and len(follower.log.batches) == 1


def test_an_error_answer_backs_off_before_the_next_fetch():
    _, follower = pair()
    fetch = follower.take_fetch()
    follower.replica.handle_fetch_response(fetch.fetch_id, FetchResponse(ErrorCode.UNKNOWN_LEADER_EPOCH), 10)
    follower.apply(10)
    follower.replica.tick(109)
    assert follower.apply(109).messages == ()
    follower.replica.tick(110)
    assert follower.apply(110).messages[0].request.fetch_offset == 0


def test_an_unanswered_fetch_is_sent_again_after_the_timeout():
    _, follower = pair()
    first = follower.take_fetch()
    follower.replica.tick(999)
    assert follower.apply(999).messages == ()
    follower.replica.tick(1_000)
    follower.apply(1_000)
    second = follower.take_fetch()
    assert second.fetch_id != first.fetch_id and second.request == first.request


def test_follower_without_a_leader_does_not_fetch():
    follower = Node(2, CONFIG)
    follower.replica.handle_leader_and_isr(PartitionState(NO_LEADER, 3, (1,), 0, (1, 2)), 0)
    follower.replica.tick(5_000)
    assert follower.apply(5_000).messages == ()


def test_out_of_range_below_the_leaders_log_start_starts_over_there():
    _, follower = pair()
    fetch = follower.take_fetch()
    answer = FetchResponse(ErrorCode.OFFSET_OUT_OF_RANGE, high_watermark=50, log_start_offset=40)
    follower.replica.handle_fetch_response(fetch.fetch_id, answer, 0)
    ready = follower.apply()
    assert (follower.log.log_start_offset, follower.log.log_end_offset) == (40, 40)
    assert ready.messages[0].request.fetch_offset == 40


def test_diverging_epoch_truncates_the_log_and_the_epoch_cache_then_refetches():
    leader, follower = pair()
    write(leader, "a", "b")
    catch_up(follower, leader)
    # The follower leads epoch 2 for a while and writes two records no one copies.
    follower.replica.handle_leader_and_isr(PartitionState(2, 2, (2,), 1, (1, 2)), 1)
    follower.replica.handle_produce(produce("x", acks=1), 1)
    follower.replica.handle_produce(produce("y", acks=1), 1)
    follower.apply(1)
    # Then broker 1 leads epoch 3 and writes its own record at offset 2.
    state = PartitionState(1, 3, (1, 2), 2, (1, 2))
    leader.replica.handle_leader_and_isr(state, 2)
    write(leader, "c", now_ms=2)
    follower.replica.handle_leader_and_isr(state, 2)
    response = replicate(follower, leader, 2)
    assert response.diverging_epoch == EpochEndOffset(1, 2)
    assert follower.log.log_end_offset == 2
    assert [e.epoch for e in follower.epoch_checkpoint] == [1]
    catch_up(follower, leader, 3)
    assert follower.log.batches == leader.log.batches


def test_kip_101_restarted_follower_keeps_records_its_stale_high_watermark_does_not_cover():
    # The follower holds both records but learned only HW=1 before restarting.
    leader, follower = pair()
    write(leader, "m1")
    catch_up(follower, leader)
    write(leader, "m2")
    replicate(follower, leader)
    assert (follower.replica.log_end_offset, follower.replica.high_watermark) == (2, 1)
    follower.restart()
    follower.replica.handle_leader_and_isr(partition_state(leader=1, isr=(1, 2), replicas=(1, 2)), 0)
    replicate(follower, leader)
    # Truncating to the HW would have dropped m2, committed on the leader; epochs keep it.
    assert follower.log.log_end_offset == 2
    assert follower.log.batches == leader.log.batches
