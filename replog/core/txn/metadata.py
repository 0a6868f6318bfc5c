"""One transactional id as the coordinator knows it: its producer, epochs and current transaction.

A `TransactionMetadata` is immutable; a change makes a new one through
`moved`, which follows the state table and checks what must hold in every
state. The fields are Kafka's (TransactionMetadata): besides the producer id
and epoch, the previous ones, which let the coordinator tell a retry of a call
that already succeeded from a zombie's call, and the next producer id, set
while a transaction that used the last epoch of its producer id ends.
"""

from dataclasses import dataclass, replace

from ..invariant import require
from ..topic_partition import TopicPartition
from .state import TxnEvent, TxnState, next_state

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
# Epochs are int16; a producer never writes with the last one, so that the coordinator can always
# fence it by one more bump (Kafka's TransactionMetadata.isEpochExhausted).
PRODUCER_EPOCH_MAX = 2**15 - 1


def epoch_exhausted(epoch: int) -> bool:
    return epoch >= PRODUCER_EPOCH_MAX - 1


@dataclass(frozen=True, slots=True)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int  # transaction.timeout.ms, as the producer asked
    state: TxnState
    last_update_timestamp_ms: int
    partitions: frozenset[TopicPartition] = frozenset()
    start_timestamp_ms: int = -1  # when the current (or last) transaction began
    last_producer_epoch: int = NO_PRODUCER_EPOCH  # the epoch before the last bump; -1 after a newer instance's fence
    previous_producer_id: int = NO_PRODUCER_ID  # the id before the last change of producer id
    next_producer_id: int = NO_PRODUCER_ID  # the id the producer moves to once this transaction ends

    def __post_init__(self) -> None:
        require(self.producer_id >= 0, "transactional id %r has producer id %d", self.transactional_id,
                self.producer_id)
        require(0 <= self.producer_epoch <= PRODUCER_EPOCH_MAX, "transactional id %r has producer epoch %d",
                self.transactional_id, self.producer_epoch)
        require(self.timeout_ms > 0, "transactional id %r has transaction timeout %d ms", self.transactional_id,
                self.timeout_ms)
        require(self.state is not TxnState.DEAD, "a DEAD transactional id is forgotten, not kept")
        require(bool(self.partitions) <= self.state.in_transaction,
                "transactional id %r in state %s still names partitions %s", self.transactional_id,
                self.state.name, sorted(self.partitions))
        require((self.next_producer_id != NO_PRODUCER_ID) <= (self.state in (TxnState.PREPARE_COMMIT,
                                                                               TxnState.PREPARE_ABORT)),
                "transactional id %r names a next producer id outside PREPARE_*", self.transactional_id)

    @property
    def epoch_exhausted(self) -> bool:
        return epoch_exhausted(self.producer_epoch)

    def moved(self, event: TxnEvent, now_ms: int, **changes) -> "TransactionMetadata":
        """The metadata after `event`: the table gives the state, `changes` the other fields."""
        after = replace(self, state=next_state(self.state, event), last_update_timestamp_ms=now_ms, **changes)
        require(after.producer_id != self.producer_id or after.producer_epoch >= self.producer_epoch,
                "transactional id %r: epoch %d would go back to %d", self.transactional_id, self.producer_epoch,
                after.producer_epoch)
        return after
