"""How a read is cut into tasks and a micro-batch into shares: spark-sql-kafka's rules, pure."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.core.offset_ranges import (
    OffsetRange,
    capped_ends,
    lost_below_start,
    lost_past_end,
    may_trigger,
    ranges_between,
    split_ranges,
    waiting_records,
)
from replog.core.topic_partition import TopicPartition

A, B, C = (TopicPartition("t", p) for p in range(3))


def test_one_range_per_partition_with_records_to_read():
    ranges = ranges_between({A: 0, B: 5, C: 7}, {A: 10, B: 5, C: 9})
    assert ranges == [OffsetRange(A, 0, 10), OffsetRange(C, 7, 9)]


def test_min_partitions_below_the_partition_count_changes_nothing():
    ranges = [OffsetRange(A, 0, 10), OffsetRange(B, 0, 10)]
    assert split_ranges(ranges, 2) == ranges
    assert split_ranges(ranges, None) == ranges


def test_min_partitions_cuts_large_partitions_into_more_tasks_in_proportion():
    split = split_ranges([OffsetRange(A, 0, 900), OffsetRange(B, 100, 200)], 10)
    assert len(split) == 10
    assert sum(1 for r in split if r.tp == A) == 9
    assert [r for r in split if r.tp == B] == [OffsetRange(B, 100, 200)]


@given(st.lists(st.integers(1, 10_000), min_size=1, max_size=6), st.integers(1, 40))
def test_split_ranges_cover_every_offset_once_in_at_least_min_partitions_tasks(sizes, min_partitions):
    ranges = [OffsetRange(TopicPartition("t", p), 10, 10 + size) for p, size in enumerate(sizes)]
    split = split_ranges(ranges, min_partitions)
    assert len(split) >= min(min_partitions, sum(sizes))
    for r in ranges:
        parts = [s for s in split if s.tp == r.tp]
        assert parts[0].start == r.start and parts[-1].until == r.until
        assert all(a.until == b.start for a, b in zip(parts, parts[1:]))
        assert all(p.size > 0 for p in parts)


def test_max_offsets_per_trigger_is_shared_in_proportion_to_what_waits():
    ends = capped_ends({A: 0, B: 0, C: 50}, {A: 100, B: 300, C: 50}, 200)
    assert ends == {A: 50, B: 150, C: 50}


def test_a_partition_whose_share_is_below_one_offset_still_moves():
    ends = capped_ends({A: 0, B: 0}, {A: 1, B: 10_000}, 100)
    assert ends[A] == 1 and ends[B] == 99


def test_no_cap_when_less_waits_than_the_limit():
    assert capped_ends({A: 0}, {A: 10}, 100) == {A: 10}


def test_min_offsets_per_trigger_waits_for_enough_records_or_the_max_trigger_delay():
    assert not may_trigger(waiting=5, min_records=10, since_last_ms=1000, max_delay_ms=60_000)
    assert may_trigger(waiting=10, min_records=10, since_last_ms=0, max_delay_ms=60_000)
    assert may_trigger(waiting=5, min_records=10, since_last_ms=60_000, max_delay_ms=60_000)
    assert not may_trigger(waiting=0, min_records=None, since_last_ms=60_000, max_delay_ms=60_000)
    assert waiting_records({A: 5}, {A: 9, B: 3}) == 4


def test_lost_offsets_name_the_partition_and_the_range():
    deleted = lost_below_start(A, 10, 25)
    assert str(deleted).startswith("t-0 offsets [10, 25) were deleted")
    assert lost_below_start(A, 25, 25) is None
    truncated = lost_past_end(A, 40, 31)
    assert str(truncated).startswith("t-0 offsets [31, 40) no longer exist")
    assert lost_past_end(A, 40, 40) is None


def test_capped_ends_refuses_a_limit_below_one():
    with pytest.raises(ValueError):
        capped_ends({A: 0}, {A: 10}, 0)
