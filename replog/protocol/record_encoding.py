"""Records into the bytes of a batch's records section (before compression).

    length varint | attributes int8 (0) | timestampDelta varlong | offsetDelta varint
    | keyLength varint (-1: null) | key | valueLength varint (-1: null) | value
    | headers count varint | per header: keyLength varint | key utf-8 | valueLength varint | value

This is the producer's hot path, so the loop is written out by hand: table
lookups instead of varint calls, one bytes object per record prefix, and a
single join at the end.
"""

from collections.abc import Iterable, Sequence

from replog.protocol.varint import NULL_LENGTH, TABLE_SIZE, ZIGZAG, encode_varint

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

