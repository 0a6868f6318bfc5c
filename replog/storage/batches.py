"""Walking the batches of a segment file: headers only, or headers and CRCs.

Storage never looks inside batches except in the cleaner (and, on compacted
topics, for keys). Appends and recovery check each batch's header fields,
sizes and CRC-32C; the records inside are the producer's, vouched for by its CRC.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator

from replog.core.errors import ErrorCode
from replog.protocol import BatchHeader, ValidationResult, read_header
from replog.protocol.checks import Problem, check_batch
from replog.protocol.layout import BATCH_LENGTH_MIN, HEADER_SIZE, LOG_OVERHEAD

INT32_MAX = 2**31 - 1
# Recovery reads this much at a time (more for a larger batch): few syscalls,
# and the CRC runs over slices of one buffer.
SCAN_CHUNK_BYTES = 8 * 1024 * 1024
# Header walks (index lookups, reloads) read this much at a time: an index
# interval (4 KiB by default) of small batches, or one large batch's header.
HEADER_CHUNK_BYTES = 4 * 1024
# Size limits are checked on the way in; stored batches are bounded only by the format.
ANY_SIZE = INT32_MAX + LOG_OVERHEAD

BATCH_PREFIX = struct.Struct(">qi")  # baseOffset, batchLength


class SegmentCorruptError(Exception):
    """A segment that passed recovery no longer parses: a bug or a disk fault, never user input."""


def iter_headers(fd: int, start: int, end: int) -> Iterator[tuple[int, BatchHeader]]:
    """(file position, header) of each batch in [start, end) of a sound segment file."""
    pos = start
    while pos < end:
        buf = os.pread(fd, min(HEADER_CHUNK_BYTES, end - pos), pos)
        offset = 0
        while offset + HEADER_SIZE <= len(buf):
            header = read_header(buf, offset)
            if header.batch_length < BATCH_LENGTH_MIN or pos + offset + header.size > end:
                raise SegmentCorruptError(f"no sound batch at byte {pos + offset} (of {end})")
            yield pos + offset, header
            offset += header.size
        if offset == 0:
            raise SegmentCorruptError(f"{end - pos} bytes at byte {pos} are too few for a batch")
        pos += offset


def check_batches(buf: bytearray | memoryview, *, max_message_bytes: int = ANY_SIZE) -> ValidationResult:
    """Headers, sizes and CRCs of every batch in `buf`, answered as `validate_batches` answers.

    The same checks as `validate_batches` except the walk over record lengths
    inside uncompressed batches: the broker does no per-record work.
    """
    view = memoryview(buf)
    if len(view) == 0:
        return ValidationResult(ErrorCode.INVALID_REQUEST, "the records are empty; at least one batch is required")
    headers: list[BatchHeader] = []
    pos = 0
    while pos < len(view):
        checked = check_batch(view, pos, max_message_bytes, walk=False)
        if isinstance(checked, Problem):
            return ValidationResult(checked.error, checked.reason)
        headers.append(checked)
        pos = checked.end
    return ValidationResult(ErrorCode.NONE, "", headers)


def scan_valid_batches(fd: int, size_bytes: int, base_offset: int) -> Iterator[tuple[int, BatchHeader]]:
    """(file position, header) of each valid batch from the start of a segment file.

    Stops at the first byte that does not begin a valid batch: a torn or short
    batch, a bad CRC or header, an offset that does not follow the previous
    batch's, or one too far from `base_offset` for the int32 relative offsets
    of the index. The caller truncates the file there.
    """
    next_offset = base_offset
    pos = 0
    while pos + LOG_OVERHEAD <= size_bytes:
        view = _read_chunk(fd, pos, size_bytes)
        offset = 0
        while offset + LOG_OVERHEAD <= len(view):
            _, batch_length = BATCH_PREFIX.unpack_from(view, offset)
            batch_end = offset + LOG_OVERHEAD + batch_length
            if batch_length < BATCH_LENGTH_MIN or pos + batch_end > size_bytes:
                return
            if batch_end > len(view):
                break
            header = check_batch(view[:batch_end], offset, ANY_SIZE, walk=False)
            if isinstance(header, Problem) or misplaced(header, next_offset, base_offset):
                return
            yield pos + offset, header
            next_offset = header.next_offset
            offset = batch_end
        pos += offset


def misplaced(header: BatchHeader, next_offset: int, base_offset: int) -> str | None:
    """Why a sound batch cannot stand where it is in the segment of `base_offset`, after batches that end
    before `next_offset` (the base offset for the first); None when it can. Recovery cuts a segment there."""
    if header.base_offset < next_offset:
        below = "the segment's base offset" if next_offset == base_offset else "the end of the batch before it"
        return f"the batch starts at offset {header.base_offset}, below {next_offset}, {below}"
    if header.last_offset - base_offset > INT32_MAX:
        return (f"the batch ends at offset {header.last_offset}, more than {INT32_MAX} past the segment's base "
                f"offset {base_offset}, which its index cannot hold")
    return None


def _read_chunk(fd: int, pos: int, size_bytes: int) -> memoryview:
    """A chunk from `pos` that holds at least the whole batch there, when the file does."""
    chunk = os.pread(fd, min(SCAN_CHUNK_BYTES, size_bytes - pos), pos)
    _, batch_length = BATCH_PREFIX.unpack_from(chunk, 0)
    batch_size = LOG_OVERHEAD + batch_length
    if len(chunk) < batch_size <= size_bytes - pos:
        chunk = os.pread(fd, batch_size, pos)
    return memoryview(chunk)
