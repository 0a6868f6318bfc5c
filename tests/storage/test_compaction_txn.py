"""Compaction of a log with transactions: aborted writes go and never shadow committed ones, committed ones
stay, nothing at or past the last stable offset is touched, and markers stay while a reader needs them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from replog.core.group import records
from replog.core.txn.aborted import AbortedTxn
from replog.core.txn.markers import TxnMarker
from replog.core.txn.read_committed import read_committed
from replog.protocol import encode_batch, iter_batches
from replog.protocol.control import decode_marker, fetched_batch, marker_batch
from replog.storage import PartitionLog

from .conftest import START_MS, keyed_batch, records_of, small_config

DAY_MS = 86_400_000


class TxnLog:
    """A compacted partition log written the way a leader writes it: plain batches, transactional batches,
    markers, and the `.txnindex` entry of each abort."""

    def __init__(self, log) -> None:
        self.log = log
        self.sequences: dict[int, int] = {}
        self.epochs: dict[int, int] = {}
        self.open: dict[int, int] = {}  # producer id -> first offset of its open transaction

    def plain(self, key: bytes, value: bytes | None, timestamp_ms: int = START_MS) -> int:
        return self.log.append_as_leader(keyed_batch([(key, value)], timestamp_ms), 0, START_MS).first_offset

    def transactional(self, producer_id: int, key: bytes, value: bytes | None, timestamp_ms: int = START_MS) -> int:
        sequence = self.sequences.get(producer_id, 0)
        self.sequences[producer_id] = sequence + 1
        data = encode_batch([(key, value)], base_timestamp_ms=timestamp_ms, producer_id=producer_id,
                            producer_epoch=self.epochs.get(producer_id, 0), base_sequence=sequence,
                            transactional=True)
        offset = self.log.append_as_leader(data, 0, START_MS).first_offset
        self.open.setdefault(producer_id, offset)
        return offset

    def end(self, producer_id: int, *, commit: bool, timestamp_ms: int = START_MS) -> int:
        epoch = self.epochs.get(producer_id, 0) + 1
        self.epochs[producer_id] = epoch
        self.sequences[producer_id] = 0
        marker = TxnMarker(producer_id, epoch, 0, commit)
        offset = self.log.append_as_leader(marker_batch(marker, timestamp_ms=timestamp_ms), 0, START_MS).first_offset
        first = self.open.pop(producer_id)
        if not commit:
            self.log.index_aborted([AbortedTxn(producer_id, first, offset, min([offset + 1, *self.open.values()]))])
        return offset

    @property
    def last_stable_offset(self) -> int:
        return min([self.log.log_end_offset, *self.open.values()])

    def compact(self, now_ms: int = START_MS):
        return self.log.compact(now_ms, up_to_offset=self.last_stable_offset)

    def batches(self):
        return list(iter_batches(self.log.read(0, 1 << 24).records))

    def read_committed(self) -> dict[bytes, bytes | None]:
        """Latest value per key as a read_committed consumer reading the whole log sees it."""
        lso = self.last_stable_offset
        aborted = [(entry.producer_id, entry.first_offset) for entry in self.log.aborted_transactions(0, lso)]
        records = read_committed([fetched_batch(b) for b in self.batches()], aborted, lso)
        return {record.key: record.value for record in records}

    def markers(self) -> list[tuple[int, bool, int | None]]:
        """(offset, commit, delete horizon) of each marker in the log."""
        found = []
        for batch in self.batches():
            if batch.is_control:
                found.append((batch.base_offset, decode_marker(batch).commit, batch.delete_horizon_ms))
        return found


def txn_log(open_log, **overrides) -> TxnLog:
    values = {"segment_bytes": 200, "cleanup_policy": "compact", "delete_retention_ms": DAY_MS}
    values.update(overrides)
    return TxnLog(open_log(small_config(**values)))


def roll_past(txns: TxnLog, count: int = 6) -> None:
    """Plain writes of other keys, so that what came before sits in closed segments."""
    for index in range(count):
        txns.plain(b"filler-%d" % index, b"x")


def offset_commit(offset: int) -> tuple[bytes, bytes]:
    """The __consumer_offsets record of group g's committed offset for orders-0, as its coordinator writes it."""
    return records.offset_commit("g", "orders", 0, records.OffsetCommitValue(offset, -1, "", START_MS)).encode()


def test_an_aborted_offset_commit_never_outlives_the_committed_one_it_shadowed(open_log):
    txns = txn_log(open_log)
    key, committed_value = offset_commit(10)
    committed = txns.plain(key, committed_value)
    txns.transactional(5, *offset_commit(20))  # TxnOffsetCommit in a transaction that then aborts
    txns.end(5, commit=False)
    roll_past(txns)
    assert txns.read_committed()[key] == committed_value

    stats = txns.compact()

    assert stats.aborted_records_removed == 1
    assert records.decode(key, txns.read_committed()[key]).value.offset == 10
    kept = [(r.offset, r.value) for r in records_of(txns.log.read(0, 1 << 24).records) if r.key == key]
    assert kept == [(committed, committed_value)]  # no reader, read_committed or not, meets the aborted 20


def test_a_committed_transaction_keeps_its_records_and_its_marker(open_log):
    txns = txn_log(open_log)
    txns.plain(b"k", b"before")
    offset = txns.transactional(6, b"k", b"committed")
    marker = txns.end(6, commit=True)
    roll_past(txns)

    txns.compact()
    txns.compact(START_MS + 2 * DAY_MS)

    assert txns.read_committed()[b"k"] == b"committed"
    kept = [(r.offset, r.value) for r in records_of(txns.log.read(0, 1 << 24).records) if r.key == b"k"]
    assert kept == [(offset, b"committed")]
    assert (marker, True, None) in txns.markers()  # its transaction still has a record: the marker stays as it is


def test_nothing_at_or_past_the_last_stable_offset_is_cleaned(open_log):
    txns = txn_log(open_log)
    txns.plain(b"k", b"old")
    roll_past(txns, 3)
    first = txns.transactional(7, b"other", b"open")  # stays open: the LSO stops here
    txns.plain(b"k", b"new")
    txns.plain(b"k", b"newer")
    roll_past(txns, 6)
    before = txns.log.read(first, 1 << 24).records

    txns.compact()

    assert txns.last_stable_offset == first
    assert txns.log.read(first, 1 << 24).records == before
    # "old" is below the LSO but its successors are not: the cleaner never saw them, so it stays.
    assert b"old" in [r.value for r in records_of(txns.log.read(0, 1 << 24).records)]


def ended_transaction(open_log, *, commit: bool, then_key: bytes) -> tuple[TxnLog, int]:
    """A one-record transaction on key k ended by its marker, then a plain write of `then_key`, then more:
    the log and the marker's offset."""
    txns = txn_log(open_log)
    txns.transactional(8, b"k", b"in-txn")
    marker = txns.end(8, commit=commit)
    txns.plain(then_key, b"after")
    roll_past(txns)
    return txns, marker


def test_an_abort_marker_stays_until_its_batches_are_gone_then_for_delete_retention_ms(open_log):
    txns, marker = ended_transaction(open_log, commit=False, then_key=b"k2")

    txns.compact(START_MS)  # the aborted batch goes; the marker and its index entry stay for readers
    assert txns.markers() == [(marker, False, None)]
    assert len(txns.log.aborted_transactions(0, txns.last_stable_offset)) == 1

    txns.compact(START_MS + 1000)  # no batch left: the marker is stamped with its delete horizon
    assert txns.markers() == [(marker, False, START_MS + 1000 + DAY_MS)]
    assert txns.log.aborted_transactions(0, txns.last_stable_offset) == []

    txns.compact(START_MS + 1000 + DAY_MS - 1)
    assert [m[0] for m in txns.markers()] == [marker]
    stats = txns.compact(START_MS + 1000 + DAY_MS)
    assert stats.markers_removed == 1 and txns.markers() == []
    assert txns.read_committed() == {b"k2": b"after", **{b"filler-%d" % i: b"x" for i in range(6)}}


def test_a_commit_marker_goes_once_every_record_of_its_transaction_is_superseded(open_log):
    txns, marker = ended_transaction(open_log, commit=True, then_key=b"k")

    txns.compact(START_MS)  # the record goes now; the marker saw it this pass, so it stays
    assert txns.markers() == [(marker, True, None)]
    txns.compact(START_MS)
    assert txns.markers() == [(marker, True, START_MS + DAY_MS)]
    txns.compact(START_MS + DAY_MS)
    assert txns.markers() == []
    assert txns.read_committed()[b"k"] == b"after"


def test_a_cleaned_log_with_transactions_reopens_and_reads_the_same(open_log):
    config = small_config(segment_bytes=200, cleanup_policy="compact", delete_retention_ms=DAY_MS,
                          index_interval_bytes=0)
    txns = TxnLog(open_log(config))
    txns.plain(b"a", b"1")
    txns.transactional(3, b"a", b"aborted")
    txns.end(3, commit=False)
    txns.transactional(4, b"b", b"committed")
    txns.end(4, commit=True)
    roll_past(txns)
    txns.compact()
    view = txns.read_committed()
    entries = txns.log.aborted_transactions(0, txns.log.log_end_offset)
    end = txns.log.log_end_offset
    txns.log.close()

    reopened = TxnLog(open_log(config, recovery_point=end))

    assert reopened.read_committed() == view
    assert reopened.log.aborted_transactions(0, end) == entries


# -- the property: a read_committed reader sees the same latest values before and after any cleaning ------------

OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("plain"), st.sampled_from([b"a", b"b", b"c"]), st.sampled_from([b"1", b"2", None])),
        st.tuples(st.just("txn"), st.sampled_from([1, 2]), st.sampled_from([b"a", b"b", b"c"])),
        st.tuples(st.just("end"), st.sampled_from([1, 2]), st.booleans()),
        st.tuples(st.just("compact"), st.integers(0, 2 * DAY_MS)),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(operations=OPERATIONS)
def test_cleaning_never_changes_what_a_read_committed_reader_sees(tmp_path_factory, operations):
    directory = tmp_path_factory.mktemp("txn") / "t-0"
    log = PartitionLog.open(directory, small_config(segment_bytes=150, cleanup_policy="compact",
                                                    delete_retention_ms=DAY_MS), now_ms=START_MS)
    txns = TxnLog(log)
    now_ms = START_MS
    try:
        for operation in operations:
            kind = operation[0]
            if kind == "plain":
                txns.plain(operation[1], operation[2], now_ms)
            elif kind == "txn":
                txns.transactional(operation[1], operation[2], b"from-%d" % operation[1], now_ms)
            elif kind == "end" and operation[1] in txns.open:
                txns.end(operation[1], commit=operation[2], timestamp_ms=now_ms)
            elif kind == "compact":
                before = _live(txns.read_committed())
                lso = txns.last_stable_offset
                unstable = txns.log.read(lso, 1 << 24).records if lso < txns.log.log_end_offset else b""
                now_ms += operation[1]
                txns.compact(now_ms)
                assert _live(txns.read_committed()) == before
                if unstable:
                    assert txns.log.read(lso, 1 << 24).records[:len(unstable)] == unstable
                _assert_markers_close_what_readers_open(txns)
    finally:
        log.close(flush=False)


def _live(view: dict[bytes, bytes | None]) -> dict[bytes, bytes]:
    """Tombstones may go after delete.retention.ms: a deleted key and an absent one read the same."""
    return {key: value for key, value in view.items() if value is not None}


def _assert_markers_close_what_readers_open(txns: TxnLog) -> None:
    """Every aborted transaction a fetch names still has its ABORT marker, or a reader would drop the
    producer's later transactions."""
    markers = {(b.producer_id, b.base_offset) for b in txns.batches() if b.is_control}
    for entry in txns.log.aborted_transactions(0, txns.log.log_end_offset):
        assert (entry.producer_id, entry.last_offset) in markers


def test_marker_batches_keep_their_bytes_but_the_timestamp_when_stamped(open_log):
    txns = txn_log(open_log)
    txns.transactional(2, b"k", b"v", timestamp_ms=START_MS - 5)
    marker = txns.end(2, commit=False, timestamp_ms=START_MS - 5)
    [original] = [b for b in txns.batches() if b.base_offset == marker]
    roll_past(txns)
    txns.compact()
    txns.compact()
    [stamped] = [b for b in txns.batches() if b.base_offset == marker]
    assert stamped.delete_horizon_ms == START_MS + DAY_MS
    assert stamped.max_timestamp == START_MS - 5  # the time index still sees the marker's own time
    assert [r.timestamp for r in stamped.records] == [START_MS - 5]
    assert (stamped.producer_id, stamped.producer_epoch, stamped.records) == (
        original.producer_id, original.producer_epoch, original.records)
