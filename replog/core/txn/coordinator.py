"""The transaction coordinator of one `__transaction_state` partition, as a state machine without I/O.

Its driver (the broker that leads the partition) calls:

    replay(record)            for each record of the partition while it loads, then
    loaded(now_ms)            once: requests are answered from then on (COORDINATOR_LOAD_IN_PROGRESS before),
                              and the markers of transactions that were ending are sent again
    init_producer_id, add_partitions, add_offsets, end_txn      for the requests
    written(records, error)   for each batch of records it wrote, once the partition answered
    marker_written            for each partition's answer to a WriteMarkers
    tick(now_ms)              every transaction.abort.timed.out.transaction.cleanup.interval.ms
    expire_transactional_ids  every transaction.remove.expired.transaction.cleanup.interval.ms

Each operation returns a `Result`. The driver hands its records to the
partition (acks=all) at once, in the order the operations returned them, and,
once they are durable, sends its markers and its response, in that order. The
records are already applied when the operation returns, so later operations
see them.

Loading takes the log as it is: the last record of a transactional id is its
state, whatever came before (Kafka's TransactionStateManager loads alike). The
state table is checked where a decision is made, live, never on replay: a log
must never stop a coordinator from loading.

A transactional id whose last decision is not yet known written is pending (as
Kafka's pendingState): its requests are answered CONCURRENT_TRANSACTIONS
(retriable), and neither the timer nor the expiry decides anything for it,
until the driver reports the write with `written`. So every decision about an
id rests on records the log holds, and reaches the log after them. A write
that failed takes the id back to its last record known written; if that is a
PREPARE_*, its markers go out again and COMPLETE_* follows, as after a failover.

Time enters as `now_ms`, the wall clock (it is written in the records and
outlives a failover). The producer ids of new transactional ids come from an
injected `ProducerIdSource`.

Epochs follow KIP-890 ("transactions v2"): every end of a transaction, commit,
abort, timeout or fence, bumps the producer epoch, and the markers carry the
bumped epoch. A write, an EndTxn or a marker of a transaction that has ended
carries an older epoch than everything after it, and is refused: a late
commit can no longer commit the next transaction (Jepsen's 2024 finding).

A producer's next transaction usually starts while its last one completes:
its AddPartitionsToTxn comes with the new epoch while the markers are out.
Kafka answers it CONCURRENT_TRANSACTIONS and the producer retries. Here the
coordinator holds it (`AddHeld`) and decides it as soon as the last
transaction is complete: in the same batch of records as COMPLETE_*, when it
came before the markers were all written, or as soon as COMPLETE_* is written
when it came while that was being written. The Result that decides it carries
its answer (`AddAnswered`), to give once its records are written, so a
transaction begun back to back costs no retry and no write of its own before
it starts. If that write is refused, the add is held again while the last
transaction completes again. A driver that will not wait any longer takes the
request back with `release_held` and answers CONCURRENT_TRANSACTIONS, as
Kafka would have at once.

With transactions v2 (KIP-890 part 2) the partition leaders add their
partitions themselves, several at once for one transaction. An add that comes
while the id's ongoing transaction is being written (another leader's add) is
held too, and decided as soon as that write is reported: the adds held
meanwhile are merged into one write, or answered at once when their
partitions are in already.

A transaction aborted because it outlived its timeout does not fence its
producer (KIP-588): the epoch it wrote with stays the one before the last
bump, so the producer, told that its transaction was aborted
(INVALID_PRODUCER_EPOCH for a write, TRANSACTION_ABORTABLE for a commit),
aborts as it would after any abortable error and is answered the bumped
epoch, as for a retry of that abort. A newer instance of the transactional id
(InitProducerId without the old epoch) forgets that epoch, which fences the
old producer for good.
"""

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Protocol

from ..errors import ErrorCode
from ..invariant import require
from ..key_placement import partition_for
from ..topic_partition import TopicPartition
from .metadata import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TransactionMetadata, epoch_exhausted
from .records import TxnRecord
from .requests import (
    OK,
    AddAnswered,
    AddHeld,
    AddOffsetsRequest,
    AddPartitionsRequest,
    AddPartitionsResponse,
    Answer,
    CoordinatorFenced,
    DescribedTransaction,
    EndTxnRequest,
    Event,
    InitProducerIdRequest,
    ListedTransaction,
    ProducerFenced,
    ProducerIdAndEpoch,
    Result,
    TopicsImage,
    TransactionCompleted,
    TransactionTimedOut,
    TxnConfig,
    WriteMarkers,
)
from .state import TxnEvent, TxnState, next_state

OFFSETS_TOPIC = "__consumer_offsets"
_PREPARED = (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)
_COMPLETE = (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
_ENDING = (*_PREPARED, *_COMPLETE)
# Once a record of one of these states is written, the adds held meanwhile are decided.
_DECIDES_HELD = (*_COMPLETE, TxnState.ONGOING)
# A partition leader's answers to a marker that mean the marker is there: written now, or before
# (a retry is refused as an old epoch, since the marker raised the producer's epoch).
_MARKER_DONE = frozenset({ErrorCode.NONE, ErrorCode.INVALID_PRODUCER_EPOCH})
# How long a driver holds an AddPartitionsToTxn for the producer's last transaction to complete before it
# answers CONCURRENT_TRANSACTIONS (`release_held`); markers normally take a few milliseconds.
ADD_HOLD_MS = 500


class ProducerIdSource(Protocol):
    def take(self) -> int | None:
        """A producer id never handed out before; None while none is at hand (the driver is reserving a
        new block), which the coordinator answers with COORDINATOR_LOAD_IN_PROGRESS (retriable).
        replog.core.producer_ids.ProducerIds is one."""


@dataclass(slots=True)
class _PendingMarkers:
    producer_id: int
    producer_epoch: int
    commit: bool
    partitions: set[TopicPartition]


@dataclass(slots=True)
class _Unwritten:
    """A transactional id with records decided and not yet reported written: its last record known written
    (None: it has none), how many of its records the driver has still to report, and whether one failed."""

    written: TransactionMetadata | None
    records: int = 0
    failed: bool = False


def _before_last_bump(metadata: TransactionMetadata) -> tuple[int, int] | None:
    """The producer id and epoch the transactional id had just before its last bump, whose calls are
    retries of the call that bumped it; None after a fence, whose old epoch is nobody's to retry with."""
    if metadata.last_producer_epoch == NO_PRODUCER_EPOCH:
        return None
    if metadata.producer_epoch == metadata.last_producer_epoch + 1:
        return metadata.producer_id, metadata.last_producer_epoch
    if metadata.producer_epoch == 0 and metadata.previous_producer_id != NO_PRODUCER_ID:
        return metadata.previous_producer_id, metadata.last_producer_epoch  # the epochs ran out: a new id
    return None


class _Batch:
    """Records made by one operation, each applied as it is made; the markers and events to report."""

    def __init__(self, coordinator: "TransactionCoordinator") -> None:
        self._coordinator = coordinator
        self.records: list[TxnRecord] = []
        self.markers: list[WriteMarkers] = []
        self.events: list[Event] = []

    def write(self, metadata: TransactionMetadata) -> None:
        self._decide(TxnRecord(metadata.transactional_id, metadata))

    def forget(self, transactional_id: str) -> None:
        self._decide(TxnRecord(transactional_id, None))

    def _decide(self, record: TxnRecord) -> None:
        self._coordinator._unwritten_record(record.transactional_id)
        self._coordinator.replay(record)
        self.records.append(record)

    def result(self, response):
        return Result(response, tuple(self.records), tuple(self.markers), tuple(self.events))


def _refuse(error: ErrorCode, message: str) -> ProducerIdAndEpoch:
    return ProducerIdAndEpoch(error, message)


def _fenced(transactional_id: str, producer_epoch: int, metadata: TransactionMetadata, refusal):
    return refusal(ErrorCode.PRODUCER_FENCED, f"epoch {producer_epoch} of {transactional_id!r} was fenced: producer "
                                              f"{metadata.producer_id} is at epoch {metadata.producer_epoch}")


def _aborted_under(metadata: TransactionMetadata, producer_id: int, producer_epoch: int) -> bool:
    """Whether the producer's epoch is the one just before the last bump, and that bump aborted its
    transaction: the producer is still the id's and may go on once it aborts too (KIP-588)."""
    return (metadata.state in (TxnState.PREPARE_ABORT, TxnState.COMPLETE_ABORT)
            and (producer_id, producer_epoch) == _before_last_bump(metadata))


def _timed_out_answer(metadata: TransactionMetadata, producer_epoch: int, error: ErrorCode, refusal):
    return refusal(error, f"the transaction of {metadata.transactional_id!r} at epoch {producer_epoch} was aborted: "
                          f"it was open longer than its transaction.timeout.ms ({metadata.timeout_ms} ms); abort "
                          f"it (abort_transaction()) to go on at epoch {metadata.producer_epoch}")


class TransactionCoordinator:
    def __init__(self, config: TxnConfig, producer_ids: ProducerIdSource, coordinator_epoch: int) -> None:
        """A coordinator loading its partition; `coordinator_epoch` is the partition's leader epoch, which
        every marker carries so that partition leaders can refuse a stale coordinator's."""
        self.config = config
        self.coordinator_epoch = coordinator_epoch
        self._producer_ids = producer_ids
        self._transactions: dict[str, TransactionMetadata] = {}
        self._pending: dict[str, _PendingMarkers] = {}
        self._unwritten: dict[str, _Unwritten] = {}
        self._held: dict[str, frozenset[TopicPartition]] = {}  # transactional id -> partitions of its held adds
        self._deciding: dict[str, frozenset[TopicPartition]] = {}  # ... of held adds decided, not yet written
        self._loading = True

    # -- state from records -----------------------------------------------------------------------

    def replay(self, record: TxnRecord) -> None:
        """Apply one record: the only way the coordinator's state changes. The record is the id's state,
        whatever the one before: decisions are checked against the table when they are made, and a log is
        taken as it is (a coordinator that refused to load a log would leave its ids unserved)."""
        metadata = record.metadata
        if metadata is None:
            self._transactions.pop(record.transactional_id, None)
            self._pending.pop(record.transactional_id, None)
            return
        self._transactions[record.transactional_id] = metadata
        if metadata.state in _PREPARED:
            self._pending[record.transactional_id] = _PendingMarkers(
                metadata.producer_id, metadata.producer_epoch, metadata.state is TxnState.PREPARE_COMMIT,
                set(metadata.partitions))
        else:
            self._pending.pop(record.transactional_id, None)

    def loaded(self, now_ms: int) -> Result[None]:
        """The partition is replayed: answer requests from now on, and finish the transactions that were
        ending when the last coordinator stopped (their markers again; partitions that have them already
        answer as for a retry)."""
        self._loading = False
        batch = _Batch(self)
        for transactional_id in sorted(self._pending):
            self._send_or_complete(self._transactions[transactional_id], batch, now_ms)
        return batch.result(None)

    @property
    def loading(self) -> bool:
        return self._loading

    # -- the driver's writes ----------------------------------------------------------------------

    def written(self, records: Iterable[TxnRecord], error: ErrorCode, now_ms: int) -> Result[None]:
        """The partition's answer to a batch of this coordinator's records, reported in the order they were
        decided: NONE, they are committed; anything else, they are not (or not known to be). Once all of an
        id's records are reported, the id is no longer pending; if one of them failed, the id goes back to
        its last record known written, and the Result says what follows: the markers of a PREPARE_* again
        (then COMPLETE_*, as `marker_written` decides)."""
        batch = _Batch(self)
        for record in records:
            unwritten = self._unwritten.get(record.transactional_id)
            require(unwritten is not None and unwritten.records > 0,
                    "a write of transactional id %r is reported that was not pending", record.transactional_id)
            unwritten.records -= 1
            if error == ErrorCode.NONE:
                unwritten.written = record.metadata
            else:
                unwritten.failed = True
            if unwritten.records == 0:
                del self._unwritten[record.transactional_id]
                deciding = self._deciding.pop(record.transactional_id, None)
                if unwritten.failed:
                    again = self._held.pop(record.transactional_id, frozenset()) | (deciding or frozenset())
                    if again and unwritten.written is not None and unwritten.written.state in _PREPARED:
                        self._held[record.transactional_id] = again  # decided again with the next COMPLETE_*
                    # Otherwise they are let go: `release_held` says so.
                    self._roll_back(record.transactional_id, unwritten.written, batch, now_ms)
                elif (record.transactional_id in self._held and unwritten.written is not None
                      and unwritten.written.state in _DECIDES_HELD):
                    self._decide_held(record.transactional_id, batch, now_ms)
        return batch.result(None)

    def writing(self, transactional_id: str) -> bool:
        """Whether the id has records decided and not yet reported written."""
        return transactional_id in self._unwritten

    def _unwritten_record(self, transactional_id: str) -> None:
        unwritten = self._unwritten.get(transactional_id)
        if unwritten is None:
            unwritten = self._unwritten[transactional_id] = _Unwritten(self._transactions.get(transactional_id))
        unwritten.records += 1

    def _roll_back(self, transactional_id: str, written: TransactionMetadata | None, batch: "_Batch",
                   now_ms: int) -> None:
        self.replay(TxnRecord(transactional_id, written))
        if written is not None and written.state in _PREPARED:
            self._send_or_complete(written, batch, now_ms)

    def _written_state(self, transactional_id: str) -> TransactionMetadata | None:
        """The id's metadata as its last record known written has it."""
        unwritten = self._unwritten.get(transactional_id)
        return unwritten.written if unwritten is not None else self._transactions.get(transactional_id)

    def get(self, transactional_id: str) -> TransactionMetadata | None:
        return self._transactions.get(transactional_id)

    def transactions(self) -> tuple[TransactionMetadata, ...]:
        return tuple(self._transactions[t] for t in sorted(self._transactions))

    def pending_markers(self) -> tuple[WriteMarkers, ...]:
        """Every marker not yet acknowledged, for a driver that lost track (a reconnect)."""
        return tuple(self._markers(t, p.partitions) for t, p in sorted(self._pending.items()) if p.partitions)

    # -- InitProducerId ---------------------------------------------------------------------------

    def init_producer_id(self, request: InitProducerIdRequest, now_ms: int) -> Result[ProducerIdAndEpoch]:
        """A transactional producer starts (or recovers, KIP-360): it gets its producer id and a new epoch,
        which fences every older instance. An ongoing transaction of the old epoch is aborted first and
        the producer asked to retry (CONCURRENT_TRANSACTIONS) until the abort is complete."""
        batch = _Batch(self)
        refusal = self._check_request(request.transactional_id, _refuse)
        if refusal is None and not 0 < request.transaction_timeout_ms <= self.config.max_timeout_ms:
            refusal = _refuse(ErrorCode.INVALID_TRANSACTION_TIMEOUT,
                              f"transaction.timeout.ms {request.transaction_timeout_ms} is not in "
                              f"(0, {self.config.max_timeout_ms}] (transaction.max.timeout.ms)")
        if refusal is not None:
            return batch.result(refusal)
        metadata = self._transactions.get(request.transactional_id)
        if metadata is None:
            return batch.result(self._new_transactional_id(request, batch, now_ms))
        expected = request.producer_id != NO_PRODUCER_ID
        if expected and request.producer_id not in (metadata.producer_id, metadata.previous_producer_id):
            return batch.result(_refuse(ErrorCode.PRODUCER_FENCED,
                                        f"producer id {request.producer_id} is no longer the one of "
                                        f"{request.transactional_id!r}"))
        if metadata.state in _PREPARED:
            return batch.result(_refuse(ErrorCode.CONCURRENT_TRANSACTIONS,
                                        f"{request.transactional_id!r} is completing a transaction; retry"))
        if metadata.state is TxnState.ONGOING:
            if expected and (request.producer_id, request.producer_epoch) != (metadata.producer_id,
                                                                              metadata.producer_epoch):
                return batch.result(_fenced(request.transactional_id, request.producer_epoch, metadata, _refuse))
            self._fence_and_abort(metadata, batch, now_ms)
            batch.events.append(ProducerFenced(metadata.transactional_id, metadata.producer_id,
                                               metadata.producer_epoch))
            return batch.result(_refuse(ErrorCode.CONCURRENT_TRANSACTIONS,
                                        f"the ongoing transaction of {request.transactional_id!r} is being "
                                        f"aborted; retry"))
        return batch.result(self._bump_idle(metadata, request, batch, now_ms))

    def _new_transactional_id(self, request: InitProducerIdRequest, batch: _Batch,
                              now_ms: int) -> ProducerIdAndEpoch:
        producer_id = self._producer_ids.take()
        if producer_id is None:
            return _refuse(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "no producer id is at hand yet; retry")
        metadata = TransactionMetadata(request.transactional_id, producer_id, 0, request.transaction_timeout_ms,
                                       TxnState.EMPTY, now_ms)
        batch.write(metadata)
        return ProducerIdAndEpoch(ErrorCode.NONE, "", producer_id, 0)

    def _bump_idle(self, metadata: TransactionMetadata, request: InitProducerIdRequest, batch: _Batch,
                   now_ms: int) -> ProducerIdAndEpoch:
        """InitProducerId with no transaction open: a new epoch, or a new producer id when the epochs are
        spent; a retry of a call that already succeeded gets the same answer again."""
        expected = request.producer_id != NO_PRODUCER_ID
        if expected and (request.producer_id, request.producer_epoch) == _before_last_bump(metadata):
            return ProducerIdAndEpoch(ErrorCode.NONE, "", metadata.producer_id, metadata.producer_epoch)
        if expected and (request.producer_id, request.producer_epoch) != (metadata.producer_id,
                                                                          metadata.producer_epoch):
            return _fenced(request.transactional_id, request.producer_epoch, metadata, _refuse)
        last_epoch = metadata.producer_epoch if expected else NO_PRODUCER_EPOCH
        changes: dict = {"timeout_ms": request.transaction_timeout_ms, "start_timestamp_ms": -1,
                         "last_producer_epoch": last_epoch}
        if metadata.epoch_exhausted:
            producer_id = self._producer_ids.take()
            if producer_id is None:
                return _refuse(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "no producer id is at hand yet; retry")
            changes |= {"producer_id": producer_id, "producer_epoch": 0,
                        "previous_producer_id": metadata.producer_id}
        else:
            changes["producer_epoch"] = metadata.producer_epoch + 1
        after = metadata.moved(TxnEvent.INIT_PRODUCER_ID, now_ms, **changes)
        batch.write(after)
        return ProducerIdAndEpoch(ErrorCode.NONE, "", after.producer_id, after.producer_epoch)

    # -- AddPartitionsToTxn and AddOffsetsToTxn ----------------------------------------------------

    def add_partitions(self, request: AddPartitionsRequest, topics: TopicsImage,
                       now_ms: int) -> Result[AddPartitionsResponse | AddHeld]:
        """Add partitions to the producer's transaction (starting one), or, with verify_only, say whether
        they are in its ongoing transaction (KIP-890: asked by a partition leader before it appends the
        producer's first transactional batch; an answer other than NONE refuses the batch). An add that
        comes while the producer's last transaction completes is held (`AddHeld`): it is decided with that
        transaction's COMPLETE_* or right after it, and its answer is an `AddAnswered` event then."""
        batch = _Batch(self)
        holding = not request.verify_only and self._holdable(request)
        refusal = None if holding else self._check_producer(request.transactional_id, request.producer_id,
                                                            request.producer_epoch, AddPartitionsResponse,
                                                            request.verify_only)
        if refusal is not None:
            return batch.result(refusal)
        if request.verify_only:
            # Only what the log holds counts: a partition whose adding is still being written is not in yet.
            written = self._written_state(request.transactional_id)
            return batch.result(AddPartitionsResponse(ErrorCode.NONE, "", {
                partition: ErrorCode.NONE if (written is not None and written.state is TxnState.ONGOING
                                              and partition in written.partitions)
                else ErrorCode.TRANSACTION_ABORTABLE for partition in request.partitions}))
        metadata = self._transactions[request.transactional_id]
        unknown = {p for p in request.partitions if not 0 <= p.partition < topics.get(p.topic, 0)}
        if unknown:
            return batch.result(AddPartitionsResponse(
                ErrorCode.NONE, f"no such partitions: {', '.join(sorted(map(str, unknown)))}",
                {p: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if p in unknown else ErrorCode.OPERATION_NOT_ATTEMPTED
                 for p in request.partitions}))
        if holding:
            self._held[request.transactional_id] = self._held.get(request.transactional_id, frozenset()) | \
                request.partitions
            return batch.result(AddHeld(request.transactional_id, request.partitions))
        self._add(metadata, request.partitions, batch, now_ms)
        return batch.result(AddPartitionsResponse(ErrorCode.NONE, "", dict.fromkeys(request.partitions,
                                                                                  ErrorCode.NONE)))

    def _holdable(self, request: AddPartitionsRequest) -> bool:
        """Whether the add comes, with the current producer id and epoch, while the producer's last
        transaction completes (its markers are out, or COMPLETE_* is being written) or while its ongoing
        transaction is being written (another add)."""
        metadata = self._transactions.get(request.transactional_id)
        return (not self._loading and metadata is not None
                and (metadata.producer_id, metadata.producer_epoch) == (request.producer_id, request.producer_epoch)
                and (metadata.state in _PREPARED
                     or (metadata.state in _DECIDES_HELD and request.transactional_id in self._unwritten)))

    def _decide_held(self, transactional_id: str, batch: _Batch, now_ms: int) -> None:
        """Add the held partitions (a write, unless the ongoing transaction has them all already) and answer
        the adds with that write, or at once when there is none."""
        partitions = self._held.pop(transactional_id)
        if self._add(self._transactions[transactional_id], partitions, batch, now_ms):
            self._deciding[transactional_id] = partitions
        batch.events.append(AddAnswered(transactional_id, AddPartitionsResponse(
            ErrorCode.NONE, "", dict.fromkeys(partitions, ErrorCode.NONE))))

    def release_held(self, transactional_id: str, partitions: frozenset[TopicPartition]) -> bool:
        """Take back a held add of the id (its `partitions`), which its driver then answers
        CONCURRENT_TRANSACTIONS; False while its partitions are decided and being written: the write's success
        answers it (`AddAnswered`). A refused write holds them again if the last transaction is completing
        again, or lets them go."""
        held = self._held.pop(transactional_id, frozenset()) - partitions
        if held:
            self._held[transactional_id] = held
        return not self._deciding.get(transactional_id, frozenset()) & partitions

    def add_offsets(self, request: AddOffsetsRequest, now_ms: int) -> Result[Answer]:
        """Add the group's __consumer_offsets partition to the transaction, so that the offsets the
        producer commits in it (TxnOffsetCommit) become visible only with its commit marker."""
        batch = _Batch(self)
        refusal = self._check_producer(request.transactional_id, request.producer_id, request.producer_epoch, Answer)
        if refusal is not None:
            return batch.result(refusal)
        partition = TopicPartition(OFFSETS_TOPIC, partition_for(request.group_id, self.config.offsets_topic_partitions))
        self._add(self._transactions[request.transactional_id], frozenset({partition}), batch, now_ms)
        return batch.result(OK)

    def _add(self, metadata: TransactionMetadata, partitions: frozenset[TopicPartition], batch: _Batch,
             now_ms: int) -> bool:
        """Put the partitions in the transaction (starting one); False when it has them already (no record)."""
        if metadata.state is TxnState.ONGOING and partitions <= metadata.partitions:
            return False
        start_ms = metadata.start_timestamp_ms if metadata.state is TxnState.ONGOING else now_ms
        batch.write(metadata.moved(TxnEvent.ADD_PARTITIONS, now_ms, partitions=metadata.partitions | partitions,
                                   start_timestamp_ms=start_ms))
        return True

    # -- EndTxn -------------------------------------------------------------------------------------

    def end_txn(self, request: EndTxnRequest, now_ms: int) -> Result[ProducerIdAndEpoch]:
        """Commit or abort the producer's transaction: PREPARE_* is written with the next epoch, then the
        markers go out. The answer names the id and epoch for the producer's next transaction. A retry
        of the EndTxn that ended the last transaction (its epoch is the one before) gets the same answer;
        any other EndTxn with an old epoch is fenced."""
        batch = _Batch(self)
        refusal = self._check_request(request.transactional_id, _refuse)
        if refusal is not None:
            return batch.result(refusal)
        metadata = self._transactions.get(request.transactional_id)
        if metadata is None or request.producer_id not in (metadata.producer_id, metadata.previous_producer_id):
            return batch.result(_refuse(ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                                        f"producer id {request.producer_id} is not the one of "
                                        f"{request.transactional_id!r}"))
        state = metadata.state
        if state in _ENDING and (request.producer_id, request.producer_epoch) == _before_last_bump(metadata):
            # A retry of the EndTxn that ended (or is ending) the last transaction.
            if (state in (TxnState.PREPARE_COMMIT, TxnState.COMPLETE_COMMIT)) != request.commit:
                if request.commit:
                    # Its producer never asked for the abort: the coordinator aborted it after its timeout.
                    return batch.result(_timed_out_answer(metadata, request.producer_epoch,
                                                          ErrorCode.TRANSACTION_ABORTABLE, _refuse))
                return batch.result(_refuse(ErrorCode.INVALID_TXN_STATE,
                                            f"the transaction already ended the other way ({state.kafka_name})"))
            if state in _PREPARED:
                return batch.result(_refuse(ErrorCode.CONCURRENT_TRANSACTIONS, "the transaction is being completed; "
                                                                               "retry"))
            return batch.result(ProducerIdAndEpoch(ErrorCode.NONE, "", metadata.producer_id, metadata.producer_epoch))
        if (request.producer_id, request.producer_epoch) != (metadata.producer_id, metadata.producer_epoch):
            return batch.result(_fenced(request.transactional_id, request.producer_epoch, metadata, _refuse))
        if state in _PREPARED:
            return batch.result(_refuse(ErrorCode.CONCURRENT_TRANSACTIONS,
                                        "the last transaction is still being completed; retry"))
        if state is TxnState.ONGOING or not request.commit:
            return batch.result(self._prepare_end(metadata, request.commit, batch, now_ms))
        return batch.result(_refuse(ErrorCode.INVALID_TXN_STATE,
                                    f"{request.transactional_id!r} has no transaction to commit "
                                    f"({state.kafka_name})"))

    def _prepare_end(self, metadata: TransactionMetadata, commit: bool, batch: _Batch,
                     now_ms: int) -> ProducerIdAndEpoch:
        next_producer_id = NO_PRODUCER_ID
        if metadata.epoch_exhausted:
            allocated = self._producer_ids.take()
            if allocated is None:
                return _refuse(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "no producer id is at hand yet; retry")
            next_producer_id = allocated
        if metadata.state is not TxnState.ONGOING:
            # An abort with nothing added: the epoch still moves on, so that nothing sent before counts.
            metadata = replace(metadata, start_timestamp_ms=now_ms)
        prepared = metadata.moved(TxnEvent.END_COMMIT if commit else TxnEvent.END_ABORT, now_ms,
                                  producer_epoch=metadata.producer_epoch + 1,
                                  last_producer_epoch=metadata.producer_epoch, next_producer_id=next_producer_id)
        batch.write(prepared)
        self._send_or_complete(prepared, batch, now_ms)
        after = self._transactions[prepared.transactional_id]
        if next_producer_id != NO_PRODUCER_ID:
            return ProducerIdAndEpoch(ErrorCode.NONE, "", next_producer_id, 0)
        return ProducerIdAndEpoch(ErrorCode.NONE, "", after.producer_id, after.producer_epoch)

    def _fence_and_abort(self, metadata: TransactionMetadata, batch: _Batch, now_ms: int, *,
                         timed_out: bool = False) -> None:
        """Abort an ongoing transaction that its producer no longer owns (a newer instance started) or let
        run past its timeout: the epoch is bumped first, so that nothing the producer sends with the old
        one is written. A newer instance's fence forgets the epoch before, so none of the old producer's
        calls counts as a retry; a timeout keeps it, so the producer may abort and go on (KIP-588), unless
        the bump used the producer id's last epoch."""
        bumped = metadata.producer_epoch + 1
        remembered = metadata.producer_epoch if timed_out and not epoch_exhausted(bumped) else NO_PRODUCER_EPOCH
        fenced = metadata.moved(TxnEvent.FENCE, now_ms, producer_epoch=bumped, last_producer_epoch=remembered)
        prepared = fenced.moved(TxnEvent.END_ABORT, now_ms)
        batch.write(prepared)
        self._send_or_complete(prepared, batch, now_ms)

    # -- markers --------------------------------------------------------------------------------------

    def marker_written(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       partition: TopicPartition, error: ErrorCode, now_ms: int) -> Result[None]:
        """A partition leader answered the marker for `partition`. NONE (or INVALID_PRODUCER_EPOCH: the
        marker was there already) counts it written; once every partition has its marker, COMPLETE_* is
        written. TRANSACTION_COORDINATOR_FENCED stops this coordinator's markers for the id. Any other
        error is retriable: the marker is asked for again. Answers for another transaction are ignored."""
        batch = _Batch(self)
        pending = self._pending.get(transactional_id)
        if (pending is None or (pending.producer_id, pending.producer_epoch) != (producer_id, producer_epoch)
                or partition not in pending.partitions):
            return batch.result(None)
        if error == ErrorCode.TRANSACTION_COORDINATOR_FENCED:
            del self._pending[transactional_id]
            batch.events.append(CoordinatorFenced(transactional_id, partition))
        elif error in _MARKER_DONE:
            pending.partitions.discard(partition)
            if not pending.partitions:
                self._send_or_complete(self._transactions[transactional_id], batch, now_ms)
        else:
            batch.markers.append(self._markers(transactional_id, {partition}))
        return batch.result(None)

    def _send_or_complete(self, metadata: TransactionMetadata, batch: _Batch, now_ms: int) -> None:
        pending = self._pending[metadata.transactional_id]
        if pending.partitions:
            batch.markers.append(self._markers(metadata.transactional_id, pending.partitions))
            return
        changes: dict = {"partitions": frozenset(), "next_producer_id": NO_PRODUCER_ID}
        if metadata.next_producer_id != NO_PRODUCER_ID:
            changes |= {"producer_id": metadata.next_producer_id, "producer_epoch": 0,
                        "previous_producer_id": metadata.producer_id}
        batch.write(metadata.moved(TxnEvent.MARKERS_WRITTEN, now_ms, **changes))
        batch.events.append(TransactionCompleted(metadata.transactional_id, metadata.producer_id,
                                                 metadata.state is TxnState.PREPARE_COMMIT,
                                                 now_ms - metadata.start_timestamp_ms))
        if metadata.transactional_id in self._held:
            self._decide_held(metadata.transactional_id, batch, now_ms)

    def _markers(self, transactional_id: str, partitions: Iterable[TopicPartition]) -> WriteMarkers:
        pending = self._pending[transactional_id]
        return WriteMarkers(transactional_id, pending.producer_id, pending.producer_epoch, self.coordinator_epoch,
                            pending.commit, frozenset(partitions))

    # -- timers -----------------------------------------------------------------------------------------

    def tick(self, now_ms: int) -> Result[None]:
        """Abort the transactions open longer than their transaction.timeout.ms (with an epoch bump, so the
        silent producer is fenced if it comes back)."""
        batch = _Batch(self)
        for metadata in self.transactions():
            if (metadata.state is TxnState.ONGOING and not self._loading
                    and metadata.transactional_id not in self._unwritten
                    and metadata.start_timestamp_ms + metadata.timeout_ms < now_ms):
                self._fence_and_abort(metadata, batch, now_ms, timed_out=True)
                batch.events.append(TransactionTimedOut(metadata.transactional_id, metadata.producer_id,
                                                        metadata.timeout_ms))
        return batch.result(None)

    def expire_transactional_ids(self, now_ms: int) -> Result[tuple[str, ...]]:
        """Forget the transactional ids idle for transactional.id.expiration.ms (tombstones); their ids."""
        batch = _Batch(self)
        expired = []
        for metadata in self.transactions():
            if (metadata.state.expiration_allowed and not self._loading
                    and metadata.transactional_id not in self._unwritten
                    and metadata.last_update_timestamp_ms + self.config.transactional_id_expiration_ms <= now_ms):
                next_state(metadata.state, TxnEvent.EXPIRE)  # checks the move; DEAD itself is the tombstone
                batch.forget(metadata.transactional_id)
                expired.append(metadata.transactional_id)
        return batch.result(tuple(expired))

    # -- describing -------------------------------------------------------------------------------------

    def describe(self, transactional_id: str) -> DescribedTransaction:
        """The id as the log has it (a change still being written shows once it is)."""
        metadata = self._written_state(transactional_id)
        if self._loading:
            return DescribedTransaction(transactional_id, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                        "the coordinator is loading its partition; retry")
        if metadata is None:
            return DescribedTransaction(transactional_id, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND,
                                        f"no transactional id {transactional_id!r}")
        return DescribedTransaction(transactional_id, ErrorCode.NONE, "", metadata.state.kafka_name,
                                    metadata.producer_id, metadata.producer_epoch, metadata.timeout_ms,
                                    metadata.start_timestamp_ms, tuple(sorted(metadata.partitions)))

    def list_transactions(self, states: Iterable[TxnState] = (),
                          producer_ids: Iterable[int] = ()) -> tuple[ListedTransaction, ...]:
        wanted_states, wanted_ids = set(states), set(producer_ids)
        written = (self._written_state(t) for t in sorted(set(self._transactions) | set(self._unwritten)))
        return tuple(ListedTransaction(m.transactional_id, m.producer_id, m.state.kafka_name)
                     for m in written
                     if m is not None and (not wanted_states or m.state in wanted_states)
                     and (not wanted_ids or m.producer_id in wanted_ids))

    # -- checks shared by the requests --------------------------------------------------------------------

    def _check_request(self, transactional_id: str, refusal):
        if self._loading:
            return refusal(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "the coordinator is loading its partition; retry")
        if not transactional_id:
            return refusal(ErrorCode.INVALID_REQUEST, "a transactional request needs a transactional id")
        if transactional_id in self._unwritten:
            # Kafka's pending state: whatever is decided next must reach the log after what is being written.
            return refusal(ErrorCode.CONCURRENT_TRANSACTIONS, f"a change of {transactional_id!r} is being written; "
                                                              f"retry")
        return None

    def _check_producer(self, transactional_id: str, producer_id: int, producer_epoch: int, refusal,
                        verify_only: bool = False):
        """The checks before AddPartitionsToTxn and AddOffsetsToTxn, as Kafka's: the id must be the
        transactional id's, the epoch its current one, and no transaction may be completing. A verification
        (which decides nothing) is answered from what the log holds, even while a change is being written."""
        if verify_only and transactional_id in self._unwritten and not self._loading:
            metadata = self._written_state(transactional_id)
        else:
            checked = self._check_request(transactional_id, refusal)
            if checked is not None:
                return checked
            metadata = self._transactions.get(transactional_id)
        if metadata is None or metadata.producer_id != producer_id:
            return refusal(ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                           f"producer id {producer_id} is not the one of {transactional_id!r}")
        if metadata.producer_epoch != producer_epoch:
            if _aborted_under(metadata, producer_id, producer_epoch):
                return _timed_out_answer(metadata, producer_epoch, ErrorCode.INVALID_PRODUCER_EPOCH, refusal)
            return _fenced(transactional_id, producer_epoch, metadata, refusal)
        if metadata.state in _PREPARED:
            return refusal(ErrorCode.CONCURRENT_TRANSACTIONS, f"{transactional_id!r} is completing a transaction; "
                                                              f"retry")
        return None
