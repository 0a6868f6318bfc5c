"""MemoryLog, the reference log: offsets, reads, durable truncation, and crashes."""

import pytest

from replog.core.errors import ErrorCode
from replog.core.invariant import InvariantViolation
from replog.core.log import MemoryBatch, MemoryLog
from replog.core.messages import AppendAsFollower, AppendAsLeader, TruncateTo
from replog.core.partition_driver import LogOpFailed, apply_log_op
from replog.core.producer_state import rebuild_with_completed
from replog.core.txn.aborted import AbortedTxn
from replog.core.txn.markers import TxnMarker


def batch(*records: bytes) -> MemoryBatch:
    return MemoryBatch(records)


def filled(*sizes: int) -> MemoryLog:
    log = MemoryLog()
    for i, size in enumerate(sizes):
        log.append_as_leader([batch(*(b"x%d" % i for _ in range(size)))], leader_epoch=1, now_ms=0)
    return log


def test_leader_appends_get_offsets_and_the_epoch():
    log = MemoryLog()
    info = log.append_as_leader([batch(b"a", b"b"), batch(b"c")], leader_epoch=3, now_ms=0)
    assert (info.error, info.first_offset, info.last_offset) == (ErrorCode.NONE, 0, 2)
    assert [(b.base_offset, b.last_offset, b.leader_epoch) for b in log.batches] == [(0, 1, 3), (2, 2, 3)]


def test_read_returns_whole_batches_up_to_max_offset_and_at_least_one():
    log = filled(2, 2, 2)
    assert [b.base_offset for b in log.read(0, 10_000).records] == [0, 2, 4]
    assert [b.base_offset for b in log.read(2, 10_000, max_offset=4).records] == [2]
    assert [b.base_offset for b in log.read(0, 1).records] == [0]
    assert log.read(7, 100).error == ErrorCode.OFFSET_OUT_OF_RANGE


def test_crash_loses_what_was_not_flushed_and_truncation_is_durable_at_once():
    log = filled(1, 1)
    log.flush()
    log.append_as_leader([batch(b"late")], 1, 0)
    assert log.crash() == 1 and log.log_end_offset == 2
    log.truncate_to(1)
    log.append_as_leader([batch(b"new")], 2, 0)
    log.crash()
    assert log.log_end_offset == 1  # the truncated record did not come back


def test_truncation_inside_a_batch_is_a_bug():
    with pytest.raises(InvariantViolation):
        filled(3).truncate_to(1)


def test_follower_appends_refuse_overlaps():
    log = filled(2)
    assert log.append_as_follower([MemoryBatch((b"y",), base_offset=1, leader_epoch=1)]).error == (
        ErrorCode.OFFSET_OUT_OF_RANGE
    )


def test_applying_a_log_op_checks_the_log_agrees_with_the_core():
    log = filled(1)
    with pytest.raises(LogOpFailed, match="the core expected"):
        apply_log_op(log, AppendAsLeader((batch(b"a"),), 1, base_offset=5, last_offset=5), 0)
    follower_batch = MemoryBatch((b"z",), base_offset=0, leader_epoch=1)
    with pytest.raises(LogOpFailed, match="OFFSET_OUT_OF_RANGE"):
        apply_log_op(log, AppendAsFollower((follower_batch,), (follower_batch.info,)), 0)
    apply_log_op(log, TruncateTo(0), 0)
    assert log.log_end_offset == 0


def test_markers_and_transactional_batches_are_what_recovery_replays():
    log = MemoryLog()
    marker = TxnMarker(producer_id=7, producer_epoch=1, coordinator_epoch=3, commit=False)
    log.append_as_leader([MemoryBatch((b"t",), producer_id=7, producer_epoch=0, base_sequence=0, transactional=True),
                          MemoryBatch((b"abort",), producer_id=7, producer_epoch=1, marker=marker)], 1, 0)
    first, control = (batch.info for batch in log.batches)
    assert (first.transactional, first.control, control.control, control.marker) == (True, False, True, marker)
    assert [(type(item).__name__, start) for item, start, _ in log.producer_appends(0)] == [
        ("ProducerAppend", 0), ("TxnMarker", 1)]
    producers, completed = rebuild_with_completed((), log.producer_appends(0), 0)
    assert [txn.aborted_txn() for txn in completed] == [AbortedTxn(7, 0, 1, 2)]
    assert producers[0].epoch == 1 and not producers[0].in_transaction


def test_a_crash_drops_the_aborted_index_entries_of_the_markers_it_lost():
    log = filled(1)
    log.flush()
    log.append_as_leader([batch(b"marker")], 1, 0)
    log.index_aborted([AbortedTxn(7, 0, 1, 2)])
    assert log.aborted_transactions(0, 2) == [AbortedTxn(7, 0, 1, 2)]
    log.crash()
    assert log.aborted_transactions(0, 2) == []
    log.append_as_leader([batch(b"another marker")], 2, 0)
    log.index_aborted([AbortedTxn(8, 0, 1, 2)])
    assert log.aborted_transactions(0, 2) == [AbortedTxn(8, 0, 1, 2)]


def test_delete_records_before_keeps_the_batch_holding_the_offset_and_refuses_past_the_end():
    log = filled(2, 2, 2)  # batches at 0, 2, 4
    assert log.delete_records_before(3) is ErrorCode.NONE
    assert log.log_start_offset == 3 and [b.base_offset for b in log.batches] == [2, 4]
    assert log.read(2, 100).error == ErrorCode.OFFSET_OUT_OF_RANGE
    assert [b.base_offset for b in log.read(3, 10_000).records] == [2, 4]
    assert log.delete_records_before(1) is ErrorCode.NONE and log.log_start_offset == 3  # never back
    assert log.delete_records_before(7) is ErrorCode.OFFSET_OUT_OF_RANGE and log.log_start_offset == 3
    assert log.delete_records_before(6) is ErrorCode.NONE and log.batches == () and log.log_end_offset == 6
