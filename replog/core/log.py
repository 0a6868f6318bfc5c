"""The in-memory reference log: the core's `LogStorage` (replog.core.storage) without a disk.

In the manner of etcd's MemoryStorage: it backs the core's tests and the
simulator, which run the same `PartitionDriver` over it as the broker runs over
`replog.storage.PartitionLog`. `crash()` loses everything written since the
last flush, like a page cache at power loss; `flush_interval_ms` plays the part
of flush.ms (0: every append is flushed, as flush.messages=1 does).
"""

from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from .errors import ErrorCode
from .invariant import require
from .messages import FetchPlan, FetchResponse
from .producer_state import LogItem, ProducerEntry
from .records import BatchInfo
from .storage import AppendInfo, ReadResult
from .txn.aborted import AbortedTxn, collect_aborted
from .txn.markers import TxnMarker

# Kafka's RecordBatch v2 header: what a batch costs on disk besides its records.
BATCH_OVERHEAD_BYTES = 61


@dataclass(frozen=True, slots=True)
class MemoryBatch:
    """A batch as MemoryLog keeps it: the records, and the offsets and epoch stamped by the leader."""

    records: tuple[bytes, ...]
    base_offset: int = 0
    leader_epoch: int = -1
    # An idempotent producer's id, epoch and first sequence (-1 when none wrote it).
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    transactional: bool = False
    # A control batch: the COMMIT or ABORT marker it carries (its one record is opaque here).
    marker: TxnMarker | None = None
    max_timestamp: int = -1

    @property
    def last_offset(self) -> int:
        return self.base_offset + len(self.records) - 1

    @property
    def size_bytes(self) -> int:
        return BATCH_OVERHEAD_BYTES + sum(len(record) for record in self.records)

    @property
    def info(self) -> BatchInfo:
        control = self.marker is not None
        return BatchInfo(self.base_offset, self.last_offset, self.leader_epoch, self.size_bytes, self.producer_id,
                         self.producer_epoch, self.base_sequence, self.transactional or control, control,
                         self.marker, self.max_timestamp)


class MemoryLog:
    def __init__(self, log_start_offset: int = 0, *, flush_interval_ms: int | None = None) -> None:
        self._batches: list[MemoryBatch] = []
        self._aborted: list[AbortedTxn] = []  # the .txnindex of its one segment
        self._base_offsets: list[int] = []
        self._log_start_offset = log_start_offset
        self._log_end_offset = log_start_offset
        self._recovery_point = log_start_offset
        self.flush_interval_ms = flush_interval_ms  # None: only an explicit flush() makes records durable
        self._last_flush_ms = 0

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    @property
    def recovery_point(self) -> int:
        """Everything below this offset survives a crash."""
        return self._recovery_point

    @property
    def batches(self) -> tuple[MemoryBatch, ...]:
        return tuple(self._batches)

    def batches_between(self, start_offset: int, end_offset: int) -> list[MemoryBatch]:
        """The batches whose base offset lies in [start_offset, end_offset)."""
        first = bisect_left(self._base_offsets, start_offset)
        last = bisect_left(self._base_offsets, end_offset)
        return self._batches[first:last]

    def batch_at(self, base_offset: int) -> MemoryBatch | None:
        i = bisect_left(self._base_offsets, base_offset)
        if i < len(self._base_offsets) and self._base_offsets[i] == base_offset:
            return self._batches[i]
        return None

    def append_as_leader(self, batches: Sequence[MemoryBatch], leader_epoch: int, now_ms: int) -> AppendInfo:
        first_offset = self._log_end_offset
        for batch in batches:
            if not batch.records:
                return AppendInfo(ErrorCode.CORRUPT_MESSAGE, "a batch without records")
        for batch in batches:
            self._append(replace(batch, base_offset=self._log_end_offset, leader_epoch=leader_epoch))
        return AppendInfo(ErrorCode.NONE, first_offset=first_offset, last_offset=self._log_end_offset - 1)

    def append_as_follower(self, batches: Sequence[MemoryBatch], *, now_ms: int | None = None) -> AppendInfo:
        if not batches:
            return AppendInfo(ErrorCode.NONE)
        expected = self._log_end_offset
        for batch in batches:
            if batch.base_offset < expected or not batch.records:
                return AppendInfo(ErrorCode.OFFSET_OUT_OF_RANGE, "fetched batches do not follow the log end offset")
            expected = batch.last_offset + 1
        for batch in batches:
            self._append(batch)
        return AppendInfo(ErrorCode.NONE, first_offset=batches[0].base_offset, last_offset=batches[-1].last_offset)

    def _append(self, batch: MemoryBatch) -> None:
        self._batches.append(batch)
        self._base_offsets.append(batch.base_offset)
        self._log_end_offset = batch.last_offset + 1
        if self.flush_interval_ms == 0:
            self.flush()

    def read(self, fetch_offset: int, max_bytes: int, *, max_offset: int | None = None) -> ReadResult:
        if not self._log_start_offset <= fetch_offset <= self._log_end_offset:
            return ReadResult(ErrorCode.OFFSET_OUT_OF_RANGE, (), self._log_start_offset, self._log_end_offset)
        end_offset = self._log_end_offset if max_offset is None else max_offset
        first = max(bisect_right(self._base_offsets, fetch_offset) - 1, 0)
        picked: list[MemoryBatch] = []
        remaining_bytes = max_bytes
        for batch in self._batches[first:]:
            if batch.base_offset >= end_offset or (picked and batch.size_bytes > remaining_bytes):
                break
            if batch.last_offset < fetch_offset:
                continue
            picked.append(batch)
            remaining_bytes -= batch.size_bytes
        return ReadResult(ErrorCode.NONE, tuple(picked), self._log_start_offset, self._log_end_offset)

    def truncate_to(self, offset: int) -> bool:
        if offset >= self._log_end_offset:
            return False
        if offset <= self._log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        keep = bisect_left(self._base_offsets, offset)
        require(
            keep < len(self._base_offsets) and self._base_offsets[keep] == offset,
            "truncation at offset %d falls inside a batch",
            offset,
        )
        del self._batches[keep:]
        del self._base_offsets[keep:]
        self._aborted = [entry for entry in self._aborted if entry.last_offset < offset]
        self._log_end_offset = offset
        # Truncations are made durable at once: one lost in a crash would bring
        # back records that diverge from the leader.
        self._recovery_point = min(self._recovery_point, offset)
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self._batches.clear()
        self._aborted.clear()
        self._base_offsets.clear()
        self._log_start_offset = self._log_end_offset = self._recovery_point = offset

    def delete_records_before(self, offset: int) -> ErrorCode:
        if offset > self._log_end_offset:
            return ErrorCode.OFFSET_OUT_OF_RANGE
        if offset <= self._log_start_offset:
            return ErrorCode.NONE
        gone = 0  # the batches wholly before `offset`; the one holding it stays
        while gone < len(self._batches) and self._batches[gone].last_offset < offset:
            gone += 1
        del self._batches[:gone]
        del self._base_offsets[:gone]
        self._log_start_offset = offset
        self._recovery_point = max(self._recovery_point, offset)
        return ErrorCode.NONE

    def flush(self) -> None:
        self._recovery_point = self._log_end_offset

    @property
    def active_segment_base_offset(self) -> int:
        return self._log_start_offset  # one segment, never rolled: producer state is rebuilt from the batches

    def producer_snapshot(self) -> tuple[int, tuple[ProducerEntry, ...]]:
        return self._log_start_offset, ()

    def producer_appends(self, from_offset: int) -> Iterator[LogItem]:
        for batch in self.batches_between(from_offset, self._log_end_offset):
            item = batch.marker or batch.info.producer_append
            if item is not None:
                yield item, batch.base_offset, batch.last_offset

    def write_producer_snapshot(self, offset: int, entries: Sequence[ProducerEntry]) -> None:
        pass

    def index_aborted(self, aborted: Sequence[AbortedTxn]) -> None:
        for entry in aborted:
            if not self._aborted or entry.last_offset > self._aborted[-1].last_offset:
                self._aborted.append(entry)

    def aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        return collect_aborted(self._aborted, fetch_offset, upper_bound_offset)[0]

    def maybe_flush(self, now_ms: int) -> bool:
        if not self.flush_interval_ms or now_ms - self._last_flush_ms < self.flush_interval_ms:
            return False
        self.flush()
        self._last_flush_ms = now_ms
        return True

    def crash(self) -> int:
        """Lose every batch past the recovery point, as after a power loss; return how many."""
        keep = bisect_left(self._base_offsets, self._recovery_point)
        lost = len(self._batches) - keep
        if lost:
            del self._batches[keep:]
            del self._base_offsets[keep:]
            self._log_end_offset = max(self._recovery_point, self._log_start_offset)
            # The index entries of the lost markers go with them (recovery indexes the kept ones again).
            self._aborted = [entry for entry in self._aborted if entry.last_offset < self._log_end_offset]
        return lost


def fetch_response(plan: FetchPlan, read: ReadResult | None) -> FetchResponse:
    """A leader's answer as a follower's core takes it, when the leader's log is a MemoryLog:
    what replog.rpc.broker_convert makes of the wire for the broker's PartitionLog."""
    if read is None:
        return FetchResponse(plan.error, plan.high_watermark, plan.log_start_offset, plan.diverging_epoch)
    return FetchResponse(
        read.error,
        plan.high_watermark,
        plan.log_start_offset,
        None,
        tuple(batch.info for batch in read.records),
        read.records,
    )
