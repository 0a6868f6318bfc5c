"""Records into the bytes of a batch's records section (before compression).

    length varint | attributes int8 (0) | timestampDelta varlong | offsetDelta varint
    | keyLength varint (-1: null) | key | valueLength varint (-1: null) | value
    | headers count varint | per header: keyLength varint | key utf-8 | valueLength varint | value

This is the producer's hot path. The compiled encoder (`_records.c`, built
with the package where a C compiler is present) encodes the common rows, keys
and values of bytes or None without headers; `encode_records` encodes the rest
and is the reference the compiled one is tested against. Its loop is written
out by hand: table lookups instead of varint calls, one bytes object per record
prefix, and a single join at the end.
"""

from collections.abc import Iterable, Iterator, Sequence

from replog.protocol.varint import NULL_LENGTH, TABLE_SIZE, ZIGZAG, encode_varint

try:
    from replog.protocol._records import encode_rows as _encode_compiled
    from replog.protocol._records import keyless_sizes as _keyless_compiled
except ImportError:  # no C compiler where the package was built: the Python encoder does all
    _encode_compiled = None
    _keyless_compiled = None

NO_HEADERS = b"\x00"
ATTRIBUTES = b"\x00"  # record attributes: unused by Kafka, always zero


def encode_headers(headers: Sequence[tuple[str, bytes | None]]) -> bytes:
    parts = [encode_varint(len(headers))]
    for key, value in headers:
        raw_key = key.encode("utf-8")
        parts.append(encode_varint(len(raw_key)))
        parts.append(raw_key)
        if value is None:
            parts.append(NULL_LENGTH)
        else:
            parts.append(encode_varint(len(value)))
            parts.append(value)
    return b"".join(parts)


def encode_records(rows: Iterable[tuple[int, int, bytes | None, bytes | None, Sequence]]) -> bytes:
    """Encode (offset_delta, timestamp_delta, key, value, headers) rows."""
    zz = ZIGZAG
    table_size = TABLE_SIZE
    parts: list[bytes] = []
    append = parts.append
    for offset_delta, timestamp_delta, key, value, headers in rows:
        prefix = ATTRIBUTES
        prefix += zz[timestamp_delta] if 0 <= timestamp_delta < table_size else encode_varint(timestamp_delta)
        prefix += zz[offset_delta] if offset_delta < table_size else encode_varint(offset_delta)
        if key is None:
            prefix += NULL_LENGTH
        else:
            size = len(key)
            prefix += (zz[size] if size < table_size else encode_varint(size)) + key
        if value is None:
            prefix += NULL_LENGTH
            value = b""
        else:
            size = len(value)
            prefix += zz[size] if size < table_size else encode_varint(size)
        suffix = encode_headers(headers) if headers else NO_HEADERS
        length = len(prefix) + len(value) + len(suffix)
        append((zz[length] if length < table_size else encode_varint(length)) + prefix)
        append(value)
        append(suffix)
    return b"".join(parts)



def encode_tuples(items: Sequence, base_timestamp_ms: int = 0) -> bytes:
    """Encode rows as records with offset deltas 0, 1, ... and timestamp delta 0. A row is a
    (key, value[, headers[, timestamp_ms]]) tuple, or a bare value (bytes or None) for a record without
    key; a row's own timestamp is stored relative to base_timestamp_ms."""
    if _encode_compiled is not None and items.__class__ is list:
        encoded = _encode_compiled(items)  # None for rows it does not take (headers, own timestamps)
        if encoded is not None:
            return encoded
    return encode_records(_tuple_rows(items, base_timestamp_ms))


def keyless_sizes(values: list) -> list[int] | None:
    """Each value's encoded size bound as a record without key (the client's record_size_bytes), in
    one compiled pass; None without the compiled encoder or when a value is neither bytes nor None."""
    return None if _keyless_compiled is None else _keyless_compiled(values)


def _tuple_rows(items: Sequence, base_timestamp_ms: int = 0) -> Iterator[tuple]:
    for offset_delta, item in enumerate(items):
        if item is None or item.__class__ is bytes:
            yield offset_delta, 0, None, item, ()
        elif len(item) == 2:
            yield offset_delta, 0, item[0], item[1], ()
        elif len(item) == 3:
            key, value, headers = item
            yield offset_delta, 0, key, value, headers
        else:
            key, value, headers, timestamp_ms = item
            yield offset_delta, timestamp_ms - base_timestamp_ms, key, value, headers
