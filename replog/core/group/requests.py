"""What the group coordinator is asked and answers, as plain values (replog.rpc.coordinator_convert
maps them to and from the wire)."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ..errors import ErrorCode
from ..topic_partition import TopicPartition
from .member import Partitions
from .records import GroupRecord

T = TypeVar("T")

# Every topic of the cluster and its partition count, as the coordinator's broker knows them.
TopicsImage = Mapping[str, int]


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """The coordinator's settings, under Kafka's names (group.consumer.*, offsets.*)."""

    session_timeout_ms: int = 45_000  # group.consumer.session.timeout.ms
    heartbeat_interval_ms: int = 5_000  # group.consumer.heartbeat.interval.ms
    max_size: int = 2**31 - 1  # group.consumer.max.size
    assignors: tuple[str, ...] = ("uniform", "range")  # group.consumer.assignors; the first is the default
    offsets_retention_ms: int = 7 * 24 * 3_600_000  # offsets.retention.minutes
    offset_metadata_max_bytes: int = 4_096  # offset.metadata.max.bytes
    default_rebalance_timeout_ms: int = 300_000  # a member that sends none (max.poll.interval.ms)


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = 0  # 0: unchanged
    subscribed_topic_names: tuple[str, ...] | None = None  # None: unchanged
    subscribed_topic_regex: str | None = None  # None: unchanged; "": none
    server_assignor: str | None = None  # None: unchanged
    owned: Partitions | None = None  # None: unchanged
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    error: ErrorCode
    message: str = ""
    member_id: str = ""
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    assignment: Partitions | None = None  # None: unchanged


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""


@dataclass(frozen=True, slots=True)
class CommitRequest:
    group_id: str
    member_id: str
    member_epoch: int  # -1: a commit from outside the group (assign + commit)
    offsets: Mapping[TopicPartition, OffsetCommit] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TxnCommitRequest:
    """TxnOffsetCommit: offsets committed in a producer's transaction, visible only once it commits."""

    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    member_id: str = ""  # empty, with member_epoch -1, to skip the membership check
    member_epoch: int = -1
    offsets: Mapping[TopicPartition, OffsetCommit] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PartitionError:
    error: ErrorCode
    message: str = ""


OK = PartitionError(ErrorCode.NONE)


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int = -1
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp_ms: int = -1
    # UNSTABLE_OFFSET_COMMIT when the caller asked for stable offsets and a transaction has one pending.
    error: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    group_type: str  # "consumer", or "" for a group that only holds offsets
    state: int  # GroupState's value


@dataclass(frozen=True, slots=True)
class DescribedMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str
    assignment: Partitions
    target_assignment: Partitions
    state: int  # MemberState's value


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    group_id: str
    error: ErrorCode = ErrorCode.NONE
    message: str = ""
    state: int = 0
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor: str = ""
    members: tuple[DescribedMember, ...] = ()


# -- events: what changed, for logs and metrics ----------------------------------------------


@dataclass(frozen=True, slots=True)
class AssignmentChanged:
    group_id: str
    member_id: str
    member_epoch: int
    gained: frozenset[TopicPartition]
    revoking: frozenset[TopicPartition]  # moved to pending revocation
    released: frozenset[TopicPartition]  # given up for good


@dataclass(frozen=True, slots=True)
class MemberJoined:
    group_id: str
    member_id: str
    instance_id: str | None


@dataclass(frozen=True, slots=True)
class MemberRemoved:
    group_id: str
    member_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class GroupEpochBumped:
    group_id: str
    group_epoch: int
    reason: str


@dataclass(frozen=True, slots=True)
class GroupStable:
    group_id: str
    group_epoch: int


Event = AssignmentChanged | MemberJoined | MemberRemoved | GroupEpochBumped | GroupStable


@dataclass(frozen=True, slots=True)
class Result(Generic[T]):
    """An operation's answer, the records to write before it is given, and what happened."""

    response: T
    records: tuple[GroupRecord, ...] = ()
    events: tuple[Event, ...] = ()
