"""A reader for Kafka's RecordBatch v2, written from the specification alone.

It shares no code with replog.protocol (its own struct layout, varints and a
bitwise CRC-32C), so when both agree on a batch, they agree with the spec and
not merely with each other. Slow on purpose: clarity over speed.
"""

import struct
from dataclasses import dataclass

import cramjam

# CRC-32C (Castagnoli), reflected polynomial; check value of b"123456789" is 0xE3069283.
CASTAGNOLI_REFLECTED = 0x82F63B78


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (CASTAGNOLI_REFLECTED if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def write_varint(value: int) -> bytes:
    """Zig-zag then base-128, least significant group first."""
    raw = 2 * value if value >= 0 else -2 * value - 1
    out = b""
    while True:
        group = raw & 0x7F
        raw >>= 7
        if raw:
            out += bytes([group | 0x80])
        else:
            return out + bytes([group])


class Cursor:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("read past the end")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def varint(self) -> int:
        raw = 0
        for shift in range(0, 70, 7):
            byte = self.take(1)[0]
            raw |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return (raw >> 1) if raw % 2 == 0 else -((raw + 1) >> 1)
        raise ValueError("varint too long")

    def sized(self) -> bytes | None:
        n = self.varint()
        return None if n == -1 else self.take(n)


@dataclass
class SpecRecord:
    attributes: int
    timestamp_delta: int
    offset_delta: int
    key: bytes | None
    value: bytes | None
    headers: list


@dataclass
class SpecBatch:
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
    records: list
    crc_ok: bool


def parse_batch(data: bytes) -> SpecBatch:
    """Parse exactly one batch filling `data`."""
    base_offset, batch_length = struct.unpack(">qi", data[:12])
    if 12 + batch_length != len(data):
        raise ValueError("batchLength does not match the data")
    leader_epoch, magic, crc = struct.unpack(">ibI", data[12:21])
    attributes, last_delta, base_ts, max_ts, pid, pepoch, base_seq, count = struct.unpack(">hiqqqhii", data[21:61])
    crc_ok = crc32c(data[21:]) == crc
    body = decompress(attributes & 0x07, data[61:])
    cursor = Cursor(body)
    records = [parse_record(cursor) for _ in range(count)]
    if cursor.pos != len(body):
        raise ValueError("bytes left after the records")
    return SpecBatch(
        base_offset, batch_length, leader_epoch, magic, crc, attributes, last_delta,
        base_ts, max_ts, pid, pepoch, base_seq, records, crc_ok,
    )


def parse_record(cursor: Cursor) -> SpecRecord:
    length = cursor.varint()
    inner = Cursor(cursor.take(length))
    attributes = inner.take(1)[0]
    timestamp_delta = inner.varint()
    offset_delta = inner.varint()
    key = inner.sized()
    value = inner.sized()
    headers = []
    for _ in range(inner.varint()):
        header_key = inner.sized().decode("utf-8")
        headers.append((header_key, inner.sized()))
    if inner.pos != length:
        raise ValueError("record length does not match its fields")
    return SpecRecord(attributes, timestamp_delta, offset_delta, key, value, headers)


def decompress(codec: int, data: bytes) -> bytes:
    if codec == 0:
        return data
    if codec == 1:
        return bytes(cramjam.gzip.decompress(data))
    if codec == 2:
        return unframe_xerial(data)
    if codec == 3:
        return bytes(cramjam.lz4.decompress(data))
    if codec == 4:
        return bytes(cramjam.zstd.decompress(data))
    raise ValueError(f"codec {codec}")


def unframe_xerial(data: bytes) -> bytes:
    """snappy-java's stream: 16-byte header, then (int32 length, raw snappy block)*."""
    if data[:8] != b"\x82SNAPPY\x00":
        return bytes(cramjam.snappy.decompress_raw(data))
    out = b""
    pos = 16
    while pos < len(data):
        (n,) = struct.unpack(">i", data[pos : pos + 4])
        out += bytes(cramjam.snappy.decompress_raw(data[pos + 4 : pos + 4 + n]))
        pos += 4 + n
    return out


def build_batch(records: list[bytes], *, base_offset=0, attributes=0, last_offset_delta=None,
                base_timestamp=0, max_timestamp=0, producer_id=-1, producer_epoch=-1,
                base_sequence=-1, leader_epoch=-1, body: bytes | None = None) -> bytes:
    """Assemble a batch around already-encoded records, as the spec lays it out."""
    if last_offset_delta is None:
        last_offset_delta = len(records) - 1
    payload = b"".join(records) if body is None else body
    after_crc = struct.pack(
        ">hiqqqhii", attributes, last_offset_delta, base_timestamp, max_timestamp,
        producer_id, producer_epoch, base_sequence, len(records),
    ) + payload
    head = struct.pack(">qiibI", base_offset, 9 + len(after_crc), leader_epoch, 2, crc32c(after_crc))
    return head + after_crc


def build_record(offset_delta: int, key: bytes | None, value: bytes | None,
                 headers=(), timestamp_delta: int = 0) -> bytes:
    def sized(b):
        return write_varint(-1) if b is None else write_varint(len(b)) + b

    inner = b"\x00" + write_varint(timestamp_delta) + write_varint(offset_delta) + sized(key) + sized(value)
    inner += write_varint(len(headers))
    for k, v in headers:
        inner += sized(k.encode("utf-8")) + sized(v)
    return write_varint(len(inner)) + inner
