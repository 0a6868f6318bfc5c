"""Idempotent producers on a partition: who wrote what, so that a retried batch is never appended twice.

For each producer id a partition keeps its epoch and the sequence numbers and
offsets of its last five batches (Kafka's ProducerStateManager). A batch from
the leader's producer is checked before it is appended:

    the batch's epoch        its first sequence                         answer
    -----------------------  -----------------------------------------  ------------------------------
    older than known         -                                          INVALID_PRODUCER_EPOCH
    newer (or a new id)      0                                          append
    newer (or a new id)      anything else                              OUT_OF_ORDER_SEQUENCE_NUMBER
    the known one            one of the five cached batches, exactly    the cached batch's offsets (a retry)
    the known one            one past the last cached batch             append
    the known one            anything else                              OUT_OF_ORDER_SEQUENCE_NUMBER

Followers apply the same updates from the batches they fetch (without the
checks: the leader made them), so a new leader deduplicates a retry of a batch
its predecessor appended. Truncation drops the cached batches past the new log
end: a retry of a batch the log lost is appended again. A producer silent for
producer.id.expiration.ms is forgotten.

Sequences are 32-bit and wrap from 2^31-1 back to 0, as Kafka's do.
"""

from collections.abc import Iterable
from dataclasses import dataclass, replace

from .errors import ErrorCode

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
SEQUENCE_MODULUS = 2**31
CACHED_BATCHES_MAX = 5


def next_sequence(sequence: int) -> int:
    return (sequence + 1) % SEQUENCE_MODULUS


def last_sequence(first_sequence: int, record_count: int) -> int:
    return (first_sequence + record_count - 1) % SEQUENCE_MODULUS


@dataclass(frozen=True, slots=True)
class ProducerAppend:
    """An idempotent batch, as its header says."""

    producer_id: int
    producer_epoch: int
    first_sequence: int
    last_sequence: int


@dataclass(frozen=True, slots=True)
class CachedBatch:
    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int


@dataclass(frozen=True, slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int
    batches: tuple[CachedBatch, ...]  # the last five, oldest first
    last_timestamp_ms: int  # of its latest batch (the log's clock)

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else NO_SEQUENCE


@dataclass(frozen=True, slots=True)
class Check:
    """A leader's verdict on an idempotent batch: append it, answer a retry with its offsets, or refuse."""

    error: ErrorCode = ErrorCode.NONE
    message: str = ""
    duplicate_of: CachedBatch | None = None


APPEND = Check()


class ProducerStates:
    def __init__(self, entries: Iterable[ProducerEntry] = ()) -> None:
        self._entries: dict[int, ProducerEntry] = {entry.producer_id: entry for entry in entries}

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> tuple[ProducerEntry, ...]:
        return tuple(self._entries[pid] for pid in sorted(self._entries))

    def get(self, producer_id: int) -> ProducerEntry | None:
        return self._entries.get(producer_id)

    def check(self, append: ProducerAppend) -> Check:
        """The leader's check of a batch before it is appended (the table above)."""
        if append.producer_epoch < 0 or append.first_sequence < 0:
            return Check(ErrorCode.INVALID_RECORD,
                         f"producer {append.producer_id} sent epoch {append.producer_epoch} and sequence "
                         f"{append.first_sequence}; neither may be negative")
        entry = self._entries.get(append.producer_id)
        if entry is not None and append.producer_epoch < entry.epoch:
            return Check(ErrorCode.INVALID_PRODUCER_EPOCH,
                         f"producer {append.producer_id} wrote with epoch {append.producer_epoch}, older than "
                         f"its epoch {entry.epoch} here")
        if entry is None or append.producer_epoch > entry.epoch or not entry.batches:
            if append.first_sequence != 0:
                return Check(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                             f"producer {append.producer_id} at epoch {append.producer_epoch} has no sequence "
                             f"here yet; its first batch must start at 0, not {append.first_sequence}")
            return APPEND
        for cached in entry.batches:
            if (cached.first_sequence, cached.last_sequence) == (append.first_sequence, append.last_sequence):
                return Check(duplicate_of=cached)
        expected = next_sequence(entry.last_sequence)
        if append.first_sequence != expected:
            return Check(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                         f"producer {append.producer_id} sent sequence {append.first_sequence}; "
                         f"the next one here is {expected}")
        return APPEND

    def update(self, append: ProducerAppend, first_offset: int, last_offset: int, timestamp_ms: int) -> None:
        """A batch of the producer's was appended (by the leader, or fetched by a follower)."""
        entry = self._entries.get(append.producer_id)
        cached = CachedBatch(append.first_sequence, append.last_sequence, first_offset, last_offset)
        if entry is None or append.producer_epoch > entry.epoch:
            batches: tuple[CachedBatch, ...] = (cached,)
        else:
            batches = (entry.batches + (cached,))[-CACHED_BATCHES_MAX:]
        epoch = append.producer_epoch if entry is None else max(entry.epoch, append.producer_epoch)
        self._entries[append.producer_id] = ProducerEntry(append.producer_id, epoch, batches, timestamp_ms)

    def truncate(self, offset: int) -> None:
        """The log ends at `offset` now: batches from there on are no longer in it."""
        for producer_id, entry in list(self._entries.items()):
            kept = tuple(b for b in entry.batches if b.last_offset < offset)
            if kept != entry.batches:
                self._entries[producer_id] = replace(entry, batches=kept)

    def clear(self) -> None:
        self._entries.clear()

    def expire(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forget producers whose last batch is older than the expiration; their ids."""
        expired = [pid for pid, entry in self._entries.items() if now_ms - entry.last_timestamp_ms > expiration_ms]
        for producer_id in expired:
            del self._entries[producer_id]
        return expired


def rebuild(snapshot: Iterable[ProducerEntry], appends: Iterable[tuple[ProducerAppend, int, int]],
            now_ms: int) -> tuple[ProducerEntry, ...]:
    """The producers a log holds, from a snapshot and the idempotent batches after it. Every one of
    them counts as seen `now_ms` (its expiration runs from the restart)."""
    states = ProducerStates(replace(entry, last_timestamp_ms=now_ms) for entry in snapshot)
    for append, first_offset, last_offset in appends:
        states.update(append, first_offset, last_offset, now_ms)
    return states.entries()
