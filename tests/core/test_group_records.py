"""The records of __consumer_offsets: every value survives encoding, keys identify what compaction keeps, and
bytes that are not a record are refused with a reason."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.core.group import records as rec

names = st.text(min_size=1, max_size=20)
partitions = st.dictionaries(names, st.frozensets(st.integers(0, 2**31 - 1), max_size=5), max_size=4)
values = st.one_of(
    st.builds(rec.OffsetCommitValue, st.integers(0, 2**63 - 1), st.integers(-1, 2**31 - 1), st.text(max_size=50),
              st.integers(0, 2**63 - 1)),
    st.builds(rec.GroupMetadataValue, st.integers(0, 2**31 - 1)),
    st.builds(rec.GroupSubscriptionsValue, st.dictionaries(names, st.integers(1, 10_000), max_size=4)),
    st.builds(rec.MemberMetadataValue, st.none() | names, st.none() | names, st.text(max_size=20),
              st.text(max_size=20), st.lists(names, max_size=3).map(tuple), st.none() | names,
              st.integers(0, 2**31 - 1), st.none() | st.sampled_from(["uniform", "range"])),
    st.builds(rec.TargetAssignmentMetadataValue, st.integers(0, 2**31 - 1)),
    st.builds(rec.TargetAssignmentMemberValue, partitions),
    st.builds(rec.CurrentMemberAssignmentValue, st.integers(-2, 2**31 - 1), st.integers(-2, 2**31 - 1),
              st.integers(1, 3), partitions, partitions),
)
TYPES = {rec.OffsetCommitValue: rec.RecordType.OFFSET_COMMIT, rec.GroupMetadataValue: rec.RecordType.GROUP_METADATA,
         rec.GroupSubscriptionsValue: rec.RecordType.GROUP_SUBSCRIPTIONS,
         rec.MemberMetadataValue: rec.RecordType.MEMBER_METADATA,
         rec.TargetAssignmentMetadataValue: rec.RecordType.TARGET_ASSIGNMENT_METADATA,
         rec.TargetAssignmentMemberValue: rec.RecordType.TARGET_ASSIGNMENT_MEMBER,
         rec.CurrentMemberAssignmentValue: rec.RecordType.CURRENT_MEMBER_ASSIGNMENT}


@given(values, names, names, names, st.integers(0, 10_000))
def test_every_record_decodes_to_what_was_encoded(value, group_id, member_id, topic, partition):
    kind = TYPES[type(value)]
    record = rec.GroupRecord(kind, group_id,
                             member_id if kind in (5, 7, 8) else "",
                             topic if kind == 1 else "", partition if kind == 1 else -1, value)
    key, encoded = record.encode()
    assert rec.decode(key, encoded) == record
    assert rec.decode(key, None) == rec.GroupRecord(record.type, record.group_id, record.member_id, record.topic,
                                                    record.partition, None)


def test_keys_name_the_identity_compaction_keeps_one_of():
    first = rec.offset_commit("g", "t", 0, rec.OffsetCommitValue(1, -1, "", 0)).encode()[0]
    later = rec.offset_commit("g", "t", 0, rec.OffsetCommitValue(9, 3, "m", 5)).encode()[0]
    other = rec.offset_commit("g", "t", 1, rec.OffsetCommitValue(1, -1, "", 0)).encode()[0]
    assert first == later != other
    assert rec.member_metadata("g", "m", None).encode()[0] != rec.current_member_assignment("g", "m", None).encode()[0]


@pytest.mark.parametrize(("key", "value", "why"), [
    (b"\x00\x63\x00\x01g", None, "unknown type 99"),
    (b"\x00\x03\x00\x05g", None, "runs past its end"),
    (b"\x00", None, "ends early"),
    (b"\x00\x03\x00\x01gX", None, "too many"),
    (rec.group_metadata("g", None).encode()[0], b"\x00\x07\x00\x00\x00\x01", "value version 7"),
])
def test_bytes_that_are_not_a_record_are_refused_with_a_reason(key, value, why):
    with pytest.raises(rec.RecordError, match=why):
        rec.decode(key, value)


def test_a_group_lands_on_the_partition_kafka_would_put_it_on():
    from replog.core.group.placement import java_string_hash, partition_for
    # Values Java computes: "".hashCode() == 0, "a" == 97, "hello" == 99162322, "polygenelubricants" ==
    # Integer.MIN_VALUE (which Kafka's Utils.abs maps to 0), and a non-BMP character hashes as two code units.
    assert [java_string_hash(s) for s in ("", "a", "hello")] == [0, 97, 99162322]
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert partition_for("polygenelubricants", 50) == 0
    assert java_string_hash("\U0001f600") == 31 * 0xD83D + 0xDE00
    assert partition_for("my-group", 50) == abs(java_string_hash("my-group")) % 50
