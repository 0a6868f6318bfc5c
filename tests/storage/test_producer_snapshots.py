"""Idempotent producers' state across a restart: snapshots at segment rolls and at close, and the
batches after the newest one read back from the log, so that a restarted leader still recognises
a retry."""

from replog.core.errors import ErrorCode
from replog.core.messages import ProduceRequest
from replog.core.partition_driver import PartitionDriver
from replog.core.producer_state import ProducerAppend, ProducerEntry, rebuild
from replog.core.replica import PartitionReplica
from replog.core.topic_partition import TopicPartition
from replog.protocol import encode_batch
from replog.storage import PartitionLog
from replog.storage.producer_snapshots import ProducerSnapshots

from .conftest import START_MS, small_config

PID = 42


class Sink:
    def __init__(self) -> None:
        self.completions = []

    def complete_produce(self, driver, completion):
        self.completions.append(completion)

    def __getattr__(self, name):
        return lambda *args: None


def open_leader(directory, config) -> tuple[PartitionDriver, Sink]:
    """A broker's way of opening a partition: the log, then the core from what the log says."""
    log = PartitionLog.open(directory, config, now_ms=START_MS)
    offset, snapshot = log.producer_snapshot()
    replica = PartitionReplica(1, log_start_offset=log.log_start_offset, log_end_offset=log.log_end_offset,
                               producer_entries=rebuild(snapshot, log.producer_appends(offset), 0))
    sink = Sink()
    driver = PartitionDriver(TopicPartition("t", 0), replica, log, write_epoch_entries=lambda e: None,
                             wall_clock_ms=lambda: START_MS, sink=sink)
    from replog.core.messages import PartitionState
    driver.leader_and_isr(PartitionState(1, replica.leader_epoch + 1, (1,), 0, (1,)), 0)
    return driver, sink


def send(driver: PartitionDriver, sink: Sink, sequence: int, count: int = 4) -> int:
    records = encode_batch([(b"k", b"v" * 60)] * count, producer_id=PID, producer_epoch=0, base_sequence=sequence,
                           base_timestamp_ms=START_MS)
    request = ProduceRequest(f"r{len(sink.completions)}", bytearray(records), count, 1, 1_000, -1,
                             ProducerAppend(PID, 0, sequence, sequence + count - 1))
    driver.produce(request, 0)
    completion = sink.completions[-1]
    assert completion.error == ErrorCode.NONE
    return completion.base_offset


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


def test_a_torn_snapshot_is_passed_over_for_an_older_one(tmp_path):
    snapshots = ProducerSnapshots(tmp_path)
    entry = ProducerEntry(7, 2, (), 0)
    snapshots.write(10, [entry])
    snapshots.write(20, [entry])
    (tmp_path / f"{20:020d}.snapshot").write_text('{"version": 1, "offs')
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


def test_the_log_gives_back_transactional_batches_and_markers_for_a_rebuild(open_log):
    from replog.core.producer_state import ProducerStates
    from replog.core.txn.aborted import AbortedTxn
    from replog.core.txn.markers import TxnMarker
    from replog.protocol.control import marker_batch

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
