"""Opening a partition directory's segments, recovering those that may hold unflushed bytes.

See docs/STORAGE.md (Recovery): segments below the recovery point are trusted
with a check of their indexes; the others are scanned, and the log ends at the
first invalid byte.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from replog.storage.config import LogConfig
from replog.storage.files import CLEANED_SUFFIX, LOG_SUFFIX, SEGMENT_SUFFIXES, TEMP_SUFFIX, parse_segment_name
from replog.storage.segment import LogSegment


def load_segments(
    directory: Path, config: LogConfig, recovery_point: int, now_ms: int, *, clean_shutdown: bool
) -> list[LogSegment]:
    """Open the segments in `directory` in offset order, recovering those at or past the recovery point.

    The last segment is recovered too unless the log was closed cleanly. After
    a segment that recovery had to cut, later segments cannot be trusted and
    are deleted, as are segments whose offsets overlap their predecessor's.
    """
    bases = _segment_base_offsets(directory)
    segments: list[LogSegment] = []
    for number, base_offset in enumerate(bases):
        if segments and base_offset < segments[-1].next_offset:
            _delete_segment_files(directory, bases[number:])
            break
        is_last = number == len(bases) - 1
        recover = not clean_shutdown if is_last else bases[number + 1] > recovery_point
        segment, cut_bytes = LogSegment.open(directory, base_offset, config, now_ms, recover=recover)
        segments.append(segment)
        if cut_bytes:
            _delete_segment_files(directory, bases[number + 1 :])
            break
    return segments


def _segment_base_offsets(directory: Path) -> list[int]:
    """Base offsets of the `.log` files; leftovers of interrupted work are removed on the way."""
    names = [entry.name for entry in os.scandir(directory) if entry.is_file()]
    bases = set()
    for name in names:
        parsed = parse_segment_name(name)
        if parsed is not None and parsed[1] == LOG_SUFFIX:
            bases.add(parsed[0])
    for name in names:
        parsed = parse_segment_name(name)
        leftover = name.endswith((CLEANED_SUFFIX, TEMP_SUFFIX))
        orphan = parsed is not None and parsed[1] in SEGMENT_SUFFIXES and parsed[0] not in bases
        if leftover or orphan:
            (directory / name).unlink()
    return sorted(bases)


def _delete_segment_files(directory: Path, bases: Sequence[int]) -> None:
    for name in [entry.name for entry in os.scandir(directory)]:
        parsed = parse_segment_name(name)
        if parsed is not None and parsed[0] in bases:
            (directory / name).unlink()
