"""Ranges of offsets to read, as a batch or a micro-batch plans them: pure rules, no I/O.

These are the rules users of Spark's Kafka source know (spark-sql-kafka): how a
partition's range is split when `minPartitions` asks for more tasks than there
are partitions, how `maxOffsetsPerTrigger` is shared among partitions in
proportion to what each has waiting, when `minOffsetsPerTrigger` lets a
micro-batch start, and which offsets were lost when a log starts after, or ends
before, where a reader stood.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from .topic_partition import TopicPartition

EARLIEST = -2  # in offset specs: the log start offset
LATEST = -1  # in offset specs: the high watermark (the last stable offset for read_committed)


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Offsets [start, until) of one partition."""

    tp: TopicPartition
    start: int
    until: int

    @property
    def size(self) -> int:
        return max(self.until - self.start, 0)


def ranges_between(starts: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int]) -> list[OffsetRange]:
    """The non-empty ranges from `starts` to `ends`, ordered by partition (a partition only in
    `ends` is not planned here: the caller gives it a start first)."""
    return [OffsetRange(tp, starts[tp], ends[tp]) for tp in sorted(ends) if tp in starts and ends[tp] > starts[tp]]


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """One range per partition, or, when `min_partitions` asks for more tasks than that, the ranges
    cut into `min_partitions` parts in all, each range into parts in proportion to its share of all
    offsets (at least one part each, at most one per offset)."""
    ranges = [r for r in ranges if r.size > 0]
    if not min_partitions or min_partitions <= len(ranges):
        return ranges
    split: list[OffsetRange] = []
    for r, parts in zip(ranges, _shares(min_partitions, [r.size for r in ranges])):
        for index in range(parts):
            split.append(OffsetRange(r.tp, r.start + r.size * index // parts, r.start + r.size * (index + 1) // parts))
    return split


def _shares(count: int, sizes: list[int]) -> list[int]:
    """`count` parts dealt out in proportion to `sizes` (largest remainders first), each at least 1
    and at most its size."""
    total = sum(sizes)
    exact = [count * size / total for size in sizes]
    parts = [min(max(math.floor(e), 1), size) for e, size in zip(exact, sizes)]
    by_remainder = sorted(range(len(sizes)), key=lambda i: exact[i] - math.floor(exact[i]), reverse=True)
    while sum(parts) < count and any(parts[i] < sizes[i] for i in by_remainder):
        for i in by_remainder:
            if sum(parts) < count and parts[i] < sizes[i]:
                parts[i] += 1
    return parts


def capped_ends(starts: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
                max_records: int) -> dict[TopicPartition, int]:
    """Ends that take at most about `max_records` offsets in all, each partition its share of
    what is waiting (a partition whose share is below one offset still moves by one)."""
    if max_records <= 0:
        raise ValueError(f"max_records must be positive, not {max_records}")
    sizes = {tp: max(end - starts.get(tp, end), 0) for tp, end in latest.items()}
    total = sum(sizes.values())
    if total <= max_records:
        return dict(latest)
    ends = {}
    for tp, end in latest.items():
        start = starts.get(tp, end)
        share = max_records * sizes[tp] / total
        moved = math.ceil(share) if share < 1 else math.floor(share)
        ends[tp] = min(start + moved, end)
    return ends


def waiting_records(starts: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int]) -> int:
    """Offsets between `starts` and `ends` summed over the partitions of `ends`."""
    return sum(max(end - starts.get(tp, end), 0) for tp, end in ends.items())


def may_trigger(waiting: int, min_records: int | None, since_last_ms: int, max_delay_ms: int) -> bool:
    """Whether a micro-batch may start: enough offsets wait (`minOffsetsPerTrigger`), or the last
    one started `max_delay_ms` ago or longer (`maxTriggerDelay`) and something waits."""
    if waiting <= 0:
        return False
    return min_records is None or waiting >= min_records or since_last_ms >= max_delay_ms


@dataclass(frozen=True, slots=True)
class LostRange:
    """Offsets [start, until) of a partition that a reader meant to read and the log no longer has."""

    tp: TopicPartition
    start: int
    until: int
    reason: str  # "deleted" (below the log start offset) or "truncated" (the log end went back)

    def __str__(self) -> str:
        how = ("were deleted (retention, or records deleted) before they were read" if self.reason == "deleted"
               else "no longer exist: the log end went back below them (an unclean leader election truncated it)")
        return f"{self.tp} offsets [{self.start}, {self.until}) {how}"


def lost_below_start(tp: TopicPartition, position: int, log_start_offset: int) -> LostRange | None:
    """The range lost when a reader at `position` finds the log starting later."""
    if position < log_start_offset:
        return LostRange(tp, position, log_start_offset, "deleted")
    return None


def lost_past_end(tp: TopicPartition, expected_end: int, log_end: int) -> LostRange | None:
    """The range lost when offsets up to `expected_end` were once there and the log now ends at `log_end`."""
    if log_end < expected_end:
        return LostRange(tp, log_end, expected_end, "truncated")
    return None
