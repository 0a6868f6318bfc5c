"""Reading a partition log: whole batches across segments (Fetch), and offsets by timestamp (ListOffsets)."""

from __future__ import annotations

from collections.abc import Sequence

from replog.protocol import decode_batch
from replog.storage.segment import LogSegment


def read_batches(
    segments: Sequence[LogSegment], fetch_offset: int, max_bytes: int, max_offset: int | None, min_one_batch: bool
) -> bytes:
    """Whole batches from the one holding `fetch_offset` (in the first of `segments`), up to
    `max_bytes` in total; see PartitionLog.read."""
    pieces: list[bytes] = []
    remaining = max_bytes
    for segment in segments:
        piece = segment.read(fetch_offset, remaining, max_offset, min_one_batch and not pieces)
        if piece.records:
            pieces.append(piece.records)
            remaining -= len(piece.records)
        if not piece.reached_end or remaining <= 0:
            break
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def offset_for_timestamp(
    segments: Sequence[LogSegment], timestamp_ms: int, log_start_offset: int
) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record at or after the log start whose timestamp is
    at least `timestamp_ms`, as ListOffsets answers; None when there is no such record."""
    for segment in segments:
        if segment.max_timestamp_ms < timestamp_ms or segment.next_offset <= log_start_offset:
            continue
        found = _first_record_at_or_after(segment, timestamp_ms, log_start_offset)
        if found is not None:
            return found
    return None


def _first_record_at_or_after(segment: LogSegment, timestamp_ms: int, log_start_offset: int) -> tuple[int, int] | None:
    below = segment.time_index.offset_before(timestamp_ms)
    start = 0 if below is None else segment.offset_index.lookup(below)
    for position, header in segment.batches_from(start):
        if header.max_timestamp < timestamp_ms or header.last_offset < log_start_offset:
            continue
        batch = decode_batch(segment.read_batch(position, header.size))
        for record in batch.records:
            if record.timestamp >= timestamp_ms and record.offset >= log_start_offset:
                return record.offset, record.timestamp
    return None
