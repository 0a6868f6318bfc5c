"""A transactional producer's side of its transactions: its states, the one table of moves between them,
and what each answer of a coordinator or leader means to it (Kafka's TransactionManager).

    state              event                                   next state
    -----------------  --------------------------------------  ---------------
    UNINITIALIZED      init_transactions()                     INITIALIZING
    INITIALIZING       init_transactions() (again, timed out)  INITIALIZING
    INITIALIZING       InitProducerId answered                 READY
    READY              begin_transaction()                     IN_TRANSACTION
    IN_TRANSACTION     commit_transaction()                    COMMITTING
    IN_TRANSACTION     prepare_transaction()                   PREPARED
    PREPARED           commit_transaction()                    COMMITTING
    PREPARED           abort_transaction()                     ABORTING
    COMMITTING         commit_transaction() (again, timed out) COMMITTING
    IN_TRANSACTION     abort_transaction()                     ABORTING
    ABORTABLE_ERROR    abort_transaction()                     ABORTING
    ABORTING           abort_transaction() (again, timed out)  ABORTING
    COMMITTING         EndTxn answered                         READY
    ABORTING           EndTxn answered                         READY
    IN_TRANSACTION     an abortable error                      ABORTABLE_ERROR
    COMMITTING         an abortable error                      ABORTABLE_ERROR
    ABORTABLE_ERROR    an abortable error                      ABORTABLE_ERROR
    ABORTING           an abortable error                      ABORTING
    any                a fatal error                           FATAL_ERROR

A move the table does not list is the application's mistake (begin twice,
commit without a transaction, send outside one): the producer refuses the call
and stays where it was. An abortable error (a batch that failed for good, a
partition or offsets the coordinator would not add, a transaction its
coordinator aborted after its timeout) leaves only abort_transaction(); a
fatal one (fenced by a newer producer with the same transactional id, a state
the coordinator refuses) leaves only close(). While
aborting, errors of the batches being given up are expected and change nothing.

PREPARED is the first phase of a two-phase commit (Kafka's KIP-939): every
record and offset of the transaction is written and acknowledged, nothing more
may be added, and the decision is someone else's to make, with EndTxn for the
producer id and epoch the transaction was written with; close() leaves it
open for them.
"""

import enum
import functools
from collections.abc import Mapping

from ..errors import ErrorCode


class ProducerTxnState(enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    PREPARED = "PREPARED"
    COMMITTING = "COMMITTING"
    ABORTING = "ABORTING"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


class ProducerTxnEvent(enum.Enum):
    INIT = "init_transactions()"
    INITIALIZED = "InitProducerId answered"
    BEGIN = "begin_transaction()"
    COMMIT = "commit_transaction()"
    PREPARE = "prepare_transaction()"
    ABORT = "abort_transaction()"
    ENDED = "EndTxn answered"
    ABORTABLE_ERROR = "an abortable error"
    FATAL_ERROR = "a fatal error"


_S = ProducerTxnState
_E = ProducerTxnEvent

TRANSITIONS: Mapping[tuple[ProducerTxnState, ProducerTxnEvent], ProducerTxnState] = {
    (_S.UNINITIALIZED, _E.INIT): _S.INITIALIZING,
    (_S.INITIALIZING, _E.INIT): _S.INITIALIZING,
    (_S.INITIALIZING, _E.INITIALIZED): _S.READY,
    (_S.READY, _E.BEGIN): _S.IN_TRANSACTION,
    (_S.IN_TRANSACTION, _E.COMMIT): _S.COMMITTING,
    (_S.IN_TRANSACTION, _E.PREPARE): _S.PREPARED,
    (_S.PREPARED, _E.COMMIT): _S.COMMITTING,
    (_S.PREPARED, _E.ABORT): _S.ABORTING,
    (_S.COMMITTING, _E.COMMIT): _S.COMMITTING,
    (_S.IN_TRANSACTION, _E.ABORT): _S.ABORTING,
    (_S.ABORTABLE_ERROR, _E.ABORT): _S.ABORTING,
    (_S.ABORTING, _E.ABORT): _S.ABORTING,
    (_S.COMMITTING, _E.ENDED): _S.READY,
    (_S.ABORTING, _E.ENDED): _S.READY,
    (_S.IN_TRANSACTION, _E.ABORTABLE_ERROR): _S.ABORTABLE_ERROR,
    (_S.COMMITTING, _E.ABORTABLE_ERROR): _S.ABORTABLE_ERROR,
    (_S.ABORTABLE_ERROR, _E.ABORTABLE_ERROR): _S.ABORTABLE_ERROR,
    (_S.ABORTING, _E.ABORTABLE_ERROR): _S.ABORTING,
    **{(state, _E.FATAL_ERROR): _S.FATAL_ERROR for state in ProducerTxnState},
}


def next_state(state: ProducerTxnState, event: ProducerTxnEvent) -> ProducerTxnState | None:
    """Where `event` takes the producer; None when the table has no such move (the caller refuses it)."""
    return TRANSITIONS.get((state, event))


# -- answers ------------------------------------------------------------------------------------------


class Request(enum.Enum):
    """What the producer asks: the coordinator's requests, and Produce for its batches."""

    INIT_PRODUCER_ID = "InitProducerId"
    ADD_PARTITIONS = "AddPartitionsToTxn"
    ADD_OFFSETS = "AddOffsetsToTxn"
    TXN_OFFSET_COMMIT = "TxnOffsetCommit"
    END_TXN = "EndTxn"
    PRODUCE = "Produce"


class Reaction(enum.Enum):
    DONE = "done"
    FIND_COORDINATOR = "find the coordinator again, then retry"
    RETRY = "retry after a backoff"
    ABORTABLE = "abortable: the transaction must be aborted"
    FENCED = "fatal: a newer producer with the same transactional id fenced this one"
    FATAL = "fatal: the producer cannot go on"


_FIND_AGAIN = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NETWORK_EXCEPTION})
_RETRY = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.CONCURRENT_TRANSACTIONS,
                    ErrorCode.REQUEST_TIMED_OUT})
_FENCED = frozenset({ErrorCode.PRODUCER_FENCED})

# Per request, the errors that differ from the rules above (Kafka's handlers of each response).
_SPECIAL: Mapping[Request, Mapping[ErrorCode, Reaction]] = {
    Request.ADD_PARTITIONS: {
        # The coordinator's broker may not know a new topic yet; OPERATION_NOT_ATTEMPTED is a partition
        # left undone because another one failed.
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: Reaction.RETRY,
        ErrorCode.OPERATION_NOT_ATTEMPTED: Reaction.RETRY,
        ErrorCode.INVALID_PRODUCER_ID_MAPPING: Reaction.ABORTABLE,
        ErrorCode.UNKNOWN_PRODUCER_ID: Reaction.ABORTABLE,
        ErrorCode.TRANSACTION_ABORTABLE: Reaction.ABORTABLE,
    },
    Request.ADD_OFFSETS: {
        ErrorCode.INVALID_PRODUCER_ID_MAPPING: Reaction.ABORTABLE,
        ErrorCode.UNKNOWN_PRODUCER_ID: Reaction.ABORTABLE,
        ErrorCode.TRANSACTION_ABORTABLE: Reaction.ABORTABLE,
        ErrorCode.INVALID_GROUP_ID: Reaction.ABORTABLE,
    },
    Request.TXN_OFFSET_COMMIT: {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: Reaction.RETRY,
        # The consumer's membership moved on (KIP-848's epochs, or the classic generation): the offsets
        # may belong to another member now, as with Kafka's CommitFailedException.
        ErrorCode.UNKNOWN_MEMBER_ID: Reaction.ABORTABLE,
        ErrorCode.ILLEGAL_GENERATION: Reaction.ABORTABLE,
        ErrorCode.FENCED_MEMBER_EPOCH: Reaction.ABORTABLE,
        ErrorCode.STALE_MEMBER_EPOCH: Reaction.ABORTABLE,
        ErrorCode.FENCED_INSTANCE_ID: Reaction.ABORTABLE,
        ErrorCode.INVALID_GROUP_ID: Reaction.ABORTABLE,
        ErrorCode.OFFSET_METADATA_TOO_LARGE: Reaction.ABORTABLE,
        ErrorCode.TRANSACTION_ABORTABLE: Reaction.ABORTABLE,
    },
    Request.END_TXN: {
        ErrorCode.TRANSACTION_ABORTABLE: Reaction.ABORTABLE,
    },
    Request.INIT_PRODUCER_ID: {},
}


def reaction(request: Request, code: ErrorCode) -> Reaction:
    """What the producer does with `code` in the answer to `request`.

    NONE is done; coordinator moves are found again and retried; a coordinator
    still loading or ending the last transaction (CONCURRENT_TRANSACTIONS) is
    waited out; PRODUCER_FENCED means a newer producer took the transactional
    id. INVALID_PRODUCER_EPOCH (the transaction ended under the producer: its
    coordinator aborted it after its timeout) and a batch that failed for good
    leave the transaction abortable (KIP-588): the abort that follows tells
    whether the producer may go on or was fenced. Whatever else a coordinator
    answers is fatal, as in Kafka: the producer's view of its transaction can no
    longer be trusted.
    """
    if code is ErrorCode.NONE:
        return Reaction.DONE
    if code in _FENCED:
        return Reaction.FENCED
    if request is Request.PRODUCE or code is ErrorCode.INVALID_PRODUCER_EPOCH:
        return Reaction.ABORTABLE
    special = _SPECIAL[request].get(code)
    if special is not None:
        return special
    if code in _FIND_AGAIN:
        return Reaction.FIND_COORDINATOR
    if code in _RETRY:
        return Reaction.RETRY
    return Reaction.FATAL


@functools.cache
def retried(request: Request) -> frozenset[ErrorCode]:
    """The errors after which `request` is sent again (to the coordinator found again, or after a backoff)."""
    return frozenset(code for code in ErrorCode
                     if reaction(request, code) in (Reaction.RETRY, Reaction.FIND_COORDINATOR))
