"""The values the client hands out and takes in."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition

Headers = tuple[tuple[str, "bytes | None"], ...]


class RecordMetadata(NamedTuple):
    """Where an acknowledged record landed. offset is -1 with acks=0."""

    topic: str
    partition: int
    offset: int
    timestamp: int  # ms since the Unix epoch (the batch's create time, or the broker's LogAppendTime)


class TimestampType(enum.IntEnum):
    """Whose clock a record's timestamp is, with Kafka's numbers; str() gives Kafka's name of it."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0  # the producer's (message.timestamp.type=CreateTime)
    LOG_APPEND_TIME = 1  # the partition leader's when it appended the record (LogAppendTime)

    def __str__(self) -> str:
        return _TIMESTAMP_TYPE_NAMES[self]


_TIMESTAMP_TYPE_NAMES = {TimestampType.NO_TIMESTAMP_TYPE: "NoTimestampType",
                         TimestampType.CREATE_TIME: "CreateTime", TimestampType.LOG_APPEND_TIME: "LogAppendTime"}


class ConsumerRecord(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int  # ms since the Unix epoch
    key: bytes | None
    value: bytes | None
    headers: Headers
    leader_epoch: int  # the epoch of the leader that appended it (-1 when unknown)
    timestamp_type: TimestampType = TimestampType.CREATE_TIME  # the topic's message.timestamp.type


@dataclass(frozen=True)
class NewTopic:
    """A topic to create: num_partitions and replication_factor, or replica_assignment.

    replica_assignment maps each partition to its replicas, preferred leader
    first ({0: [1, 2], 1: [2, 3]}); -1 for the counts takes the cluster defaults.
    """

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    replica_assignment: dict[int, list[int]] | None = None
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CreatedTopic:
    name: str
    topic_id: str
    num_partitions: int
    replication_factor: int


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int  # broker id, -1 when none
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()


@dataclass(frozen=True)
class TopicDescription:
    name: str
    topic_id: str
    is_internal: bool
    partitions: tuple[PartitionInfo, ...]


class OffsetAndTimestamp(NamedTuple):
    """What Consumer.offsets_for_times() found: the first offset whose record is at or after the time asked,
    that record's timestamp, and the leader epoch the answer came under."""

    offset: int
    timestamp: int  # ms since the Unix epoch
    leader_epoch: int = -1


class OffsetAndMetadata(NamedTuple):
    """A committed offset: the next offset the group reads, free text kept with it, and the leader
    epoch of the record before it (so that a consumer resuming there can detect truncation, KIP-320)."""

    offset: int
    metadata: str = ""
    leader_epoch: int = -1


def offsets_to_commit(offsets: Mapping[TopicPartition, int | OffsetAndMetadata]
                      ) -> dict[TopicPartition, OffsetAndMetadata]:
    """The application's {partition: next offset to read} as OffsetAndMetadata; ValueError for a negative one."""
    checked = {}
    for tp, offset in offsets.items():
        committed = offset if isinstance(offset, OffsetAndMetadata) else OffsetAndMetadata(offset)
        if committed.offset < 0:
            raise ValueError(f"the offset to commit for {TopicPartition(*tp)} must not be negative, "
                             f"not {committed.offset}")
        checked[TopicPartition(*tp)] = committed
    return checked


@dataclass(frozen=True)
class GroupListing:
    """One group as ListGroups shows it; `state` in Kafka's words (Empty, Assigning, Reconciling,
    Stable, Dead), `type` "consumer", or "" for a group that only holds committed offsets."""

    group_id: str
    state: str
    type: str


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    host: str
    member_epoch: int
    state: str  # Stable, UnrevokedPartitions or UnreleasedPartitions
    subscribed_topics: tuple[str, ...]
    subscribed_regex: str | None
    assignment: frozenset[TopicPartition]  # owned now
    target_assignment: frozenset[TopicPartition]  # owned once reconciled


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[MemberDescription, ...]
    coordinator_id: int  # the broker coordinating the group
    coordinator: str  # its address, "host:port"


@dataclass(frozen=True)
class ConsumerGroupMetadata:
    """What a transactional producer needs of a consumer to commit its offsets in a transaction
    (Kafka's ConsumerGroupMetadata): the group, the member's epoch (Kafka's generationId: the member
    epoch under KIP-848, -1 for a consumer outside the group's membership) and id ("" then), so that
    the group coordinator refuses offsets from a member whose partitions moved on."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


@dataclass(frozen=True)
class PreparedTransaction:
    """A transaction whose records and offsets are all written and acknowledged, left open for another
    process to end (Kafka's PreparedTxnState, KIP-939): the producer id and epoch it was written with,
    which EndTxn must name."""

    transactional_id: str
    producer_id: int
    producer_epoch: int


@dataclass(frozen=True)
class TransactionListing:
    """A transactional id as ListTransactions shows it; `state` in Kafka's words (Empty, Ongoing,
    PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Dead)."""

    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True)
class TransactionDescription:
    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int  # Unix ms; -1 without a transaction open
    partitions: tuple[TopicPartition, ...]  # of the ongoing (or ending) transaction
    coordinator_id: int  # the broker coordinating the transactional id


@dataclass(frozen=True)
class AbortTransactionSpec:
    """A transaction open on one partition, to end with an ABORT marker (Kafka's AbortTransactionSpec):
    its producer id, the producer's epoch there and the coordinator epoch of its latest marker there (-1
    without one), as DescribeProducers shows them."""

    topic_partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int


@dataclass(frozen=True)
class ReplicaInfo:
    """One partition replica in a broker's log dir (Kafka's ReplicaInfo, with its offsets)."""

    size_bytes: int  # of its log segments on disk
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    leader: bool  # whether this broker leads the partition


@dataclass(frozen=True)
class LogDirDescription:
    """One log dir of a broker (Kafka's LogDirDescription): its filesystem's room and its replicas."""

    log_dir: str
    error: ErrorCode  # NONE, or KAFKA_STORAGE_ERROR when the broker cannot read it
    total_bytes: int  # of the filesystem holding it; -1 when unknown
    usable_bytes: int  # free there; -1 when unknown
    replicas: dict[TopicPartition, ReplicaInfo]


@dataclass(frozen=True)
class ProducerDescription:
    """An active producer of a partition, as its leader knows it (Kafka's DescribeProducers)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int  # -1 when none is cached (after a transaction's marker)
    last_timestamp_ms: int  # Unix ms when the leader last appended for it; -1 when unknown
    coordinator_epoch: int  # of the latest transaction marker; -1 without one
    current_transaction_start_offset: int  # where its open transaction began here; -1 without one
