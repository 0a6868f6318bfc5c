"""Producers on a partition: who wrote what, so that a retried batch is never appended twice, and which
transactions are open, so that read_committed consumers stop below them.

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
end, and the driver then restores the producers as the log below it holds them
(from the newest snapshot at or below the new end and the batches after it, as
Kafka rebuilds its producer state): a retry of a batch the log lost is appended
again, and a producer whose five cached batches all went continues from the
ones before them. A producer silent for
producer.id.expiration.ms is forgotten, unless it has a transaction open here.

Sequences are 32-bit and wrap from 2^31-1 back to 0, as Kafka's do.

Transactions. A producer's first transactional batch on the partition opens its
transaction here, at that batch's offset; a COMMIT or ABORT marker (a control
batch, `TxnMarker`) closes it. The last stable offset (LSO) is the lowest first
offset of the transactions still open, or of those completed by a marker the
high watermark has not passed yet, and never above the high watermark. An
aborted transaction yields an `AbortedTxn` for the segment's `.txnindex`.

The leader's checks for transactions (KIP-890):

    the write                                        answer
    -----------------------------------------------  -------------------------------------------------
    a marker whose epoch is not above the producer's INVALID_PRODUCER_EPOCH (a marker of an ended
                                                     transaction, or a retry of one already committed)
    the same decision again (from the same or a       a retry: answered with the first one's offset once
    newer coordinator), the first not yet committed  the high watermark passes it (as a duplicate batch)
    a marker from an older coordinator epoch         TRANSACTION_COORDINATOR_FENCED
    a non-transactional batch, transaction open      INVALID_TXN_STATE
    a transactional batch opening a transaction      INVALID_TXN_STATE unless the coordinator verified
                                                     the partition is in the producer's transaction
                                                     (always asked of a producer on transaction version
                                                     2, whatever transaction.partition.verification.enable
                                                     says: nobody else adds the partition)
    a transactional batch, an older epoch's          INVALID_TXN_STATE (its marker is still on the way)
    transaction still open

Verification is the driver's input: `needs_verification` says when to ask the
coordinator (AddPartitionsToTxn: verify-only, or, for a producer on transaction
version 2, an add), `verified` records its yes for
the producer's epoch until the batch is appended, a marker arrives or the
entry expires. Every marker bumps the producer's epoch here, since the
coordinator bumps it at every end: a delayed write of an ended transaction
carries an older epoch and is refused.
"""

from collections.abc import Iterable
from dataclasses import dataclass, replace

from .errors import ErrorCode
from .txn.aborted import AbortedTxn
from .txn.markers import TxnMarker

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_OFFSET = -1
SEQUENCE_MODULUS = 2**31
CACHED_BATCHES_MAX = 5


def next_sequence(sequence: int) -> int:
    return (sequence + 1) % SEQUENCE_MODULUS


def last_sequence(first_sequence: int, record_count: int) -> int:
    return (first_sequence + record_count - 1) % SEQUENCE_MODULUS


@dataclass(frozen=True, slots=True)
class ProducerAppend:
    """An idempotent batch, as its header says, and (`leader_add`) whether its producer is on transaction
    version 2, so that the leader adds the partition to the transaction (KIP-890 part 2)."""

    producer_id: int
    producer_epoch: int
    first_sequence: int
    last_sequence: int
    transactional: bool = False
    leader_add: bool = False
    max_timestamp: int = -1  # the header's maxTimestamp as stored (a LogAppendTime topic's: the leader's time)


@dataclass(frozen=True, slots=True)
class CachedBatch:
    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int
    max_timestamp: int = -1  # what a retry of it is answered with on a LogAppendTime topic


@dataclass(frozen=True, slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int
    batches: tuple[CachedBatch, ...]  # the last five, oldest first
    last_timestamp_ms: int  # of its latest batch (the log's clock)
    coordinator_epoch: int = -1  # of the latest marker: an older coordinator's markers are refused
    current_txn_first_offset: int = NO_OFFSET  # where its open transaction here began

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else NO_SEQUENCE

    @property
    def in_transaction(self) -> bool:
        return self.current_txn_first_offset != NO_OFFSET


@dataclass(frozen=True, slots=True)
class Check:
    """A leader's verdict on an idempotent batch: append it, answer a retry with its offsets, or refuse."""

    error: ErrorCode = ErrorCode.NONE
    message: str = ""
    duplicate_of: CachedBatch | None = None


APPEND = Check()


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction a marker ended here."""

    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    aborted: bool
    last_stable_offset: int  # the partition's LSO right after it, as far as open transactions go

    def aborted_txn(self) -> AbortedTxn | None:
        """What the `.txnindex` records of it: aborted transactions only."""
        if not self.aborted:
            return None
        return AbortedTxn(self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset)


@dataclass(frozen=True, slots=True)
class _AppliedMarker:
    """A marker the high watermark has not passed yet: a truncation may still take it back."""

    offset: int
    producer_id: int
    before: ProducerEntry | None  # the producer's entry before the marker
    completed: CompletedTxn | None
    marker: TxnMarker | None = None


# Transactional batches and markers, with their first and last offsets: what `replay` applies.
LogItem = tuple[ProducerAppend | TxnMarker, int, int]


class ProducerStates:
    def __init__(self, entries: Iterable[ProducerEntry] = (), *, verify_transactions: bool = True) -> None:
        """`verify_transactions` is transaction.partition.verification.enable (KIP-890)."""
        self._entries: dict[int, ProducerEntry] = {entry.producer_id: entry for entry in entries}
        self._verify_transactions = verify_transactions
        self._verified: dict[int, tuple[int, int]] = {}  # producer id -> (epoch, when verified)
        self._unstable_markers: list[_AppliedMarker] = []  # in offset order

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> tuple[ProducerEntry, ...]:
        return tuple(self._entries[pid] for pid in sorted(self._entries))

    def get(self, producer_id: int) -> ProducerEntry | None:
        return self._entries.get(producer_id)

    # -- the leader's checks ---------------------------------------------------------------------------

    def check(self, append: ProducerAppend) -> Check:
        """The leader's check of a batch before it is appended (the tables above)."""
        if append.producer_epoch < 0 or append.first_sequence < 0:
            return Check(ErrorCode.INVALID_RECORD,
                         f"producer {append.producer_id} sent epoch {append.producer_epoch} and sequence "
                         f"{append.first_sequence}; neither may be negative")
        entry = self._entries.get(append.producer_id)
        if entry is not None and append.producer_epoch < entry.epoch:
            return Check(ErrorCode.INVALID_PRODUCER_EPOCH,
                         f"producer {append.producer_id} wrote with epoch {append.producer_epoch}, older than "
                         f"its epoch {entry.epoch} here")
        refusal = self._check_transaction(append, entry)
        if refusal is not None:
            return refusal
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

    def _check_transaction(self, append: ProducerAppend, entry: ProducerEntry | None) -> Check | None:
        in_transaction = entry is not None and entry.in_transaction
        if not append.transactional:
            if in_transaction:
                return Check(ErrorCode.INVALID_TXN_STATE,
                             f"producer {append.producer_id} wrote outside a transaction while one is open here")
            return None
        if in_transaction and entry.epoch != append.producer_epoch:
            return Check(ErrorCode.INVALID_TXN_STATE,
                         f"producer {append.producer_id}'s transaction at epoch {entry.epoch} has no marker here "
                         f"yet; epoch {append.producer_epoch} must wait for it")
        if self.needs_verification(append):
            return Check(ErrorCode.INVALID_TXN_STATE,
                         f"the transaction coordinator has not verified that producer {append.producer_id} epoch "
                         f"{append.producer_epoch} added this partition to its transaction")
        return None

    def needs_verification(self, append: ProducerAppend) -> bool:
        """Whether the driver must ask the coordinator before this batch (to verify the partition, or to add it
        for a producer on transaction version 2): a transactional batch that would open the producer's
        transaction here, not yet verified."""
        if not (append.transactional and (self._verify_transactions or append.leader_add)):
            return False
        entry = self._entries.get(append.producer_id)
        if entry is not None and entry.in_transaction and entry.epoch == append.producer_epoch:
            return False
        if entry is not None and append.producer_epoch < entry.epoch:
            return False  # a write of an ended transaction: `check` refuses its old epoch, no need to ask
        verified = self._verified.get(append.producer_id)
        return verified is None or verified[0] != append.producer_epoch

    def verified(self, producer_id: int, producer_epoch: int, now_ms: int) -> None:
        """The coordinator said the partition is in the producer's ongoing transaction at this epoch."""
        self._verified[producer_id] = (producer_epoch, now_ms)

    def check_marker(self, marker: TxnMarker) -> Check:
        """The leader's check of a marker before it is appended (the second table above)."""
        entry = self._entries.get(marker.producer_id)
        if entry is None:
            return APPEND
        if marker.producer_epoch <= entry.epoch:
            pending = next((m for m in reversed(self._unstable_markers) if m.producer_id == marker.producer_id),
                           None)
            if pending is not None and _same_decision(pending.marker, marker):
                # The coordinator (or the next one, after a failover) asks again before the first copy is
                # replicated: answering "there already" now would let it complete a transaction whose
                # marker a leader change may still lose.
                return Check(duplicate_of=CachedBatch(NO_SEQUENCE, NO_SEQUENCE, pending.offset, pending.offset))
            return Check(ErrorCode.INVALID_PRODUCER_EPOCH,
                         f"a marker for producer {marker.producer_id} carries epoch {marker.producer_epoch}, not "
                         f"above its epoch {entry.epoch} here: its transaction has ended already")
        if marker.coordinator_epoch < entry.coordinator_epoch:
            return Check(ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                         f"a marker for producer {marker.producer_id} comes from coordinator epoch "
                         f"{marker.coordinator_epoch}; epoch {entry.coordinator_epoch} wrote here already")
        return APPEND

    # -- what the log holds ----------------------------------------------------------------------------

    def update(self, append: ProducerAppend, first_offset: int, last_offset: int, timestamp_ms: int) -> None:
        """A batch of the producer's was appended (by the leader, or fetched by a follower)."""
        entry = self._entries.get(append.producer_id)
        cached = CachedBatch(append.first_sequence, append.last_sequence, first_offset, last_offset,
                             append.max_timestamp)
        if entry is None:
            entry = ProducerEntry(append.producer_id, append.producer_epoch, (), timestamp_ms)
        if append.producer_epoch > entry.epoch:
            batches: tuple[CachedBatch, ...] = (cached,)
        else:
            batches = (entry.batches + (cached,))[-CACHED_BATCHES_MAX:]
        txn_first_offset = entry.current_txn_first_offset
        if append.transactional and not entry.in_transaction:
            txn_first_offset = first_offset
            self._verified.pop(append.producer_id, None)
        self._entries[append.producer_id] = replace(entry, epoch=max(entry.epoch, append.producer_epoch),
                                                    batches=batches, last_timestamp_ms=timestamp_ms,
                                                    current_txn_first_offset=txn_first_offset)

    def complete(self, marker: TxnMarker, offset: int, timestamp_ms: int) -> CompletedTxn | None:
        """A marker was appended at `offset`: the producer's transaction here ends; the completed transaction
        (None when the producer had none open here, which leaves nothing to index)."""
        before = self._entries.get(marker.producer_id)
        completed = None
        if before is not None and before.in_transaction:
            completed = CompletedTxn(marker.producer_id, before.current_txn_first_offset, offset, not marker.commit,
                                     self._stable_offset_without(marker.producer_id, offset + 1))
        epoch = marker.producer_epoch if before is None else max(before.epoch, marker.producer_epoch)
        batches = before.batches if before is not None and before.epoch == epoch else ()
        self._entries[marker.producer_id] = ProducerEntry(marker.producer_id, epoch, batches, timestamp_ms,
                                                          marker.coordinator_epoch, NO_OFFSET)
        self._verified.pop(marker.producer_id, None)
        self._unstable_markers.append(_AppliedMarker(offset, marker.producer_id, before, completed, marker))
        return completed

    def replay(self, items: Iterable[LogItem], timestamp_ms: int) -> list[CompletedTxn]:
        """Apply the producers' batches and markers of a stretch of log, as a follower or a restart does
        (no checks: the leader made them); the transactions the markers completed."""
        completed = []
        for item, first_offset, last_offset in items:
            if isinstance(item, TxnMarker):
                done = self.complete(item, first_offset, timestamp_ms)
                if done is not None:
                    completed.append(done)
            else:
                self.update(item, first_offset, last_offset, timestamp_ms)
        return completed

    def _stable_offset_without(self, producer_id: int, otherwise: int) -> int:
        return min((e.current_txn_first_offset for e in self._entries.values()
                    if e.in_transaction and e.producer_id != producer_id), default=otherwise)

    # -- the last stable offset ------------------------------------------------------------------------

    def last_stable_offset(self, high_watermark: int) -> int:
        """Below it every transaction has completed, and its marker is below the high watermark."""
        first_offsets = [e.current_txn_first_offset for e in self._entries.values() if e.in_transaction]
        first_offsets += [m.completed.first_offset for m in self._unstable_markers
                          if m.completed is not None and m.offset >= high_watermark]
        return min([high_watermark, *first_offsets])

    def forget_stable(self, high_watermark: int) -> None:
        """The high watermark moved: markers below it are final and no truncation takes them back."""
        self._unstable_markers = [m for m in self._unstable_markers if m.offset >= high_watermark]

    def open_transactions(self) -> tuple[tuple[int, int], ...]:
        """(producer id, first offset) of each transaction open here, oldest first."""
        return tuple(sorted(((e.producer_id, e.current_txn_first_offset) for e in self._entries.values()
                             if e.in_transaction), key=lambda t: (t[1], t[0])))

    # -- truncation and expiry -------------------------------------------------------------------------

    def truncate(self, offset: int) -> None:
        """The log ends at `offset` now: batches and markers from there on are no longer in it. Markers not
        yet below the high watermark are taken back exactly (their transactions are open again). The rest
        can only be cut: the batches older than the five cached, and the epoch they carry once the five are
        gone, are in the log alone, so the driver follows with `restore` (the state rebuilt from the log)."""
        while self._unstable_markers and self._unstable_markers[-1].offset >= offset:
            undone = self._unstable_markers.pop()
            if undone.before is None:
                self._entries.pop(undone.producer_id, None)
            else:
                self._entries[undone.producer_id] = undone.before
        for producer_id, entry in list(self._entries.items()):
            kept = tuple(b for b in entry.batches if b.last_offset < offset)
            txn_first_offset = entry.current_txn_first_offset if entry.current_txn_first_offset < offset else NO_OFFSET
            if (kept, txn_first_offset) != (entry.batches, entry.current_txn_first_offset):
                self._entries[producer_id] = replace(entry, batches=kept, current_txn_first_offset=txn_first_offset)

    def restore(self, entries: Iterable[ProducerEntry]) -> None:
        """The producers as the log below the new log end holds them, rebuilt after a truncation (Kafka
        reloads its producer state from the newest snapshot at or below the truncation and replays the log
        after it): a producer whose five cached batches all went gets back the ones before them, and the
        epoch and open transaction they carry. Markers still unstable stay (they are in the log below the
        new end: the LSO waits for them); a producer known here keeps its last timestamp (a truncation does
        not restart its expiry)."""
        known = self._entries
        self._entries = {}
        for entry in entries:
            before = known.get(entry.producer_id)
            if before is not None:
                entry = replace(entry, last_timestamp_ms=before.last_timestamp_ms)
            self._entries[entry.producer_id] = entry

    def clear(self) -> None:
        self._entries.clear()
        self._verified.clear()
        self._unstable_markers.clear()

    def expire(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forget producers whose last batch is older than the expiration and that have no transaction open
        here (their open transaction holds the LSO until its marker comes); their ids."""
        expired = [pid for pid, entry in self._entries.items()
                   if now_ms - entry.last_timestamp_ms > expiration_ms and not entry.in_transaction]
        for producer_id in expired:
            del self._entries[producer_id]
        self._verified = {pid: v for pid, v in self._verified.items() if now_ms - v[1] <= expiration_ms}
        return expired


def _same_decision(written: TxnMarker | None, asked: TxnMarker) -> bool:
    """Whether `asked` carries the decision of the marker written (a retry, maybe by a newer coordinator)."""
    return (written is not None and (written.producer_epoch, written.commit) == (asked.producer_epoch, asked.commit)
            and asked.coordinator_epoch >= written.coordinator_epoch)


def rebuild(snapshot: Iterable[ProducerEntry], appends: Iterable[LogItem], now_ms: int) -> tuple[ProducerEntry, ...]:
    """The producers a log holds, from a snapshot and the idempotent batches and markers after it. Every one
    of them counts as seen `now_ms` (its expiration runs from the restart)."""
    return rebuild_with_completed(snapshot, appends, now_ms)[0]


def rebuild_with_completed(snapshot: Iterable[ProducerEntry], appends: Iterable[LogItem],
                           now_ms: int) -> tuple[tuple[ProducerEntry, ...], list[CompletedTxn]]:
    """`rebuild`, and the transactions the replayed markers completed (recovery indexes the aborted ones
    again, in case a crash lost their .txnindex entries)."""
    states = ProducerStates(replace(entry, last_timestamp_ms=now_ms) for entry in snapshot)
    completed = states.replay(appends, now_ms)
    return states.entries(), completed
