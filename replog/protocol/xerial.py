"""Snappy in the xerial framing, the way Kafka's Java client writes it.

snappy-java's SnappyOutputStream writes an 8-byte magic, two big-endian int32s
(version 1, minimum compatible version 1), then blocks of at most 32 KiB of
input, each as a big-endian int32 length followed by one raw snappy block.
Other clients (librdkafka, sarama, kafka-python) write plain raw snappy; Kafka's
reader accepts both, and so does ours: input without the magic is raw snappy.
"""

import struct

import cramjam

MAGIC = b"\x82SNAPPY\x00"
VERSION = 1
COMPATIBLE_VERSION = 1
HEADER = MAGIC + struct.pack(">ii", VERSION, COMPATIBLE_VERSION)
BLOCK_INPUT_BYTES = 32 * 1024
_BLOCK_LENGTH = struct.Struct(">i")


def compress(data: bytes) -> bytes:
    parts = [HEADER]
    for start in range(0, len(data), BLOCK_INPUT_BYTES):
        block = bytes(cramjam.snappy.compress_raw(data[start : start + BLOCK_INPUT_BYTES]))
        parts.append(_BLOCK_LENGTH.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def decompress(data) -> bytes:
    """Inflate xerial-framed or raw snappy from any buffer."""
    if not _magic_at(data, 0):
        return bytes(cramjam.snappy.decompress_raw(data))
    return _decompress_framed(data)


def _decompress_framed(data: bytes) -> bytes:
    parts = []
    pos = 0
    end = len(data)
    while pos < end:
        # snappy-java also reads concatenated streams: a header may come again.
        if _magic_at(data, pos):
            if end - pos < len(HEADER):
                raise ValueError("xerial snappy header is cut short")
            pos += len(HEADER)
            continue
        if end - pos < _BLOCK_LENGTH.size:
            raise ValueError("xerial snappy block length is cut short")
        (length,) = _BLOCK_LENGTH.unpack_from(data, pos)
        pos += _BLOCK_LENGTH.size
        if length < 0 or pos + length > end:
            raise ValueError(f"xerial snappy block of {length} bytes overruns the data")
        parts.append(bytes(cramjam.snappy.decompress_raw(data[pos : pos + length])))
        pos += length
    return b"".join(parts)


def _magic_at(data, pos: int) -> bool:
    return bytes(data[pos : pos + len(MAGIC)]) == MAGIC
