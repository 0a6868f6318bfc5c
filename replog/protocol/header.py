"""The 61-byte batch header, read in place with one struct call."""

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from replog.protocol.compression import Compression
from replog.protocol.layout import (
    BATCH_LENGTH_OFFSET,
    COMPRESSION_MASK,
    CONTROL_BIT,
    DELETE_HORIZON_BIT,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    RECORDS_COUNT_OFFSET,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
)


@dataclass(frozen=True, slots=True)
class BatchHeader:
    position: int  # byte position of the batch in the buffer it was read from
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch takes: baseOffset and batchLength, then batchLength bytes."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def end(self) -> int:
        """Position just past this batch in its buffer."""
        return self.position + LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression_id(self) -> int:
        """The raw compression bits, which may name no known codec in a corrupt batch."""
        return self.attributes & COMPRESSION_MASK

    @property
    def compression(self) -> Compression:
        return Compression(self.attributes & COMPRESSION_MASK)

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_BIT)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def delete_horizon_ms(self) -> int | None:
        """When the cleaner may remove this batch (KIP-534); None when no cleaner stamped one."""
        return self.base_timestamp if self.attributes & DELETE_HORIZON_BIT else None


def read_header(buf, pos: int = 0) -> BatchHeader:
    """Read the header of the batch at `pos` without copying; struct.error if too short.

    Nothing is checked here: `validate_batches` says whether the fields make sense.
    """
    return BatchHeader(pos, *HEADER.unpack_from(buf, pos))


def record_counts(records: bytes) -> Iterator[int]:
    """The record count of each batch in `records`, as far as whole headers go; it stops at a
    batch length that cannot be (the request limits read this before anything is decoded)."""
    position = 0
    while position + HEADER_SIZE <= len(records):
        (length,) = struct.unpack_from(">i", records, position + BATCH_LENGTH_OFFSET)
        (count,) = struct.unpack_from(">i", records, position + RECORDS_COUNT_OFFSET)
        yield count
        if length <= 0:
            return
        position += LOG_OVERHEAD + length
