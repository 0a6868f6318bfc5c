"""A transaction's states and the one table of the moves between them.

The states and their numbers are Kafka's (TransactionState); the numbers are
what __transaction_state records hold. Every change the coordinator decides
is checked against `TRANSITIONS`; anything the table does not list is a bug
(InvariantViolation). Records replayed from the log are not checked: the last
record of an id is its state, as Kafka loads it.

    state                event                                       next state
    -------------------  ------------------------------------------  -------------------
    EMPTY                InitProducerId                              EMPTY
    COMPLETE_COMMIT      InitProducerId                              EMPTY
    COMPLETE_ABORT       InitProducerId                              EMPTY
    EMPTY                AddPartitionsToTxn / AddOffsetsToTxn        ONGOING
    ONGOING              AddPartitionsToTxn / AddOffsetsToTxn        ONGOING
    COMPLETE_COMMIT      AddPartitionsToTxn / AddOffsetsToTxn        ONGOING
    COMPLETE_ABORT       AddPartitionsToTxn / AddOffsetsToTxn        ONGOING
    ONGOING              EndTxn(commit)                              PREPARE_COMMIT
    ONGOING              EndTxn(abort)                               PREPARE_ABORT
    EMPTY                EndTxn(abort) of a transaction with nothing PREPARE_ABORT
    COMPLETE_COMMIT      EndTxn(abort) of a transaction with nothing PREPARE_ABORT
    COMPLETE_ABORT       EndTxn(abort) of a transaction with nothing PREPARE_ABORT
    ONGOING              fenced: a new producer, or timed out        PREPARE_EPOCH_FENCE
    PREPARE_EPOCH_FENCE  the fenced transaction aborts               PREPARE_ABORT
    PREPARE_COMMIT       every partition has its marker              COMPLETE_COMMIT
    PREPARE_ABORT        every partition has its marker              COMPLETE_ABORT
    EMPTY                transactional.id.expiration.ms passed       DEAD
    COMPLETE_COMMIT      transactional.id.expiration.ms passed       DEAD
    COMPLETE_ABORT       transactional.id.expiration.ms passed       DEAD

PREPARE_EPOCH_FENCE lives only in memory, for the moment between bumping the
epoch and aborting with it; it is never written (as in Kafka, where it is a
pending state only). DEAD is written as a tombstone.
"""

import enum
from collections.abc import Mapping

from ..invariant import require


class TxnState(enum.IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """The name Kafka's tools print (DescribeTransactions): Empty, Ongoing, PrepareCommit, ..."""
        return "".join(word.capitalize() for word in self.name.split("_"))

    @property
    def expiration_allowed(self) -> bool:
        """Whether an idle transactional id in this state may be forgotten."""
        return self in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open or ending (its partitions may still lack markers)."""
        return self in (TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT,
                        TxnState.PREPARE_EPOCH_FENCE)


class TxnEvent(enum.Enum):
    INIT_PRODUCER_ID = "InitProducerId"
    ADD_PARTITIONS = "AddPartitionsToTxn / AddOffsetsToTxn"
    END_COMMIT = "EndTxn(commit)"
    END_ABORT = "EndTxn(abort)"
    FENCE = "fenced: a new producer, or timed out"
    MARKERS_WRITTEN = "every partition has its marker"
    EXPIRE = "transactional.id.expiration.ms passed"


_S = TxnState
_E = TxnEvent
_IDLE = (_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT)

TRANSITIONS: Mapping[tuple[TxnState, TxnEvent], TxnState] = {
    **{(state, _E.INIT_PRODUCER_ID): _S.EMPTY for state in _IDLE},
    **{(state, _E.ADD_PARTITIONS): _S.ONGOING for state in (*_IDLE, _S.ONGOING)},
    (_S.ONGOING, _E.END_COMMIT): _S.PREPARE_COMMIT,
    **{(state, _E.END_ABORT): _S.PREPARE_ABORT for state in (*_IDLE, _S.ONGOING, _S.PREPARE_EPOCH_FENCE)},
    (_S.ONGOING, _E.FENCE): _S.PREPARE_EPOCH_FENCE,
    (_S.PREPARE_COMMIT, _E.MARKERS_WRITTEN): _S.COMPLETE_COMMIT,
    (_S.PREPARE_ABORT, _E.MARKERS_WRITTEN): _S.COMPLETE_ABORT,
    **{(state, _E.EXPIRE): _S.DEAD for state in _IDLE},
}

# The states each state may move to by some event.
NEXT_STATES: Mapping[TxnState, frozenset[TxnState]] = {
    state: frozenset(after for (before, _), after in TRANSITIONS.items() if before is state) for state in TxnState
}


def next_state(state: TxnState, event: TxnEvent) -> TxnState:
    """Where `event` takes a transaction in `state`; InvariantViolation when the table has no such move."""
    after = TRANSITIONS.get((state, event))
    require(after is not None, "transaction state %s has no move for %s", state.name, event.value)
    return after  # type: ignore[return-value]
