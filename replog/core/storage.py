"""The partition log as the core's driver sees it: the interface, and what its calls answer.

`replog.storage.PartitionLog` implements it on disk and `replog.core.log.MemoryLog`
in memory (the reference, in the manner of etcd's MemoryStorage), so that the
broker and the simulator run one driver over either.
"""

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .errors import ErrorCode
from .producer_state import LogItem, ProducerEntry
from .txn.aborted import AbortedTxn


@dataclass(frozen=True, slots=True)
class AppendInfo:
    """What an append did. On error nothing was appended and the offsets are -1."""

    error: ErrorCode
    reason: str = ""
    first_offset: int = -1
    last_offset: int = -1
    max_timestamp: int = -1  # ms; the largest maxTimestamp of the appended batches
    records_count: int = 0
    size_bytes: int = 0
    # (leader epoch, first offset) wherever the epoch changes among the appended
    # batches, starting with the first batch: what the leader epoch cache takes.
    epoch_starts: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class ReadResult:
    error: ErrorCode
    records: Any  # whole batches (bytes on disk); the first one holds the fetch offset
    log_start_offset: int
    log_end_offset: int


class LogStorage(Protocol):
    """A partition's log as the driver sees it. Offsets are Kafka's; ends are exclusive.

    The core never calls these: it emits AppendAsLeader, AppendAsFollower,
    TruncateTo, TruncateFullyAndStartAt and DeleteRecordsBefore, and the driver applies them here in
    order. A failed append or truncation means the core's view of the log is
    wrong: the driver takes the replica offline (PartitionReplica.stop with
    KAFKA_STORAGE_ERROR), as Kafka does when a log directory fails.
    """

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def recovery_point(self) -> int:
        """Everything below this offset survives a crash."""
        ...

    def append_as_leader(self, batches: Any, leader_epoch: int, now_ms: int) -> AppendInfo:
        """Give the batches offsets from the log end offset and `leader_epoch`, then append."""
        ...

    def append_as_follower(self, batches: Any, *, now_ms: int | None = None) -> AppendInfo:
        """Append batches fetched from the leader, keeping their offsets and epochs."""
        ...

    def read(self, fetch_offset: int, max_bytes: int, *, max_offset: int | None = None) -> ReadResult:
        """Whole batches from the one holding `fetch_offset`; none starting at or after
        `max_offset`; at least one batch even past `max_bytes`, so a fetch makes progress."""
        ...

    def truncate_to(self, offset: int) -> bool:
        """Remove every batch at or after `offset`, durably; True if anything was removed."""
        ...

    def truncate_fully_and_start_at(self, offset: int) -> None: ...

    def delete_records_before(self, offset: int) -> ErrorCode:
        """Start the log at `offset` (no earlier than it starts now), dropping what lies wholly before it;
        OFFSET_OUT_OF_RANGE past the log end."""
        ...

    def flush(self) -> None: ...

    def maybe_flush(self, now_ms: int) -> bool:
        """Flush when records have waited flush.ms (called on the driver's ticks)."""
        ...

    @property
    def active_segment_base_offset(self) -> int:
        """Where the segment being written starts: the driver snapshots producers when it moves."""
        ...

    def producer_snapshot(self) -> tuple[int, tuple[ProducerEntry, ...]]:
        """The newest snapshot of the idempotent producers at or below the log end: (offset, entries)."""
        ...

    def producer_appends(self, from_offset: int) -> Iterator[LogItem]:
        """The producers' batches and transaction markers from `from_offset` to the log end: (the producer's
        part or the marker, first offset, last offset)."""
        ...

    def write_producer_snapshot(self, offset: int, entries: Sequence[ProducerEntry]) -> None: ...

    def index_aborted(self, aborted: Sequence[AbortedTxn]) -> None:
        """Transactions aborted by markers the log holds, for the segments holding their markers (an
        entry the index has already is skipped: recovery indexes the markers it replays again)."""
        ...

    def aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [fetch_offset, upper_bound_offset): a read_committed
        fetch's list."""
        ...
