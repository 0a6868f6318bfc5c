"""The core's inputs and outputs, as plain data.

Inputs are requests and answers the driver decodes from the wire (or from the
controller); outputs are work for the driver, gathered in a `Ready` batch. No
type here holds record bytes the core would look into: `records` fields are
opaque values passed from the wire to the log and back.
"""

from dataclasses import dataclass
from typing import Any

from .epoch_cache import EpochEndOffset, EpochEntry
from .errors import ErrorCode
from .producer_state import ProducerAppend
from .records import BatchInfo
from .txn.aborted import AbortedTxn
from .txn.markers import TxnMarker

NO_LEADER = -1
# The replica id of a consumer's fetch; followers send their broker id.
CONSUMER_REPLICA_ID = -1
# A leader epoch of -1 in a request skips the epoch check (Kafka's convention).
NO_EPOCH = -1

# ListOffsets' timestamps that ask for the log start offset and for the end a consumer may read.
EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1

ACKS_NONE = 0
ACKS_LEADER = 1
ACKS_ALL = -1


# ---- where brokers listen -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    broker_id: int
    host: str
    port: int
    rack: str = ""

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


# ---- from the controller ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One partition's entry in a LeaderAndIsr request (and in the controller's registry)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    replicas: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class IsrMember:
    """An ISR member and the broker epoch the leader saw it fetch with (KIP-903)."""

    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class AlterPartitionRequest:
    """A leader's ISR proposal, fenced by its leader epoch and the partition epoch it started from."""

    leader_id: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[IsrMember, ...]

    @property
    def isr(self) -> tuple[int, ...]:
        return tuple(member.broker_id for member in self.new_isr)


@dataclass(frozen=True, slots=True)
class AlterPartitionResponse:
    error: ErrorCode
    state: PartitionState | None = None


# ---- from clients and other brokers ----------------------------------------


@dataclass(frozen=True, slots=True)
class ProduceRequest:
    """Validated batches for one partition; `record_count` comes from their headers, and so does
    `producer` when an idempotent producer sent them (then they are one batch)."""

    request_id: Any
    records: Any
    record_count: int
    acks: int
    timeout_ms: int
    current_leader_epoch: int = NO_EPOCH
    producer: ProducerAppend | None = None
    # A transaction marker (WriteTxnMarkers): `records` is its control batch, checked against the
    # producer's state here instead of `producer`.
    marker: TxnMarker | None = None


# DeleteRecords' offset that means the high watermark (Kafka's HIGH_WATERMARK sentinel).
DELETE_TO_HIGH_WATERMARK = -1


@dataclass(frozen=True, slots=True)
class DeleteRecordsRequest:
    """Delete a partition's records before `offset` (DeleteRecords); answered with a CompleteDeleteRecords
    once every ISR member's log starts there, or at `timeout_ms`."""

    request_id: Any
    offset: int
    timeout_ms: int
    current_leader_epoch: int = NO_EPOCH


@dataclass(frozen=True, slots=True)
class FetchRequest:
    replica_id: int
    fetch_offset: int
    max_bytes: int
    last_fetched_epoch: int = NO_EPOCH
    current_leader_epoch: int = NO_EPOCH
    # The follower's broker epoch (its registration's czxid): fetch state from
    # an older incarnation of the follower must not count (KIP-903).
    replica_epoch: int = -1
    max_wait_ms: int = 0
    # A consumer's isolation.level=read_committed: read below the last stable offset only.
    read_committed: bool = False
    # A follower's own log start offset (the leader's low watermark is the lowest of its ISR's); -1 from consumers.
    log_start_offset: int = -1

    @property
    def from_follower(self) -> bool:
        return self.replica_id != CONSUMER_REPLICA_ID


@dataclass(frozen=True, slots=True)
class FetchResponse:
    """A leader's answer for one partition, as the follower's core takes it."""

    error: ErrorCode
    high_watermark: int = -1
    log_start_offset: int = -1
    diverging_epoch: EpochEndOffset | None = None
    batches: tuple[BatchInfo, ...] = ()
    records: Any = None


# ---- returned by handle_fetch and handle_list_offsets -----------------------


@dataclass(frozen=True, slots=True)
class ListedOffset:
    """An answer to ListOffsets for one partition; -1 for an offset or timestamp not found."""

    error: ErrorCode
    offset: int = -1
    timestamp_ms: int = -1
    leader_epoch: int = -1



@dataclass(frozen=True, slots=True)
class FetchPlan:
    """How to answer a fetch: read [read_offset, max_offset) from the log, then respond.

    `read_offset == max_offset` means there is nothing to read yet: the driver
    may hold the request (up to its max_wait_ms) and ask again when the log
    end offset or the high watermark moves.
    """

    error: ErrorCode
    high_watermark: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1
    diverging_epoch: EpochEndOffset | None = None
    read_offset: int = 0
    max_offset: int = 0
    max_bytes: int = 0
    last_stable_offset: int = -1
    # A follower whose log starts before the leader's (DeleteRecords, retention) is told at once.
    start_moved: bool = False

    @property
    def has_data(self) -> bool:
        return self.error == ErrorCode.NONE and self.diverging_epoch is None and self.read_offset < self.max_offset

    @property
    def quiet(self) -> bool:
        """Nothing to answer yet: no records, no error, no divergence, no log start to follow. A long-polling
        fetch whose partitions are all quiet is held until one is not, or its wait is over."""
        return (not self.has_data and self.error == ErrorCode.NONE and self.diverging_epoch is None
                and not self.start_moved)


# ---- outputs: log operations, applied in order, before anything is sent ----


@dataclass(frozen=True, slots=True)
class AppendAsLeader:
    records: Any
    leader_epoch: int
    base_offset: int
    last_offset: int
    aborted: tuple[AbortedTxn, ...] = ()  # transactions its marker aborted, for the .txnindex


@dataclass(frozen=True, slots=True)
class AppendAsFollower:
    records: Any
    batches: tuple[BatchInfo, ...]
    aborted: tuple[AbortedTxn, ...] = ()


@dataclass(frozen=True, slots=True)
class TruncateTo:
    offset: int


@dataclass(frozen=True, slots=True)
class TruncateFullyAndStartAt:
    offset: int


@dataclass(frozen=True, slots=True)
class DeleteRecordsBefore:
    """Move the log start offset up to `offset` (DeleteRecords, or a follower following its leader's)."""

    offset: int


LogOp = AppendAsLeader | AppendAsFollower | TruncateTo | TruncateFullyAndStartAt | DeleteRecordsBefore


# ---- outputs: messages to send ---------------------------------------------


@dataclass(frozen=True, slots=True)
class SendFetch:
    """Fetch from `leader_id`; answer with handle_fetch_response(fetch_id, ...)."""

    fetch_id: int
    leader_id: int
    request: FetchRequest


@dataclass(frozen=True, slots=True)
class ProposeIsr:
    """Send AlterPartition to the controller; answer with handle_alter_partition_response(proposal_id, ...)."""

    proposal_id: int
    request: AlterPartitionRequest


Message = SendFetch | ProposeIsr


# ---- outputs: answers to produce requests ----------------------------------


@dataclass(frozen=True, slots=True)
class CompleteProduce:
    request_id: Any
    error: ErrorCode
    base_offset: int = -1
    message: str = ""  # what was wrong, when the error alone does not say (a producer's epoch, ...)
    first_max_timestamp: int = -1  # a retried batch's maxTimestamp as first appended (else -1)


@dataclass(frozen=True, slots=True)
class CompleteDeleteRecords:
    request_id: Any
    error: ErrorCode
    low_watermark: int = -1  # the lowest log start over the live or in-sync replicas when answered
    message: str = ""


Completion = CompleteProduce | CompleteDeleteRecords


# ---- outputs: events for metrics and logs -----------------------------------


@dataclass(frozen=True, slots=True)
class IsrChanged:
    """The committed ISR of a partition led here changed: the controller accepted the
    leader's proposal, or a LeaderAndIsr for the same leader epoch brought a new one."""

    before: tuple[int, ...]
    after: tuple[int, ...]

    @property
    def shrunk(self) -> bool:
        return not set(self.before) <= set(self.after)

    @property
    def expanded(self) -> bool:
        return not set(self.after) <= set(self.before)


@dataclass(frozen=True, slots=True)
class Ready:
    """One batch of work. Apply in this order: log_ops, then the checkpoints
    (epoch_entries, high_watermark), then send messages, then completions;
    isr_changes are events for metrics and logs, in the order they happened."""

    log_ops: tuple[LogOp, ...] = ()
    epoch_entries: tuple[EpochEntry, ...] | None = None
    high_watermark: int | None = None
    messages: tuple[Message, ...] = ()
    completions: tuple[Completion, ...] = ()
    isr_changes: tuple[IsrChanged, ...] = ()

    @property
    def empty(self) -> bool:
        return not (
            self.log_ops
            or self.epoch_entries is not None
            or self.high_watermark is not None
            or self.messages
            or self.completions
            or self.isr_changes
        )
