"""Which old segments may go: Kafka's three deletion rules, as predicates.

Each rule answers for the oldest closed segment (and the one after it);
`PartitionLog` deletes segments from the oldest while its rule holds, and
never the active segment.
"""

from __future__ import annotations

from collections.abc import Callable

from replog.storage.segment import LogSegment

Rule = Callable[[LogSegment, LogSegment], bool]


def largest_timestamp_ms(segment: LogSegment) -> int:
    """The segment's largest record timestamp; its file's modification time when no batch has one."""
    return segment.max_timestamp_ms if segment.max_timestamp_ms >= 0 else segment.modified_ms


def older_than(retention_ms: int, now_ms: int) -> Rule:
    """retention.ms: every record of the segment is older than the retention time."""

    def rule(segment: LogSegment, successor: LogSegment) -> bool:
        return now_ms - largest_timestamp_ms(segment) > retention_ms

    return rule


def beyond_size(excess_bytes: int) -> Rule:
    """retention.bytes: the log stays over its limit even without the segment.

    Stateful: each segment the rule lets go counts against the excess, so use a
    fresh rule for each pass.
    """
    remaining = excess_bytes

    def rule(segment: LogSegment, successor: LogSegment) -> bool:
        nonlocal remaining
        if remaining < segment.size_bytes:
            return False
        remaining -= segment.size_bytes
        return True

    return rule


def below_log_start(log_start_offset: int) -> Rule:
    """DeleteRecords and retention moved the log start past every offset of the segment."""

    def rule(segment: LogSegment, successor: LogSegment) -> bool:
        return successor.base_offset <= log_start_offset

    return rule
