"""What the transaction coordinator is asked and answers, and what it asks its driver to do, as plain
values (a conversion module in replog.rpc maps them to and from the wire)."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ..errors import ErrorCode
from ..topic_partition import TopicPartition
from .metadata import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from .records import TxnRecord

T = TypeVar("T")

# Every topic of the cluster and its partition count, as the coordinator's broker knows them.
TopicsImage = Mapping[str, int]


@dataclass(frozen=True, slots=True)
class TxnConfig:
    """The coordinator's settings, under Kafka's names."""

    max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    transactional_id_expiration_ms: int = 7 * 24 * 3_600_000  # transactional.id.expiration.ms
    offsets_topic_partitions: int = 50  # offsets.topic.num.partitions, for AddOffsetsToTxn


@dataclass(frozen=True, slots=True)
class InitProducerIdRequest:
    transactional_id: str
    transaction_timeout_ms: int
    # The producer's current id and epoch, to bump them after an error (KIP-360); -1 for a new producer.
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class ProducerIdAndEpoch:
    """An answer that hands the producer the id and epoch to write its next transaction with."""

    error: ErrorCode
    message: str = ""
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class AddPartitionsRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: frozenset[TopicPartition]
    # KIP-890: a partition leader asks whether the partitions are in the producer's ongoing transaction,
    # before it appends the producer's first transactional batch; nothing is added.
    verify_only: bool = False
    # KIP-890 part 2 (transactions v2): a partition leader adds its partition for the producer, before it
    # appends the producer's first transactional batch there; the producer sends no AddPartitionsToTxn.
    # Decided as the producer's own add would be; it is the leader's to ask (ClusterAction).
    leader_add: bool = False


@dataclass(frozen=True, slots=True)
class AddPartitionsResponse:
    error: ErrorCode  # NONE when each partition has its own result
    message: str = ""
    results: Mapping[TopicPartition, ErrorCode] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AddHeld:
    """The answer to an AddPartitionsToTxn that came while the producer's last transaction was completing,
    or while a change of its transaction was being written: none yet. The coordinator holds it and decides
    it once that is done; the driver answers it with the `AddAnswered` event of the Result that decides its
    partitions (see `TransactionCoordinator.add_partitions`), or with CONCURRENT_TRANSACTIONS if it gives up
    waiting (`release_held`). Several adds of one id may be held at once (partition leaders adding their
    partitions side by side): they are decided together."""

    transactional_id: str
    partitions: frozenset[TopicPartition] = frozenset()


@dataclass(frozen=True, slots=True)
class AddOffsetsRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str


@dataclass(frozen=True, slots=True)
class EndTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool


@dataclass(frozen=True, slots=True)
class Answer:
    error: ErrorCode
    message: str = ""


OK = Answer(ErrorCode.NONE)


@dataclass(frozen=True, slots=True)
class DescribedTransaction:
    transactional_id: str
    error: ErrorCode = ErrorCode.NONE
    message: str = ""
    state: str = ""  # Kafka's name: Empty, Ongoing, PrepareCommit, ...
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 0
    start_timestamp_ms: int = -1
    partitions: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True, slots=True)
class ListedTransaction:
    transactional_id: str
    producer_id: int
    state: str


# -- what the driver does -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WriteMarkers:
    """Write a COMMIT or ABORT marker for the producer into each of these partitions (WriteTxnMarkers to
    their leaders), and report each partition's outcome with `marker_written`. Only once the records of
    the same Result are durable: a marker must never precede the decision it carries."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool
    partitions: frozenset[TopicPartition]


# -- events: what happened, for logs and metrics --------------------------------------------------


@dataclass(frozen=True, slots=True)
class TransactionTimedOut:
    transactional_id: str
    producer_id: int
    timeout_ms: int


@dataclass(frozen=True, slots=True)
class ProducerFenced:
    """A new producer with the same transactional id fenced the old one, aborting its transaction."""

    transactional_id: str
    producer_id: int
    fenced_epoch: int


@dataclass(frozen=True, slots=True)
class TransactionCompleted:
    transactional_id: str
    producer_id: int
    commit: bool
    duration_ms: int  # from the first partition added to the last marker written


@dataclass(frozen=True, slots=True)
class CoordinatorFenced:
    """A partition leader has markers from a newer coordinator of this transactional id: this one is stale
    and stops sending; its driver should give the partition up."""

    transactional_id: str
    partition: TopicPartition


@dataclass(frozen=True, slots=True)
class AddAnswered:
    """Held AddPartitionsToTxns are decided: once the Result's records are written, answer each held add of
    the id whose partitions are all in `response.results` (they are in the transaction then) with its own
    partitions' results. If the records are refused, the coordinator holds the adds again or lets them go
    (`release_held` then says so)."""

    transactional_id: str
    response: AddPartitionsResponse

    def answer_for(self, partitions: frozenset[TopicPartition]) -> AddPartitionsResponse | None:
        """The answer of a held add of these partitions, or None when this decision does not cover them all."""
        decided = self.response.results
        if not partitions <= decided.keys():
            return None
        return AddPartitionsResponse(ErrorCode.NONE, "", {p: decided[p] for p in partitions})


Event = TransactionTimedOut | ProducerFenced | TransactionCompleted | CoordinatorFenced | AddAnswered


@dataclass(frozen=True, slots=True)
class Result(Generic[T]):
    """An operation's answer; the records to write before it is given (acks=all); the markers to send
    once those records are durable; and what happened."""

    response: T
    records: tuple[TxnRecord, ...] = ()
    markers: tuple[WriteMarkers, ...] = ()
    events: tuple[Event, ...] = ()
