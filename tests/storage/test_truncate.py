"""Followers truncating after a leader change; DeleteRecords moving the log start."""

from replog.core.errors import ErrorCode
from replog.protocol import encode_batch

from .conftest import START_MS, batch, offsets_of, small_config


def fill(log, batches: int, records_per_batch: int = 2) -> None:
    for tag in range(batches):
        log.append_as_leader(batch(records_per_batch, tag=tag), leader_epoch=0, now_ms=START_MS)


def test_truncating_removes_later_segments_and_appends_continue_from_the_new_end(open_log, partition_dir):
    log = open_log(small_config(segment_bytes=500))
    fill(log, 20)
    segments_before = len(log.segments)

    assert log.truncate_to(9) is True

    assert log.log_end_offset == 8  # the batch 8-9 straddled offset 9 and went whole
    assert len(log.segments) < segments_before
    assert len(list(partition_dir.glob("*.log"))) == len(log.segments)
    assert offsets_of(log.read(0, 1 << 20).records) == list(range(8))
    assert log.append_as_leader(batch(1), leader_epoch=1, now_ms=START_MS).first_offset == 8


def test_truncating_at_a_segment_base_keeps_that_segment_empty(open_log):
    log = open_log(small_config(segment_bytes=500))
    fill(log, 20)
    base = log.segments[2].base_offset

    log.truncate_to(base)

    assert log.log_end_offset == base
    assert log.segments[-1].base_offset == base and log.segments[-1].size_bytes == 0


def test_truncating_at_or_past_the_end_does_nothing(open_log):
    log = open_log()
    fill(log, 3)
    assert log.truncate_to(6) is False and log.truncate_to(100) is False
    assert log.log_end_offset == 6


def test_truncation_survives_a_restart(open_log):
    log = open_log(small_config(segment_bytes=500))
    fill(log, 20)
    log.truncate_to(11)
    recovery_point = log.recovery_point
    log.close(flush=False)

    reopened = open_log(small_config(segment_bytes=500), recovery_point=recovery_point)

    assert reopened.log_end_offset == 10
    assert offsets_of(reopened.read(0, 1 << 20).records) == list(range(10))


def test_truncating_below_the_log_start_restarts_the_log_there(open_log):
    log = open_log(small_config(segment_bytes=500))
    fill(log, 20)
    log.delete_records_before(30)

    log.truncate_to(25)

    assert (log.log_start_offset, log.log_end_offset, log.size_bytes) == (25, 25, 0)


def test_truncate_fully_and_start_at_empties_the_log(open_log, partition_dir):
    log = open_log(small_config(segment_bytes=500))
    fill(log, 20)

    log.truncate_fully_and_start_at(1000)

    assert (log.log_start_offset, log.log_end_offset, log.recovery_point) == (1000, 1000, 1000)
    assert [p.name for p in partition_dir.glob("*.log")] == ["00000000000000001000.log"]
    assert log.append_as_leader(batch(1), leader_epoch=0, now_ms=START_MS).first_offset == 1000


def test_delete_records_before_moves_the_log_start_and_drops_whole_segments_below_it(open_log):
    log = open_log(small_config(segment_bytes=500))
    fill(log, 20)
    second = log.segments[1]

    assert log.delete_records_before(second.base_offset + 1) is ErrorCode.NONE

    assert log.log_start_offset == second.base_offset + 1
    assert log.segments[0].base_offset == second.base_offset  # still holds offsets at the new start
    assert log.read(second.base_offset, 1000).error is ErrorCode.OFFSET_OUT_OF_RANGE
    assert log.read(second.base_offset + 1, 1000).error is ErrorCode.NONE
    assert log.delete_records_before(log.log_end_offset + 1) is ErrorCode.OFFSET_OUT_OF_RANGE
    assert log.delete_records_before(0) is ErrorCode.NONE and log.log_start_offset == second.base_offset + 1


def test_the_log_start_offset_is_kept_across_a_restart_when_the_broker_checkpoints_it(open_log):
    log = open_log(small_config(segment_bytes=500))
    fill(log, 20)
    log.delete_records_before(3)
    log.close()

    reopened = open_log(small_config(segment_bytes=500), recovery_point=40, log_start_offset=3)

    assert reopened.log_start_offset == 3


def test_a_truncation_that_takes_the_batch_holding_the_log_start_restarts_empty_there(open_log):
    log = open_log()
    log.append_as_leader(batch(4), leader_epoch=0, now_ms=START_MS)
    log.delete_records_before(2)

    log.truncate_to(3)  # the batch 0-3 holds offset 3 and the log start 2: it goes whole

    assert (log.log_start_offset, log.log_end_offset, log.size_bytes) == (2, 2, 0)


def test_an_empty_follower_whose_start_lies_inside_the_leaders_batch_restarts_at_that_batch(open_log):
    log = open_log()
    log.truncate_fully_and_start_at(5)  # the leader's log start, moved by DeleteRecords
    fetched = encode_batch([(b"k", b"v")] * 4, base_offset=3)

    info = log.append_as_follower(fetched)

    assert info.error is ErrorCode.NONE
    assert (log.log_start_offset, log.log_end_offset) == (3, 7)
