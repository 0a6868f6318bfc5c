"""RecordBatch v2 (magic 2), byte for byte: encode, decode, and the broker's checks.

`encode_batch` and `decode_batch` are the client's codec; `validate_batches`,
`stamp_batches` and `stamp_log_append_time` are all the broker does to a producer's bytes.
"""

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import crc32c

from replog.protocol.checks import Problem, byte_view, check_batch
from replog.protocol.compression import Compression, compress, decompress
from replog.protocol.errors import CorruptBatchError
from replog.protocol.header import BatchHeader, read_header
from replog.protocol.layout import (
    ATTRIBUTES,
    ATTRIBUTES_OFFSET,
    BATCH_LENGTH,
    BATCH_LENGTH_MIN,
    BATCH_LENGTH_OFFSET,
    COMPRESSION_MASK,
    CONTROL_BIT,
    CRC,
    CRC_FIELDS,
    CRC_OFFSET,
    DELETE_HORIZON_BIT,
    HEADER,
    LOG_OVERHEAD,
    MAGIC,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    PREFIX,
    RECORD_SIZE_MIN,
    RECORDS_OFFSET,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
)
from replog.protocol.record_decoding import decode_records
from replog.protocol.record_encoding import encode_records, encode_tuples
from replog.protocol.records import Record
from replog.protocol.stamp import stamp_batches, stamp_log_append_time
from replog.protocol.validation import ValidationResult, validate_batches

__all__ = [
    "BatchHeader",
    "Compression",
    "CorruptBatchError",
    "DecodedBatch",
    "Record",
    "ValidationResult",
    "decode_batch",
    "decode_body",
    "decode_section",
    "encode_batch",
    "iter_batches",
    "iter_headers",
    "iter_records",
    "read_header",
    "recompress_batches",
    "records_section",
    "stamp_batches",
    "stamp_log_append_time",
    "validate_batches",
]

# decode_batch has no size limit of its own: the fetch size bounds what arrives.
_NO_SIZE_LIMIT = 1 << 62


@dataclass(frozen=True, slots=True)
class DecodedBatch(BatchHeader):
    """A batch's header fields and its records, with absolute offsets and timestamps."""

    records: list[Record]


def encode_batch(
    values_or_records: Sequence,
    *,
    base_offset: int = 0,
    base_timestamp_ms: int | None = None,
    compression: Compression = Compression.NONE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    transactional: bool = False,
    control: bool = False,
    delete_horizon_ms: int | None = None,
    max_timestamp_ms: int | None = None,
    log_append_time: bool = False,
) -> bytes:
    """Encode one batch from (key, value[, headers[, timestamp_ms]]) tuples or from `Record`s.

    Tuples get offsets base_offset, base_offset+1, ... and the timestamp
    `base_timestamp_ms` (the wall clock when None), or their own; the caller
    that gives rows their own timestamps says the largest in `max_timestamp_ms`. Records keep their own
    absolute offsets, which must increase from `base_offset` on, and their own
    timestamps, stored relative to `base_timestamp_ms` (by default the first
    record's timestamp). With `delete_horizon_ms` (records only), that is the
    base timestamp, flagged as the batch's delete horizon (KIP-534). With
    `log_append_time` the batch is flagged LogAppendTime: readers give each of its
    records its maxTimestamp (the cleaner keeps a LogAppendTime batch so).
    """
    items = values_or_records if isinstance(values_or_records, (list, tuple)) else list(values_or_records)
    if not items:
        raise ValueError("a record batch holds at least one record")
    if delete_horizon_ms is not None:
        if not isinstance(items[0], Record):
            raise ValueError("a delete horizon is stamped on records that keep their own timestamps")
        base_timestamp_ms = delete_horizon_ms
    if isinstance(items[0], Record):
        base_timestamp = items[0].timestamp if base_timestamp_ms is None else base_timestamp_ms
        rows, last_offset_delta, max_timestamp = _record_rows(items, base_offset, base_timestamp)
        records = encode_records(rows)
    else:
        base_timestamp = time.time_ns() // 1_000_000 if base_timestamp_ms is None else base_timestamp_ms
        records, last_offset_delta = encode_tuples(items, base_timestamp), len(items) - 1
        max_timestamp = base_timestamp if max_timestamp_ms is None else max_timestamp_ms
    codec = Compression(compression)
    payload = compress(codec, records)
    attributes = (codec | (TRANSACTIONAL_BIT if transactional else 0) | (CONTROL_BIT if control else 0)
                  | (DELETE_HORIZON_BIT if delete_horizon_ms is not None else 0)
                  | (TIMESTAMP_TYPE_BIT if log_append_time else 0))
    crc_fields = CRC_FIELDS.pack(
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(items),
    )
    crc = crc32c.crc32c(payload, crc32c.crc32c(crc_fields))
    prefix = PREFIX.pack(base_offset, BATCH_LENGTH_MIN + len(payload), partition_leader_epoch, MAGIC, crc)
    return b"".join((prefix, crc_fields, payload))


def recompress_batches(buf, headers: Sequence[BatchHeader], codec: Compression) -> bytes | None:
    """The batches again, each one not in `codec` compressed anew in it, as Kafka's leader stores a producer's
    batches on a topic whose compression.type names a codec; None when every batch is in `codec` already.

    A batch's records section is the same bytes whatever compresses it, so it is inflated and
    compressed again, not decoded: offsets, timestamps, producer id, epoch and sequence, leader epoch
    and flags stay; the codec bits, batchLength and CRC change. Control batches and batches without
    records stay as they are. Raises CorruptBatchError when a batch does not inflate.
    """
    def stays(header: BatchHeader) -> bool:
        return header.compression_id == codec or header.is_control or not header.records_count

    if all(map(stays, headers)):
        return None
    pieces = []
    for header in headers:
        start = header.position
        if stays(header):
            pieces.append(bytes(buf[start:header.end]))
            continue
        payload = compress(codec, bytes(records_section(buf, header)))
        head = bytearray(buf[start:start + RECORDS_OFFSET])
        BATCH_LENGTH.pack_into(head, BATCH_LENGTH_OFFSET, BATCH_LENGTH_MIN + len(payload))
        ATTRIBUTES.pack_into(head, ATTRIBUTES_OFFSET, (header.attributes & ~COMPRESSION_MASK) | codec)
        CRC.pack_into(head, CRC_OFFSET, crc32c.crc32c(payload, crc32c.crc32c(head[ATTRIBUTES_OFFSET:])))
        pieces += (head, payload)
    return b"".join(pieces)


def _record_rows(records: Sequence[Record], base_offset: int, base_timestamp: int) -> tuple[list, int, int]:
    rows = []
    previous_delta = -1
    for record in records:
        offset_delta = record.offset - base_offset
        if offset_delta <= previous_delta:
            raise ValueError(
                f"record offset {record.offset} does not follow {base_offset + previous_delta} "
                f"(offsets start at base_offset {base_offset} and increase)"
            )
        previous_delta = offset_delta
        rows.append((offset_delta, record.timestamp - base_timestamp, record.key, record.value, record.headers))
    return rows, previous_delta, max(record.timestamp for record in records)


def decode_batch(buf, pos: int = 0) -> DecodedBatch:
    """Decode the batch at `pos`, checking it as `validate_batches` does.

    Raises CorruptBatchError, and nothing else, when the bytes are not a sound batch.
    """
    view = byte_view(buf)
    return _decoded(view, _checked_header(view, pos))


def decode_body(buf, header: BatchHeader, record_type: type[tuple] = Record, prefix: tuple = (),
                suffix: tuple = ()) -> list:
    """The records of a checked batch, as `record_type` tuples of prefix + a Record's fields + suffix.

    Raises CorruptBatchError when the records section is not sound.
    """
    return decode_section(records_section(buf, header), header, record_type, prefix, suffix)


def records_section(buf, header: BatchHeader):
    """The records section of a checked batch: a view of `buf`, or, when the batch is compressed, the
    section inflated. Raises CorruptBatchError when it does not inflate."""
    payload = buf[header.position + RECORDS_OFFSET : header.end]
    if header.compression_id == Compression.NONE:
        return payload
    try:
        return decompress(header.compression, payload)
    except ValueError as exc:
        raise CorruptBatchError(header.position, f"batch at byte {header.position}: {exc}") from exc


def decode_section(data, header: BatchHeader, record_type: type[tuple] = Record, prefix: tuple = (),
                   suffix: tuple = ()) -> list:
    """decode_body's records from the batch's `records_section`, for a caller that has it already."""
    try:
        if header.records_count * RECORD_SIZE_MIN > len(data):
            raise ValueError(f"{header.records_count} records cannot fit in {len(data)} bytes")
        timestamp_override = header.max_timestamp if header.is_log_append_time else None
        return decode_records(data, header.records_count, header.base_offset, header.base_timestamp,
                              timestamp_override, record_type, prefix, suffix)
    except IndexError as exc:
        raise CorruptBatchError(header.position, f"batch at byte {header.position}: the records end in the middle "
                                "of a record") from exc
    except ValueError as exc:
        raise CorruptBatchError(header.position, f"batch at byte {header.position}: {exc}") from exc


def iter_headers(buf) -> Iterator[BatchHeader]:
    """The checked header of each whole batch; stop quietly at a trailing partial batch.

    A fetch response cut at its byte limit may end inside a batch, as Kafka's
    may; the consumer fetches the rest from that batch's offset next time.
    Raises CorruptBatchError at the first batch that is not sound.
    """
    view = byte_view(buf)
    pos = 0
    while len(view) - pos >= LOG_OVERHEAD:
        batch_length = int.from_bytes(view[pos + LOG_OVERHEAD - 4 : pos + LOG_OVERHEAD], "big", signed=True)
        if pos + LOG_OVERHEAD + batch_length > len(view):
            return
        header = _checked_header(view, pos)
        yield header
        pos = header.end


def iter_batches(buf) -> Iterator[DecodedBatch]:
    """Decode batch after batch; stop quietly at a trailing partial batch (see `iter_headers`)."""
    view = byte_view(buf)
    for header in iter_headers(view):
        yield _decoded(view, header)


def _checked_header(view: memoryview, pos: int) -> BatchHeader:
    checked = check_batch(view, pos, _NO_SIZE_LIMIT, walk=False)
    if isinstance(checked, Problem):
        raise CorruptBatchError(pos, checked.reason)
    return checked


def _decoded(view: memoryview, header: BatchHeader) -> DecodedBatch:
    return DecodedBatch(header.position, *HEADER.unpack_from(view, header.position), decode_body(view, header))


def iter_records(buf) -> Iterator[Record]:
    for batch in iter_batches(buf):
        yield from batch.records
