"""Idempotent producers' state across a restart: snapshots at segment rolls and at close, and the
batches after the newest one read back from the log, so that a restarted leader still recognises
a retry."""

import pytest

from replog.core.epoch_cache import EpochEndOffset
from replog.core.errors import ErrorCode
from replog.core.messages import FetchResponse, PartitionState, ProduceRequest
from replog.core.partition_driver import PartitionDriver, load_producers
from replog.core.producer_state import CACHED_BATCHES_MAX, CachedBatch, ProducerAppend, ProducerEntry
from replog.core.replica import PartitionReplica
from replog.core.topic_partition import TopicPartition
from replog.core.txn.markers import TxnMarker
from replog.protocol import encode_batch
from replog.protocol.control import marker_batch
from replog.storage import PartitionLog
from replog.storage.producer_snapshots import ProducerSnapshots
from tests.core.harness import RecordingSink

from .conftest import START_MS, small_config

PID = 42


def open_leader(directory, config) -> tuple[PartitionDriver, RecordingSink]:
    """A broker's way of opening a partition: the log, then the core from what the log says."""
    log = PartitionLog.open(directory, config, now_ms=START_MS)
    replica = PartitionReplica(1, log_start_offset=log.log_start_offset, log_end_offset=log.log_end_offset,
                               producer_entries=load_producers(log, 0))
    sink = RecordingSink()
    driver = PartitionDriver(TopicPartition("t", 0), replica, log, write_epoch_entries=lambda e: None,
                             wall_clock_ms=lambda: START_MS, sink=sink)
    driver.leader_and_isr(PartitionState(1, replica.leader_epoch + 1, (1,), 0, (1,)), 0)
    return driver, sink


def send(driver: PartitionDriver, sink: RecordingSink, sequence: int, count: int = 4, *, producer_id: int = PID,
         transactional: bool = False) -> int:
    records = encode_batch([(b"k", b"v" * 60)] * count, producer_id=producer_id, producer_epoch=0,
                           base_sequence=sequence, transactional=transactional, base_timestamp_ms=START_MS)
    append = ProducerAppend(producer_id, 0, sequence, sequence + count - 1, transactional)
    if driver.replica.needs_verification(append):
        driver.replica.verified(append, 0)  # the coordinator's yes (KIP-890)
    request = ProduceRequest(f"r{len(sink.completions)}", bytearray(records), count, 1, 1_000, -1, append)
    driver.produce(request, 0)
    completion = sink.completions[-1]
    assert completion.error == ErrorCode.NONE, completion
    return completion.base_offset


def test_a_follower_truncated_below_every_cached_batch_rebuilds_the_producer_from_snapshot_and_log(partition_dir):
    """The follower's truncation takes the producer's last five batches, all it keeps: the producer's state
    comes back from the newest snapshot below the new log end and the batches after it, so that as leader the
    replica takes the producer's next sequence and still recognises retries of what the log kept."""
    config = small_config(segment_bytes=2048)
    driver, sink = open_leader(partition_dir, config)
    epoch = driver.replica.leader_epoch
    for sequence in range(0, 80, 4):
        send(driver, sink, sequence)  # offsets 0..79, in batches of 4
    kept = 80 - 4 * CACHED_BATCHES_MAX
    snapshots = [int(path.stem) for path in partition_dir.glob("*.snapshot")]
    assert any(0 < offset < kept for offset in snapshots), f"no snapshot to start the rebuild from: {snapshots}"
    # Another broker leads the next epoch, and its log agrees with ours only below `kept`.
    driver.leader_and_isr(PartitionState(2, epoch + 1, (1, 2), 1, (1, 2)), 0)
    fetch = sink.fetches.pop()
    driver.fetch_response(fetch.fetch_id, FetchResponse(ErrorCode.NONE, kept, 0, EpochEndOffset(epoch, kept)), 0)
    assert driver.log.log_end_offset == kept
    # That broker dies before anything more is written; we lead again.
    driver.leader_and_isr(PartitionState(1, epoch + 2, (1,), 2, (1, 2)), 0)
    assert send(driver, sink, kept - 4) == kept - 4, "a retry of a batch the log kept gets its first offset"
    assert send(driver, sink, kept) == kept, "the producer's next sequence is taken"
    driver.snapshot_producers()
    driver.log.close()
    reopened, _ = open_leader(partition_dir, config)
    (entry,) = reopened.replica.producers
    assert [b.first_offset for b in entry.batches] == list(range(kept - 16, kept + 1, 4)), "and its snapshot"
    reopened.log.close()


def test_a_truncation_keeps_open_transactions_the_lso_and_the_aborted_index_as_the_log_holds_them(partition_dir):
    """Producer 7's aborted transaction stays indexed once; producer 42's transaction, whose five cached batches
    all went, stays open from its first offset and continues with the sequence after those the log kept."""
    config = small_config(segment_bytes=2048)
    driver, sink = open_leader(partition_dir, config)
    epoch = driver.replica.leader_epoch
    send(driver, sink, 0, producer_id=7, transactional=True)  # 0..3
    marker = TxnMarker(7, 1, 0, commit=False)
    driver.produce(ProduceRequest("abort", bytearray(marker_batch(marker, timestamp_ms=START_MS)), 1, 1, 1_000,
                                  marker=marker), 0)  # 4
    for sequence in range(0, 32, 4):
        send(driver, sink, sequence, transactional=True)  # 5..36
    aborted = driver.log.aborted_transactions(0, driver.log.log_end_offset)
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in aborted] == [(7, 0, 4)]
    driver.leader_and_isr(PartitionState(2, epoch + 1, (1, 2), 1, (1, 2)), 0)
    fetch = sink.fetches.pop()
    driver.fetch_response(fetch.fetch_id, FetchResponse(ErrorCode.NONE, 17, 0, EpochEndOffset(epoch, 17)), 0)
    assert driver.replica.open_transactions == ((PID, 5),) and driver.replica.last_stable_offset == 5
    assert driver.log.aborted_transactions(0, driver.log.log_end_offset) == aborted
    driver.leader_and_isr(PartitionState(1, epoch + 2, (1,), 2, (1, 2)), 0)
    assert send(driver, sink, 12, transactional=True) == 17
    driver.log.close()


def test_a_retry_is_recognised_after_a_clean_restart_and_after_a_crash(partition_dir):
    config = small_config(segment_bytes=2048)
    driver, sink = open_leader(partition_dir, config)
    offsets = [send(driver, sink, sequence) for sequence in range(0, 80, 4)]
    assert len(list(partition_dir.glob("*.snapshot"))) >= 1, "segments rolled, snapshots were written"
    # A crash: no snapshot at close; the newest snapshot and the batches after it serve.
    driver.log.close(flush=True)
    driver, sink = open_leader(partition_dir, config)
    assert send(driver, sink, 76) == offsets[-1], "the last batch's retry gets its first offset"
    assert driver.log.log_end_offset == offsets[-1] + 4, "and is not appended again"
    assert send(driver, sink, 80) == offsets[-1] + 4
    # A clean close snapshots at the log end: nothing is read back.
    driver.snapshot_producers()
    driver.log.close()
    reopened = PartitionLog.open(partition_dir, config, now_ms=START_MS)
    offset, snapshot = reopened.producer_snapshot()
    assert offset == reopened.log_end_offset and snapshot[0].batches[-1].first_sequence == 80
    reopened.close()


def test_a_truncation_deletes_the_snapshots_of_the_longer_log(partition_dir):
    config = small_config(segment_bytes=2048)
    driver, sink = open_leader(partition_dir, config)
    for sequence in range(0, 60, 4):
        send(driver, sink, sequence)
    driver.snapshot_producers()
    snapshot_offset = driver.log.log_end_offset
    driver.log.truncate_to(snapshot_offset - 8)
    assert driver.log.producer_snapshot()[0] < snapshot_offset
    driver.log.close()


@pytest.mark.parametrize("content", [
    '{"version": 1, "offs',  # torn
    '{"version": 2, "offset": 20, "producers": [1]}',  # foreign shapes
    '{"version": 2, "offset": 20, "producers": 5}',
    '[1, 2]',
    '{"version": 99, "offset": 20, "producers": []}',
])
def test_a_torn_or_foreign_snapshot_is_passed_over_for_an_older_one(tmp_path, content):
    snapshots = ProducerSnapshots(tmp_path)
    entry = ProducerEntry(7, 2, (), 0)
    snapshots.write(10, [entry])
    snapshots.write(20, [entry])
    (tmp_path / f"{20:020d}.snapshot").write_text(content)
    assert snapshots.latest(100) == (10, (ProducerEntry(7, 2, (), 0),))
    assert snapshots.latest(5) is None


def test_a_snapshot_keeps_each_producers_open_transaction_and_coordinator_epoch(tmp_path):
    snapshots = ProducerSnapshots(tmp_path)
    entry = ProducerEntry(7, 2, (), 0, coordinator_epoch=4, current_txn_first_offset=33)
    snapshots.write(40, [entry])
    assert snapshots.latest(40) == (40, (entry,))


def test_a_version_1_snapshot_reads_as_producers_without_transactions(tmp_path):
    (tmp_path / f"{10:020d}.snapshot").write_text(
        '{"version": 1, "offset": 10, "producers": [{"producer_id": 7, "epoch": 2, "batches": [[0, 3, 5, 8]]}]}')
    (entry,) = ProducerSnapshots(tmp_path).latest(10)[1]
    assert (entry.epoch, entry.batches[0].last_offset, entry.in_transaction, entry.coordinator_epoch) == (2, 8, False,
                                                                                                       -1)


def test_each_batchs_max_timestamp_is_kept_and_a_version_2_batch_reads_without_one(tmp_path):
    snapshots = ProducerSnapshots(tmp_path)
    entry = ProducerEntry(7, 2, (CachedBatch(0, 3, 5, 8, 1_700_000_000_000),), 0)
    snapshots.write(9, [entry])
    assert snapshots.latest(9) == (9, (entry,))
    (tmp_path / f"{10:020d}.snapshot").write_text(
        '{"version": 2, "offset": 10, "producers": [{"producer_id": 7, "epoch": 2, "batches": [[0, 3, 5, 8]]}]}')
    assert ProducerSnapshots(tmp_path).latest(10)[1][0].batches == (CachedBatch(0, 3, 5, 8, -1),)


def test_the_log_gives_back_transactional_batches_and_markers_for_a_rebuild(open_log):
    from replog.core.producer_state import ProducerStates
    from replog.core.txn.aborted import AbortedTxn

    log = open_log()
    log.append_as_leader(encode_batch([(b"k", b"v")] * 3, producer_id=PID, producer_epoch=0, base_sequence=0,
                                      transactional=True, base_timestamp_ms=START_MS), 0, START_MS)
    log.append_as_leader(marker_batch(TxnMarker(PID, 1, 6, commit=False), timestamp_ms=START_MS), 0, START_MS)
    log.append_as_leader(encode_batch([(b"k", b"v")], producer_id=PID, producer_epoch=1, base_sequence=0,
                                      transactional=True, base_timestamp_ms=START_MS), 0, START_MS)
    items = list(log.producer_appends(0))
    assert [type(item).__name__ for item, _, _ in items] == ["ProducerAppend", "TxnMarker", "ProducerAppend"]
    assert items[0][0].transactional and items[1] == (TxnMarker(PID, 1, 6, commit=False), 3, 3)
    states = ProducerStates()
    assert [c.aborted_txn() for c in states.replay(items, 0)] == [AbortedTxn(PID, 0, 3, 4)]
    assert states.open_transactions() == ((PID, 4),)
