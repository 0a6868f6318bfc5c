"""The records of `__consumer_offsets`: every change of a group, and every committed offset.

As Kafka stores them, a record's type is the version at the head of its key,
so that compaction keeps one record per (type, identity); a value starts with
its own schema version; a deleted thing is a tombstone (no value). The group
coordinator writes these records before it answers, and rebuilds its state by
replaying them, live and after a failover alike.

    type  key                              value
    ----  -------------------------------  ------------------------------------------------
    1     group, topic, partition          OffsetCommit: offset, leader epoch, metadata, time
    3     group                            GroupMetadata: group epoch
    4     group                            GroupSubscriptions: partition count of each subscribed topic
    5     group, member                    MemberMetadata: instance, rack, client, subscription
    6     group                            TargetAssignmentMetadata: assignment epoch
    7     group, member                    TargetAssignmentMember: the member's target partitions
    8     group, member                    CurrentMemberAssignment: epochs, state, owned, revoking

The encoding is record_codec's: big-endian integers, strings as an int16
length (-1 for none) and UTF-8, lists as an int32 count.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from ..record_codec import Partitions, Reader, Writer

VALUE_VERSION = 0


class RecordType:
    OFFSET_COMMIT = 1
    GROUP_METADATA = 3
    GROUP_SUBSCRIPTIONS = 4
    MEMBER_METADATA = 5
    TARGET_ASSIGNMENT_METADATA = 6
    TARGET_ASSIGNMENT_MEMBER = 7
    CURRENT_MEMBER_ASSIGNMENT = 8


class RecordError(ValueError):
    """Bytes in __consumer_offsets that are not a record this coordinator writes."""


# -- the values -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    epoch: int


@dataclass(frozen=True, slots=True)
class GroupSubscriptionsValue:
    partition_counts: Mapping[str, int]  # of every topic some member subscribes to and that exists


@dataclass(frozen=True, slots=True)
class MemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None


@dataclass(frozen=True, slots=True)
class TargetAssignmentMetadataValue:
    assignment_epoch: int


@dataclass(frozen=True, slots=True)
class TargetAssignmentMemberValue:
    partitions: Partitions


@dataclass(frozen=True, slots=True)
class CurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int  # MemberState's value
    assigned: Partitions
    pending_revocation: Partitions


Value = (OffsetCommitValue | GroupMetadataValue | GroupSubscriptionsValue | MemberMetadataValue
         | TargetAssignmentMetadataValue | TargetAssignmentMemberValue | CurrentMemberAssignmentValue)


# -- the record -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupRecord:
    """One record: its type and identity (the key), and its value (None: a tombstone)."""

    type: int
    group_id: str
    member_id: str = ""  # types 5, 7, 8
    topic: str = ""  # type 1
    partition: int = -1  # type 1
    value: Value | None = None

    def encode(self) -> tuple[bytes, bytes | None]:
        return encode_key(self), None if self.value is None else encode_value(self.type, self.value)


def offset_commit(group_id: str, topic: str, partition: int, value: OffsetCommitValue | None) -> GroupRecord:
    return GroupRecord(RecordType.OFFSET_COMMIT, group_id, topic=topic, partition=partition, value=value)


def group_metadata(group_id: str, value: GroupMetadataValue | None) -> GroupRecord:
    return GroupRecord(RecordType.GROUP_METADATA, group_id, value=value)


def group_subscriptions(group_id: str, value: GroupSubscriptionsValue | None) -> GroupRecord:
    return GroupRecord(RecordType.GROUP_SUBSCRIPTIONS, group_id, value=value)


def member_metadata(group_id: str, member_id: str, value: MemberMetadataValue | None) -> GroupRecord:
    return GroupRecord(RecordType.MEMBER_METADATA, group_id, member_id, value=value)


def target_assignment_metadata(group_id: str, value: TargetAssignmentMetadataValue | None) -> GroupRecord:
    return GroupRecord(RecordType.TARGET_ASSIGNMENT_METADATA, group_id, value=value)


def target_assignment_member(group_id: str, member_id: str,
                             value: TargetAssignmentMemberValue | None) -> GroupRecord:
    return GroupRecord(RecordType.TARGET_ASSIGNMENT_MEMBER, group_id, member_id, value=value)


def current_member_assignment(group_id: str, member_id: str,
                              value: CurrentMemberAssignmentValue | None) -> GroupRecord:
    return GroupRecord(RecordType.CURRENT_MEMBER_ASSIGNMENT, group_id, member_id, value=value)


# -- encoding -------------------------------------------------------------------------------


def _writer() -> Writer:
    return Writer("group record")


def _reader(data: bytes) -> Reader:
    return Reader(data, RecordError, "group record")


def encode_key(record: GroupRecord) -> bytes:
    writer = _writer()
    writer.int16(record.type)
    writer.string(record.group_id)
    if record.type == RecordType.OFFSET_COMMIT:
        writer.string(record.topic)
        writer.int32(record.partition)
    elif record.type in (RecordType.MEMBER_METADATA, RecordType.TARGET_ASSIGNMENT_MEMBER,
                         RecordType.CURRENT_MEMBER_ASSIGNMENT):
        writer.string(record.member_id)
    return writer.bytes()


def encode_value(record_type: int, value: Value) -> bytes:
    writer = _writer()
    writer.int16(VALUE_VERSION)
    if isinstance(value, OffsetCommitValue):
        writer.int64(value.offset)
        writer.int32(value.leader_epoch)
        writer.string(value.metadata)
        writer.int64(value.commit_timestamp_ms)
    elif isinstance(value, GroupMetadataValue):
        writer.int32(value.epoch)
    elif isinstance(value, GroupSubscriptionsValue):
        writer.int32(len(value.partition_counts))
        for topic in sorted(value.partition_counts):
            writer.string(topic)
            writer.int32(value.partition_counts[topic])
    elif isinstance(value, MemberMetadataValue):
        writer.string(value.instance_id)
        writer.string(value.rack_id)
        writer.string(value.client_id)
        writer.string(value.client_host)
        writer.strings(value.subscribed_topic_names)
        writer.string(value.subscribed_topic_regex)
        writer.int32(value.rebalance_timeout_ms)
        writer.string(value.server_assignor)
    elif isinstance(value, TargetAssignmentMetadataValue):
        writer.int32(value.assignment_epoch)
    elif isinstance(value, TargetAssignmentMemberValue):
        writer.partitions(value.partitions)
    else:
        writer.int32(value.member_epoch)
        writer.int32(value.previous_member_epoch)
        writer.int8(value.state)
        writer.partitions(value.assigned)
        writer.partitions(value.pending_revocation)
    return writer.bytes()


def decode(key: bytes, value: bytes | None) -> GroupRecord:
    """A record from its key and value bytes; RecordError for anything else."""
    reader = _reader(key)
    record_type = reader.int16()
    group_id = reader.text()
    topic, partition, member_id = "", -1, ""
    if record_type == RecordType.OFFSET_COMMIT:
        topic, partition = reader.text(), reader.int32()
    elif record_type in (RecordType.MEMBER_METADATA, RecordType.TARGET_ASSIGNMENT_MEMBER,
                         RecordType.CURRENT_MEMBER_ASSIGNMENT):
        member_id = reader.text()
    elif record_type not in (RecordType.GROUP_METADATA, RecordType.GROUP_SUBSCRIPTIONS,
                             RecordType.TARGET_ASSIGNMENT_METADATA):
        raise RecordError(f"a record of unknown type {record_type}")
    reader.done()
    decoded = None if value is None else _decode_value(record_type, value)
    return GroupRecord(record_type, group_id, member_id, topic, partition, decoded)


def _decode_value(record_type: int, data: bytes) -> Value:
    reader = _reader(data)
    version = reader.int16()
    if version != VALUE_VERSION:
        raise RecordError(f"a record of type {record_type} has value version {version}, this build reads "
                          f"{VALUE_VERSION}")
    value: Value
    if record_type == RecordType.OFFSET_COMMIT:
        value = OffsetCommitValue(reader.int64(), reader.int32(), reader.text(), reader.int64())
    elif record_type == RecordType.GROUP_METADATA:
        value = GroupMetadataValue(reader.int32())
    elif record_type == RecordType.GROUP_SUBSCRIPTIONS:
        value = GroupSubscriptionsValue({reader.text(): reader.int32() for _ in range(reader.count())})
    elif record_type == RecordType.MEMBER_METADATA:
        value = MemberMetadataValue(reader.string(), reader.string(), reader.text(), reader.text(),
                                    reader.strings(), reader.string(), reader.int32(), reader.string())
    elif record_type == RecordType.TARGET_ASSIGNMENT_METADATA:
        value = TargetAssignmentMetadataValue(reader.int32())
    elif record_type == RecordType.TARGET_ASSIGNMENT_MEMBER:
        value = TargetAssignmentMemberValue(reader.partitions())
    else:
        value = CurrentMemberAssignmentValue(reader.int32(), reader.int32(), reader.int8(), reader.partitions(),
                                             reader.partitions())
    reader.done()
    return value
