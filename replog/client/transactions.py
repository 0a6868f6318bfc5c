"""A transactional producer's transactions: its state, the partitions and offsets it adds, and its calls to
the transaction coordinator and the group coordinator (Kafka's TransactionManager).

The state moves only through `replog.core.txn.producer`'s table, and every
answer is read through its `reaction`. The application's thread changes the
state (begin, commit, abort) and notes the partitions `send()` writes to; the
producer's I/O loop asks the coordinator to add those partitions, before any
batch of theirs leaves, several at a time in one AddPartitionsToTxn, as Kafka's
client batches them; and it ends transactions with EndTxn. Every end bumps the
producer's epoch (KIP-890): EndTxn answers the id and epoch the next
transaction writes with, and each partition's sequence numbers start at 0
again. On transaction version 2 (KIP-890 part 2, which the coordinator's
InitProducerId and EndTxn answers announce) the producer asks for nothing:
batches leave at once and each partition's leader adds its partition to the
transaction before it appends the first of them.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Mapping

from replog.client import coordinator_requests as requests
from replog.client.coordinator import Coordinators
from replog.client.errors import (
    ClientError,
    ProducerFencedError,
    TransactionAbortableError,
    TransactionAbortedError,
    TransactionFatalError,
    TransactionStateError,
)
from replog.client.types import ConsumerGroupMetadata, OffsetAndMetadata, PreparedTransaction
from replog.core.errors import ErrorCode
from replog.core.producer_state import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from replog.core.topic_partition import TopicPartition
from replog.core.txn.producer import (
    ProducerTxnEvent,
    ProducerTxnState,
    Reaction,
    Request,
    next_state,
    reaction,
    retried,
)

log = logging.getLogger("replog.client")

S = ProducerTxnState
E = ProducerTxnEvent

# What the application may not do in each state, said the way a user needs to hear it.
_HINTS = {
    S.UNINITIALIZED: "call init_transactions() first",
    S.INITIALIZING: "init_transactions() has not finished; call it again",
    S.READY: "no transaction is open; call begin_transaction() first",
    S.IN_TRANSACTION: "a transaction is open; commit or abort it first",
    S.PREPARED: "the transaction is prepared; commit or abort it, or close the producer and leave it to "
                "whoever holds its PreparedTransaction",
    S.COMMITTING: "the transaction is being committed; call commit_transaction() again to finish it",
    S.ABORTING: "the transaction is being aborted; call abort_transaction() again to finish it",
}


class TransactionManager:
    """One transactional producer's transactions; shared by the application's thread and the I/O loop."""

    def __init__(self, transactional_id: str, transaction_timeout_ms: int, *, transactions: Coordinators,
                 groups: Coordinators, use_producer: Callable[[int, int], None], wakeup: Callable[[], None]) -> None:
        """`use_producer(id, epoch)` makes the sender write with them, numbering every partition from 0;
        `wakeup()` wakes the sender (on the I/O loop)."""
        self.transactional_id = transactional_id
        self._timeout_ms = transaction_timeout_ms
        self._transactions = transactions
        self._groups = groups
        self._use_producer = use_producer
        self._wakeup = wakeup
        self._lock = threading.Lock()
        self.state = S.UNINITIALIZED
        self.error: ClientError | None = None  # why the transaction is abortable, or the producer unusable
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = NO_PRODUCER_EPOCH
        self._new: set[TopicPartition] = set()  # written to, not yet asked for
        self._adding: set[TopicPartition] = set()  # in the AddPartitionsToTxn on its way
        self.added: set[TopicPartition] = set()  # in the transaction: their batches may leave
        self._started = False  # the coordinator may have begun the transaction: only EndTxn ends it
        self._add_task: asyncio.Task[None] | None = None
        # 2: partition leaders add partitions (the coordinator said so at init or at the last end); 1: this
        # producer adds them with AddPartitionsToTxn.
        self.transaction_version = 1

    # -- the application's thread ----------------------------------------------------------------

    def move(self, event: ProducerTxnEvent, what: str) -> ProducerTxnState:
        """Take the table's move for the application's call `what`; the state before it. Raises when the
        table has none: the error that put the producer where it is, or TransactionStateError."""
        with self._lock:
            after = next_state(self.state, event)
            if after is None:
                raise self._refusal(what)
            before, self.state = self.state, after
            return before

    def check_send(self) -> None:
        """send() writes only inside a transaction."""
        state = self.state
        if state is not S.IN_TRANSACTION:
            with self._lock:
                raise self._refusal("send()")

    def check_open(self, what: str) -> None:
        """Raise unless a transaction is open and can still commit (or, COMMITTING, is being committed)."""
        if self.state not in (S.IN_TRANSACTION, S.COMMITTING):
            with self._lock:
                raise self._refusal(what)

    def prepared(self) -> PreparedTransaction:
        """IN_TRANSACTION to PREPARED, once every record is acknowledged (the caller flushed): what EndTxn
        must name to end the transaction from elsewhere."""
        self.check_open("prepare_transaction()")
        with self._lock:
            if not self._started:
                raise TransactionStateError("prepare_transaction() is refused: the transaction has written "
                                            "nothing, so there is nothing for anyone to commit")
        self.move(E.PREPARE, "prepare_transaction()")
        log.info("transactional id %r: transaction prepared, producer %d epoch %d", self.transactional_id,
                 self.producer_id, self.producer_epoch)
        return PreparedTransaction(self.transactional_id, self.producer_id, self.producer_epoch)

    def note_partition(self, tp: TopicPartition) -> bool:
        """send() wrote to `tp`: True when it is new to the transaction (the sender must ask for it, or, on
        transaction version 2, may send its batches now: their leader adds it)."""
        if tp in self.added:
            return False
        with self._lock:
            if tp in self.added or tp in self._adding or tp in self._new:
                return False
            if self.transaction_version >= 2:
                self._started = True
                self.added.add(tp)
            else:
                self._new.add(tp)
            return True

    def _refusal(self, what: str) -> ClientError:
        if self.state is S.FATAL_ERROR and self.error is not None:
            return self.error
        if self.state is S.ABORTABLE_ERROR and self.error is not None:
            return TransactionAbortableError(f"{what} is refused: the transaction must be aborted "
                                             f"(abort_transaction()), since {self.error}", self.error.error_code)
        return TransactionStateError(f"{what} is refused in state {self.state.name}: {_HINTS[self.state]}")

    # -- the I/O loop -------------------------------------------------------------------------------

    @property
    def gives_up_queued(self) -> bool:
        """Whether batches not yet sent are to fail: the transaction is aborting, or cannot commit."""
        return self.state in (S.ABORTING, S.ABORTABLE_ERROR, S.FATAL_ERROR)

    def given_up(self, tp: TopicPartition, records: int) -> ClientError:
        """The error a batch not sent gets when the transaction gives it up."""
        if self.state is S.FATAL_ERROR and self.error is not None:
            return self.error
        cause = f" after {self.error}" if self.error is not None else ""
        return TransactionAbortedError(f"{records} records for {tp} were not written: the transaction is being "
                                       f"aborted{cause}", ErrorCode.TRANSACTION_ABORTABLE)

    def maybe_add_partitions(self) -> None:
        """Ask for the partitions written to since the last ask, unless an ask is on its way."""
        if not self._new or (self._add_task is not None and not self._add_task.done()):
            return
        if self.state not in (S.IN_TRANSACTION, S.COMMITTING):
            return
        with self._lock:
            partitions, self._new = frozenset(self._new), set()
            self._adding |= partitions
            self._started = True
        self._add_task = asyncio.get_running_loop().create_task(self._add_partitions(partitions))

    async def _add_partitions(self, partitions: frozenset[TopicPartition]) -> None:
        request = requests.add_partitions_request(self.transactional_id, self.producer_id, self.producer_epoch,
                                                  partitions)
        try:
            response = await self._call(Request.ADD_PARTITIONS, "AddPartitionsToTxn", request,
                                        _add_partition_codes, self._timeout_ms / 1000)
            (code, message), results = requests.added_partitions(response)
            failed = [(c, f"{tp}: {m}") for tp, (c, m) in sorted(results.items()) if c is not ErrorCode.NONE]
            if code is ErrorCode.NONE and failed:
                code, message = max(failed, key=lambda failure: _severity(Request.ADD_PARTITIONS, failure[0]))
            missing = partitions - set(results)
            if code is ErrorCode.NONE and missing:
                code, message = ErrorCode.UNKNOWN_SERVER_ERROR, f"the answer left out {sorted(missing)}"
            self._take(Request.ADD_PARTITIONS, code, message)
        except ClientError as error:
            self._fail(Reaction.ABORTABLE, error)
        finally:
            with self._lock:
                self._adding -= partitions
                if self.state in (S.IN_TRANSACTION, S.COMMITTING):
                    self.added |= partitions
            self._wakeup()

    def batch_failed(self, code: ErrorCode, error: ClientError) -> None:
        """A batch failed for good: the transaction cannot commit, or (fenced) the producer is done; what
        the application is told later (at commit_transaction(), send()) says which."""
        what = reaction(Request.PRODUCE, code)
        if what is Reaction.FENCED:
            error = ProducerFencedError(f"{error}; a newer producer with the same transactional id fenced this one: "
                                        "close it", code)
        elif code is ErrorCode.INVALID_PRODUCER_EPOCH:
            error = TransactionAbortableError(
                f"{error}; the transaction ended under this producer: its coordinator aborted it after "
                f"transaction_timeout_ms ({self._timeout_ms} ms), unless a newer producer with the same "
                "transactional id fenced this one. abort_transaction() goes on with the next epoch, or raises "
                "ProducerFencedError", code)
        self._fail(what, error)

    async def initialize(self, timeout_s: float) -> None:
        request = requests.init_producer_id_request(self.transactional_id, self._timeout_ms)
        response = await self._call(Request.INIT_PRODUCER_ID, "InitProducerId", request,
                                    lambda r: [ErrorCode.of(r.error_code)], timeout_s)
        self._take(Request.INIT_PRODUCER_ID, ErrorCode.of(response.error_code), response.error_message)
        self._take_producer(response.producer_id, response.producer_epoch, response.transaction_version)
        self._finish(E.INITIALIZED)
        log.info("transactional id %r: producer id %d, epoch %d, transaction version %d", self.transactional_id,
                 self.producer_id, self.producer_epoch, self.transaction_version)

    async def send_offsets(self, offsets: Mapping[TopicPartition, OffsetAndMetadata],
                           group: ConsumerGroupMetadata, timeout_s: float) -> None:
        """AddOffsetsToTxn at the transaction coordinator, then TxnOffsetCommit at the group's."""
        deadline = time.monotonic() + timeout_s
        self._started = True
        request = requests.add_offsets_request(self.transactional_id, self.producer_id, self.producer_epoch,
                                               group.group_id)
        response = await self._call(Request.ADD_OFFSETS, "AddOffsetsToTxn", request,
                                    lambda r: [ErrorCode.of(r.error_code)], timeout_s)
        self._take(Request.ADD_OFFSETS, ErrorCode.of(response.error_code), response.error_message)
        commit = requests.txn_offset_commit_request(self.transactional_id, self.producer_id, self.producer_epoch,
                                                    group.group_id, group.member_id, group.generation_id, offsets)
        answer, _ = await self._groups.call(
            group.group_id, "TxnOffsetCommit", commit, lambda r: [c for c, _ in requests.commit_results(r).values()],
            max(deadline - time.monotonic(), 0.001), passing=retried(Request.TXN_OFFSET_COMMIT))
        results = requests.commit_results(answer)
        failed = [(c, f"{tp}: {m}") for tp, (c, m) in sorted(results.items()) if c is not ErrorCode.NONE]
        failed += [(ErrorCode.UNKNOWN_SERVER_ERROR, f"{tp}: the answer left it out") for tp in offsets
                   if tp not in results]
        code, message = max(failed, key=lambda f: _severity(Request.TXN_OFFSET_COMMIT, f[0]),
                            default=(ErrorCode.NONE, ""))
        self._take(Request.TXN_OFFSET_COMMIT, code, message)

    async def end(self, commit: bool, timeout_s: float) -> None:
        """EndTxn (when the coordinator may know of the transaction), then READY with the new epoch."""
        deadline = time.monotonic() + timeout_s
        if self._add_task is not None and not self._add_task.done():
            await asyncio.wait_for(asyncio.shield(self._add_task), max(deadline - time.monotonic(), 0.001))
        if self._started:
            request = requests.end_txn_request(self.transactional_id, self.producer_id, self.producer_epoch, commit)
            response = await self._call(Request.END_TXN, "EndTxn", request, lambda r: [ErrorCode.of(r.error_code)],
                                        max(deadline - time.monotonic(), 0.001))
            self._take(Request.END_TXN, ErrorCode.of(response.error_code), response.error_message)
            self._take_producer(response.producer_id, response.producer_epoch, response.transaction_version)
        with self._lock:
            self._new.clear()
            self.added.clear()
            self._started = False
            self.error = None
        self._finish(E.ENDED)
        log.info("transactional id %r: transaction %s; next epoch %d", self.transactional_id,
                 "committed" if commit else "aborted", self.producer_epoch)

    def _take_producer(self, producer_id: int, producer_epoch: int, transaction_version: int) -> None:
        if producer_id >= 0 and producer_epoch >= 0:
            self.producer_id, self.producer_epoch = producer_id, producer_epoch
            self.transaction_version = max(1, transaction_version)  # 0: a coordinator that does not say
        self._use_producer(self.producer_id, self.producer_epoch)

    def _finish(self, event: ProducerTxnEvent) -> None:
        with self._lock:
            after = next_state(self.state, event)
            if after is None:
                # The application cannot get here (it waits for these calls); a fatal error can.
                raise self._refusal(event.value)
            self.state = after

    async def _call(self, request_kind: Request, method: str, request, codes, timeout_s: float):
        response, _ = await self._transactions.call(self.transactional_id, method, request, codes, timeout_s,
                                                    passing=retried(request_kind))
        return response

    def _take(self, request_kind: Request, code: ErrorCode, message: str) -> None:
        """An answer's code: done, or the error it puts the producer in (raised)."""
        what = reaction(request_kind, code)
        if what is Reaction.DONE:
            return
        detail = f"{request_kind.value} for transactional id {self.transactional_id!r} failed with {code.name}"
        detail += f": {message}" if message else ""
        if what is Reaction.FENCED:
            error: ClientError = ProducerFencedError(
                f"{detail}; a newer producer with the same transactional id fenced this one: close it", code)
        elif what is Reaction.ABORTABLE:
            error = TransactionAbortableError(f"{detail}; abort the transaction", code)
        else:
            error = TransactionFatalError(f"{detail}; the producer cannot go on: close it", code)
        self._fail(what, error)
        raise error

    def _fail(self, what: Reaction, error: ClientError) -> None:
        with self._lock:
            event = E.ABORTABLE_ERROR if what is Reaction.ABORTABLE else E.FATAL_ERROR
            after = next_state(self.state, event)
            if after is None or after is self.state and self.error is not None:
                return  # outside a transaction, or already failed: the first error stands
            if after is S.ABORTING:
                return  # a batch being given up while aborting: expected
            self.state, self.error = after, error
        log.warning("transactional id %r: %s", self.transactional_id, error)
        self._wakeup()


def _add_partition_codes(response) -> list[ErrorCode]:
    (code, _), results = requests.added_partitions(response)
    return [code, *(c for c, _ in results.values())]


def _severity(request_kind: Request, code: ErrorCode) -> int:
    """Which of several partitions' errors speaks for the answer: fenced, then fatal, abortable, retried."""
    order = (Reaction.DONE, Reaction.RETRY, Reaction.FIND_COORDINATOR, Reaction.ABORTABLE, Reaction.FATAL,
             Reaction.FENCED)
    return order.index(reaction(request_kind, code))


def group_metadata_of(group: ConsumerGroupMetadata | str) -> ConsumerGroupMetadata:
    """A consumer's group_metadata(), or a bare group id (no member checks, as for a consumer using assign())."""
    if isinstance(group, str):
        group = ConsumerGroupMetadata(group)
    if not isinstance(group, ConsumerGroupMetadata) or not group.group_id.strip():
        raise ValueError(f"send_offsets_to_transaction needs the consumer's group_metadata() (or a group id), "
                         f"not {group!r}")
    return group

