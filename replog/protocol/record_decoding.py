"""The records section of a batch (after decompression) back into `Record`s.

`decode_records` is the consumer's hot path. The compiled fast path
(`_records.c`, built with the package where a C compiler is present) decodes
the common, well-formed case; whatever it declines, and everything where it is
not built, goes through `decode_records_python`. That one is the reference: it
is written out by hand because most varints in a record take one or two bytes,
so each is read inline through the `UNZIGZAG` table and only longer ones cost a
call to `read_varint`. Malformed input raises ValueError or IndexError; the
batch decoder turns those into CorruptBatchError with the batch's position.
"""

from replog.protocol.layout import RECORD_SIZE_MIN
from replog.protocol.records import Record, make_record
from replog.protocol.varint import UNZIGZAG, VARINT_BYTES_MAX, read_varint

try:
    from replog.protocol._records import decode_records as _decode_compiled
    from replog.protocol._records import records_refused as _refused_compiled
    from replog.protocol._records import records_tile as _tile_compiled
except ImportError:  # installed without a C compiler: the Python decoder serves alone
    _decode_compiled = None
    _refused_compiled = None
    _tile_compiled = None

_new_tuple = tuple.__new__

# A record after its length field: attributes, timestampDelta, offsetDelta,
# keyLength, valueLength and headers count take at least one byte each.
RECORD_BODY_MIN = RECORD_SIZE_MIN - 1
HEADER_SIZE_MIN = 2  # keyLength and valueLength, one byte each
NULL = 0x01  # the one-byte varint -1: a null key or value


def all_records_pass(data: bytes | memoryview, count: int, base_timestamp: int, keys_required: bool,
                     earliest: int) -> bool:
    """Whether each of `count` records has a key (when `keys_required`) and no timestamp in [0, earliest),
    told without building a record, where the compiled walk can tell. False means "decode and see": a
    record may be refused, the section may be unsound, or nothing compiled serves here."""
    return _refused_compiled is not None and _refused_compiled(data, count, base_timestamp, keys_required,
                                                               earliest) == -1


def decode_records(
    data: bytes | memoryview,
    count: int,
    base_offset: int,
    base_timestamp: int,
    timestamp_override: int | None,
    record_type: type[tuple] = Record,
    prefix: tuple = (),
    suffix: tuple = (),
) -> list:
    """Decode `count` records filling `data` exactly.

    `timestamp_override` is the batch's maxTimestamp for LogAppendTime batches:
    Kafka then gives every record the broker's append time. Each record comes
    out as a `record_type` tuple of prefix + a Record's fields + suffix, so
    that a consumer builds its own record type in one step.
    """
    if _decode_compiled is not None:
        records = _decode_compiled(data, count, base_offset, base_timestamp, timestamp_override, record_type,
                                   prefix, suffix)
        if records is not None:
            return records
    records = decode_records_python(bytes(data), count, base_offset, base_timestamp, timestamp_override)
    if record_type is Record and not prefix and not suffix:
        return records
    return [_new_tuple(record_type, prefix + record + suffix) for record in records]


def decode_records_python(
    data: bytes,
    count: int,
    base_offset: int,
    base_timestamp: int,
    timestamp_override: int | None,
) -> list[Record]:
    """`decode_records` in Python: the reference for the compiled path, and where it declines."""
    zz = UNZIGZAG
    records: list[Record] = []
    append = records.append
    pos = 0
    for index in range(count):
        b = data[pos]
        if b < 0x80:
            record_end = pos + 1 + zz[b]
            pos += 1
        elif data[pos + 1] < 0x80:
            record_end = pos + 2 + zz[(b & 0x7F) | (data[pos + 1] << 7)]
            pos += 2
        else:
            length, pos = read_varint(data, pos, VARINT_BYTES_MAX)
            record_end = pos + length
        b = data[pos + 1]  # past the attributes byte
        if b < 0x80:
            timestamp_delta = zz[b]
            pos += 2
        else:
            timestamp_delta, pos = read_varint(data, pos + 1)
        b = data[pos]
        if b < 0x80:
            offset_delta = zz[b]
            pos += 1
        elif data[pos + 1] < 0x80:
            offset_delta = zz[(b & 0x7F) | (data[pos + 1] << 7)]
            pos += 2
        else:
            offset_delta, pos = read_varint(data, pos, VARINT_BYTES_MAX)
        if data[pos] == NULL:
            key = None
            pos += 1
        else:
            key, pos = _read_bytes(data, pos)
        b = data[pos]
        if b < 0x80:
            size = zz[b]
            pos += 1
        elif data[pos + 1] < 0x80:
            size = zz[(b & 0x7F) | (data[pos + 1] << 7)]
            pos += 2
        else:
            size, pos = read_varint(data, pos, VARINT_BYTES_MAX)
        if size >= 0:
            value = data[pos : pos + size]
            pos += size
        elif size == -1:
            value = None
        else:
            raise ValueError(f"record {index} has value length {size}")
        if data[pos] == 0:
            headers = ()
            pos += 1
        else:
            headers, pos = _read_headers(data, pos, record_end)
        if pos != record_end:
            raise ValueError(f"record {index} does not end where its length says")
        timestamp = base_timestamp + timestamp_delta if timestamp_override is None else timestamp_override
        append(make_record(base_offset + offset_delta, timestamp, key, value, headers))
    if pos != len(data):
        raise ValueError(f"{len(data) - pos} bytes follow the last of {count} records")
    return records


def _read_bytes(data: bytes, pos: int) -> tuple[bytes | None, int]:
    size, pos = read_varint(data, pos, VARINT_BYTES_MAX)
    if size < 0:
        if size != -1:
            raise ValueError(f"field length {size} is negative")
        return None, pos
    end = pos + size
    if end > len(data):
        raise ValueError(f"field of {size} bytes runs past the records")
    return data[pos:end], end


def _read_headers(data: bytes, pos: int, record_end: int) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    count, pos = read_varint(data, pos, VARINT_BYTES_MAX)
    if count < 0 or count * HEADER_SIZE_MIN > record_end - pos:
        raise ValueError(f"header count {count} does not fit in the record")
    headers = []
    for _ in range(count):
        raw_key, pos = _read_bytes(data, pos)
        if raw_key is None:
            raise ValueError("a header key is null")
        value, pos = _read_bytes(data, pos)
        headers.append((raw_key.decode("utf-8"), value))
    return tuple(headers), pos


def check_record_lengths(buf: memoryview, pos: int, end: int, count: int) -> str | None:
    """What is wrong with the record lengths of buf[pos:end], or None when they tile it exactly.

    The compiled walk answers the common case (they do); only when they do not does
    `walk_records` go over them again to say where.
    """
    if _tile_compiled is not None and _tile_compiled(buf[pos:end], count, RECORD_BODY_MIN):
        return None
    return walk_records(buf, pos, end, count)


def walk_records(buf, pos: int, end: int, count: int) -> str | None:
    """Hop over record lengths from `pos`; say what is wrong unless they tile to `end`.

    Only the length varints are read, so this costs a few operations per
    record however large the keys and values are.
    """
    zz = UNZIGZAG
    for index in range(count):
        if pos >= end:
            return f"holds {index} records but its header says {count}"
        b = buf[pos]
        if b < 0x80:
            length = zz[b]
            pos += 1
        elif pos + 1 < end and buf[pos + 1] < 0x80:
            length = zz[(b & 0x7F) | (buf[pos + 1] << 7)]
            pos += 2
        else:
            try:
                length, pos = read_varint(buf, pos, VARINT_BYTES_MAX)
            except ValueError:
                return f"has a malformed length for record {index}"
        if length < RECORD_BODY_MIN:
            return f"has record {index} of length {length}, below the minimum of {RECORD_BODY_MIN}"
        pos += length
        if pos > end:
            return f"has record {index} of {length} bytes running {pos - end} bytes past the batch end"
    if pos != end:
        return f"has {end - pos} bytes after its {count} records"
    return None
