"""What a driver needs from a partition's log, and an in-memory reference log.

`LogStorage` is the narrow interface the broker's driver uses to carry out the
core's log operations (replog.storage.PartitionLog implements it on disk).
`MemoryLog` is its reference implementation, in the manner of etcd's
MemoryStorage: it backs the core's tests and the simulator, and `crash()` loses
everything written since the last `flush()`, like a page cache at power loss.
"""

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from .errors import ErrorCode
from .invariant import require
from .messages import (
    AppendAsFollower,
    AppendAsLeader,
    FetchPlan,
    FetchResponse,
    LogOp,
    TruncateFullyAndStartAt,
    TruncateTo,
)
from .records import BatchInfo
from .storage import AppendInfo, LogStorage, ReadResult

# Kafka's RecordBatch v2 header: what a batch costs on disk besides its records.
BATCH_OVERHEAD_BYTES = 61


class LogOpFailed(Exception):
    """The log refused an operation: the replica must go offline (stop with KAFKA_STORAGE_ERROR)."""

    def __init__(self, op: LogOp, error: ErrorCode) -> None:
        super().__init__(f"{type(op).__name__} failed with {error.name}")
        self.op = op
        self.error = error


def apply_log_ops(log: LogStorage, ops: Iterable[LogOp], now_ms: int) -> None:
    """Carry out a Ready's log operations, in order, checking the log agrees with the core."""
    for op in ops:
        if isinstance(op, AppendAsLeader):
            outcome = log.append_as_leader(op.records, op.leader_epoch, now_ms)
            if outcome.error != ErrorCode.NONE:
                raise LogOpFailed(op, outcome.error)
            require(
                (outcome.first_offset, outcome.last_offset) == (op.base_offset, op.last_offset),
                "log appended at [%d, %d], the core expected [%d, %d]",
                outcome.first_offset,
                outcome.last_offset,
                op.base_offset,
                op.last_offset,
            )
        elif isinstance(op, AppendAsFollower):
            outcome = log.append_as_follower(op.records)
            if outcome.error != ErrorCode.NONE:
                raise LogOpFailed(op, outcome.error)
        elif isinstance(op, TruncateTo):
            log.truncate_to(op.offset)
        else:
            log.truncate_fully_and_start_at(op.offset)


@dataclass(frozen=True, slots=True)
class MemoryBatch:
    """A batch as MemoryLog keeps it: the records, and the offsets and epoch stamped by the leader."""

    records: tuple[bytes, ...]
    base_offset: int = 0
    leader_epoch: int = -1

    @property
    def last_offset(self) -> int:
        return self.base_offset + len(self.records) - 1

    @property
    def size_bytes(self) -> int:
        return BATCH_OVERHEAD_BYTES + sum(len(record) for record in self.records)

    @property
    def info(self) -> BatchInfo:
        return BatchInfo(self.base_offset, self.last_offset, self.leader_epoch, self.size_bytes)


class MemoryLog:
    def __init__(self, log_start_offset: int = 0) -> None:
        self._batches: list[MemoryBatch] = []
        self._base_offsets: list[int] = []
        self._log_start_offset = log_start_offset
        self._log_end_offset = log_start_offset
        self._recovery_point = log_start_offset

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
        self._log_end_offset = offset
        # Truncations are made durable at once: one lost in a crash would bring
        # back records that diverge from the leader.
        self._recovery_point = min(self._recovery_point, offset)
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self._batches.clear()
        self._base_offsets.clear()
        self._log_start_offset = self._log_end_offset = self._recovery_point = offset

    def flush(self) -> None:
        self._recovery_point = self._log_end_offset

    def fetch_response(self, plan: FetchPlan) -> FetchResponse:
        """What a leader backed by this log answers for `plan` (the driver's read step)."""
        if plan.error != ErrorCode.NONE or plan.diverging_epoch is not None or not plan.has_data:
            return FetchResponse(plan.error, plan.high_watermark, plan.log_start_offset, plan.diverging_epoch)
        read = self.read(plan.read_offset, plan.max_bytes, max_offset=plan.max_offset)
        return FetchResponse(
            read.error,
            plan.high_watermark,
            plan.log_start_offset,
            None,
            tuple(batch.info for batch in read.records),
            read.records,
        )

    def crash(self) -> int:
        """Lose every batch past the recovery point, as after a power loss; return how many."""
        keep = bisect_left(self._base_offsets, self._recovery_point)
        lost = len(self._batches) - keep
        if lost:
            del self._batches[keep:]
            del self._base_offsets[keep:]
            self._log_end_offset = max(self._recovery_point, self._log_start_offset)
        return lost
