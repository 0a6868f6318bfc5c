"""When the active segment rolls, and how much of an append it takes: Kafka's roll rules.

A new segment starts before a batch that would take the active one past
segment.bytes, when an index is full, when the batch's offsets would not fit
the int32 relative offsets of the index, or when segment.ms has passed.
"""

from __future__ import annotations

from collections.abc import Sequence

from replog.protocol import BatchHeader
from replog.storage.batches import INT32_MAX
from replog.storage.config import LogConfig
from replog.storage.segment import LogSegment


def should_roll(active: LogSegment, header: BatchHeader, config: LogConfig, now_ms: int) -> bool:
    """Whether `header`'s batch starts a new segment: size, index space, relative-offset range, segment.ms."""
    if header.last_offset - active.base_offset > INT32_MAX:
        return True
    if active.is_empty:
        return False
    if active.size_bytes + header.size > config.segment_bytes or active.index_is_full:
        return True
    # As Kafka: age counts from the first batch's timestamp when batches carry them.
    if active.first_batch_timestamp_ms >= 0 and header.max_timestamp >= 0:
        waited_ms = header.max_timestamp - active.first_batch_timestamp_ms
    else:
        waited_ms = now_ms - active.created_ms
    return waited_ms > config.segment_ms


def batches_fitting(active: LogSegment, headers: Sequence[BatchHeader], first: int, segment_bytes: int) -> int:
    """End (exclusive) of the run of batches from `first` that the active segment takes.

    The first always goes in (the segment was rolled for it if needed); an
    append larger than segment.bytes spreads over segments at batch boundaries.
    """
    size = active.size_bytes + headers[first].size
    end = first + 1
    while end < len(headers):
        header = headers[end]
        if size + header.size > segment_bytes or header.last_offset - active.base_offset > INT32_MAX:
            break
        size += header.size
        end += 1
    return end
