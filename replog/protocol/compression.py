"""Per-batch compression codecs (attributes bits 0-2), all through cramjam.

What each codec writes, chosen so that Kafka's Java client reads it:
gzip a standard gzip member; snappy the xerial framing (see `xerial`);
lz4 the LZ4 frame format with 64 KiB independent blocks (see `lz4_frame`);
zstd one zstd frame.
"""

import enum

import cramjam

from replog.protocol import lz4_frame, xerial

# Kafka's default `compression.zstd.level`; cramjam's own default (11) is slow.
ZSTD_LEVEL = 3


class Compression(enum.IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @classmethod
    def from_name(cls, name: str) -> "Compression":
        """Map a Kafka `compression.type` value ("none", "gzip", ...) to its codec."""
        try:
            return cls[name.strip().upper()]
        except KeyError:
            names = ", ".join(c.name.lower() for c in cls)
            raise ValueError(f"unknown compression.type {name!r}; expected one of {names}") from None

    @classmethod
    def for_topic(cls, compression_type: str) -> "Compression | None":
        """The codec a topic's compression.type has the leader store batches in; None for "producer"
        (each batch as its producer compressed it). The topic's "uncompressed" is the producer's "none"."""
        if compression_type == "producer":
            return None
        return cls.NONE if compression_type == "uncompressed" else cls.from_name(compression_type)


def compress(codec: Compression, data: bytes) -> bytes:
    if codec is Compression.NONE:
        return data
    if codec is Compression.GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec is Compression.SNAPPY:
        return xerial.compress(data)
    if codec is Compression.LZ4:
        return lz4_frame.compress(data)
    if codec is Compression.ZSTD:
        return bytes(cramjam.zstd.compress(data, level=ZSTD_LEVEL))
    raise ValueError(f"unknown compression codec {codec!r}")


def decompress(codec: Compression, data) -> bytes:
    """Inflate one batch's records from any buffer; ValueError if they do not inflate."""
    try:
        return _decompress(codec, data)
    except cramjam.DecompressionError as exc:
        raise ValueError(f"{codec.name.lower()} data does not decompress: {exc}") from exc


def _decompress(codec: Compression, data) -> bytes:
    if codec is Compression.NONE:
        return data
    if codec is Compression.GZIP:
        return bytes(cramjam.gzip.decompress(data))
    if codec is Compression.SNAPPY:
        return xerial.decompress(data)
    if codec is Compression.LZ4:
        return lz4_frame.decompress(data)
    if codec is Compression.ZSTD:
        return bytes(cramjam.zstd.decompress(data))
    raise ValueError(f"unknown compression codec {codec!r}")
