"""What makes the bytes at one position a sound batch, said in one sentence when not.

Shared by `validate_batches` (the broker's produce and recovery paths, which
answer with an ErrorCode) and `decode_batch` (which raises CorruptBatchError).
"""

from dataclasses import dataclass

import crc32c

from replog.core.errors import ErrorCode
from replog.protocol.compression import Compression
from replog.protocol.header import BatchHeader, read_header
from replog.protocol.layout import (
    ATTRIBUTES_OFFSET,
    BATCH_LENGTH_MIN,
    HEADER_SIZE,
    MAGIC,
    RECORD_SIZE_MIN,
    RECORDS_OFFSET,
)
from replog.protocol.record_decoding import check_record_lengths

CODEC_ID_MAX = max(Compression)


@dataclass(frozen=True, slots=True)
class Problem:
    error: ErrorCode
    reason: str


def _corrupt(reason: str) -> Problem:
    return Problem(ErrorCode.CORRUPT_MESSAGE, reason)


def byte_view(buf) -> memoryview:
    """A flat byte view of any buffer, without copying; TypeError or ValueError if there is none."""
    view = memoryview(buf)
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


def check_batch(buf: memoryview, pos: int, max_message_bytes: int, walk: bool) -> BatchHeader | Problem:
    """Check the batch at `pos` of a byte-format memoryview.

    With `walk`, uncompressed batches also have their record lengths hopped over
    to confirm that the records tile the batch exactly.
    """
    remaining = len(buf) - pos
    if not 0 <= pos <= len(buf):
        return _corrupt(f"batch position {pos} is outside the buffer of {len(buf)} bytes")
    if remaining < HEADER_SIZE:
        return _corrupt(
            f"batch at byte {pos} is cut short: {remaining} bytes remain but a batch header alone takes {HEADER_SIZE}"
        )
    header = read_header(buf, pos)
    problem = _check_fields(header, remaining, max_message_bytes)
    if problem is not None:
        return problem
    computed = crc32c.crc32c(buf[pos + ATTRIBUTES_OFFSET : header.end])
    if computed != header.crc:
        return _corrupt(f"batch at byte {pos} has CRC 0x{header.crc:08x} but its contents hash to 0x{computed:08x}")
    if walk and header.compression_id == Compression.NONE:
        reason = check_record_lengths(buf, pos + RECORDS_OFFSET, header.end, header.records_count)
        if reason is not None:
            return _corrupt(f"batch at byte {pos} {reason}")
    return header


def _check_fields(header: BatchHeader, remaining: int, max_message_bytes: int) -> Problem | None:
    at = f"batch at byte {header.position}"
    if header.magic != MAGIC:
        return _corrupt(f"{at} has magic {header.magic}; only magic {MAGIC} (RecordBatch v2) is supported")
    if header.batch_length < BATCH_LENGTH_MIN:
        return _corrupt(f"{at} has batchLength {header.batch_length}, less than its own header ({BATCH_LENGTH_MIN})")
    if header.size > remaining:
        return _corrupt(f"{at} declares {header.size} bytes but only {remaining} remain in the buffer")
    if header.size > max_message_bytes:
        return Problem(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"{at} is {header.size} bytes, more than max.message.bytes ({max_message_bytes})",
        )
    if header.compression_id > CODEC_ID_MAX:
        return _corrupt(f"{at} names compression codec {header.compression_id}, which does not exist")
    return _check_counts(header, at)


def _check_counts(header: BatchHeader, at: str) -> Problem | None:
    count = header.records_count
    if header.last_offset_delta < 0:
        return _corrupt(f"{at} has a negative lastOffsetDelta ({header.last_offset_delta})")
    # Compaction may leave fewer records than the offset range (even none), never more.
    if count < 0 or count > header.last_offset_delta + 1:
        return _corrupt(
            f"{at} claims {count} records, which does not fit its lastOffsetDelta of {header.last_offset_delta}"
        )
    records_bytes = header.size - RECORDS_OFFSET
    if header.compression_id == Compression.NONE and count * RECORD_SIZE_MIN > records_bytes:
        return _corrupt(f"{at} claims {count} records but has only {records_bytes} bytes of records")
    return None
