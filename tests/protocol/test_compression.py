"""Compressed batches in the framings Kafka's clients write and read."""

import struct

import cramjam
import pytest

from replog.protocol import Compression, decode_batch, encode_batch
from replog.protocol.compression import compress, decompress
from replog.protocol.xerial import HEADER as XERIAL_HEADER

from .spec_reader import build_batch, build_record

DATA = b"".join(b"record %d of a compressible stream; " % i for i in range(5000))
LZ4_MAGIC = struct.pack("<I", 0x184D2204)


def xxh32_short(data: bytes, seed: int = 0) -> int:
    """xxHash32 of fewer than 16 bytes, from its specification (for LZ4 header checksums)."""
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    mask = 0xFFFFFFFF

    def rotl(x, r):
        return ((x << r) | (x >> (32 - r))) & mask

    assert len(data) < 16
    h = (seed + p5 + len(data)) & mask
    pos = 0
    while pos + 4 <= len(data):
        (lane,) = struct.unpack_from("<I", data, pos)
        h = rotl((h + lane * p3) & mask, 17) * p4 & mask
        pos += 4
    for byte in data[pos:]:
        h = rotl((h + byte * p5) & mask, 11) * p1 & mask
    h ^= h >> 15
    h = h * p2 & mask
    h ^= h >> 13
    h = h * p3 & mask
    return h ^ (h >> 16)


def kafka_java_lz4_frame(data: bytes) -> bytes:
    """An LZ4 frame as Kafka's Lz4BlockOutputStream writes it: FLG 0x60, 64 KiB blocks, no checksums."""
    flg, bd = 0x60, 0x40
    out = LZ4_MAGIC + bytes([flg, bd, (xxh32_short(bytes([flg, bd])) >> 8) & 0xFF])
    for start in range(0, len(data), 64 * 1024):
        block = bytes(cramjam.lz4.compress_block(data[start : start + 64 * 1024], store_size=False))
        out += struct.pack("<I", len(block)) + block
    return out + struct.pack("<I", 0)


def test_xxh32_matches_its_reference_value():
    assert xxh32_short(b"") == 0x02CC5D05


@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.name)
def test_every_codec_round_trips_bytes(codec):
    assert decompress(codec, compress(codec, DATA)) == DATA
    assert decompress(codec, compress(codec, b"")) == b""


def test_snappy_is_written_in_xerial_framing_with_32_kib_blocks():
    framed = compress(Compression.SNAPPY, DATA)
    assert framed[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) == XERIAL_HEADER
    pos, blocks = 16, []
    while pos < len(framed):
        (length,) = struct.unpack_from(">i", framed, pos)
        blocks.append(bytes(cramjam.snappy.decompress_raw(framed[pos + 4 : pos + 4 + length])))
        pos += 4 + length
    assert b"".join(blocks) == DATA
    assert all(len(b) == 32 * 1024 for b in blocks[:-1])


def test_raw_snappy_as_other_clients_write_it_is_read():
    assert decompress(Compression.SNAPPY, bytes(cramjam.snappy.compress_raw(DATA))) == DATA


def test_concatenated_xerial_streams_are_read_as_one():
    first, second = compress(Compression.SNAPPY, DATA[:1000]), compress(Compression.SNAPPY, DATA[1000:])
    assert decompress(Compression.SNAPPY, first + second) == DATA


def test_lz4_frame_descriptor_is_one_kafka_java_accepts():
    frame = compress(Compression.LZ4, DATA)
    flg, bd, hc = frame[4], frame[5], frame[6]
    assert frame[:4] == LZ4_MAGIC
    assert flg >> 6 == 1 and flg & 0x20 and flg & 0x03 == 0  # version 1, independent blocks, reserved clear
    assert not flg & 0x08  # no content size, so the header checksum covers FLG and BD only
    assert 4 <= (bd >> 4) & 7 <= 7 and bd & 0x8F == 0
    assert hc == (xxh32_short(bytes([flg, bd])) >> 8) & 0xFF


def test_lz4_frames_as_kafka_java_writes_them_are_read():
    assert decompress(Compression.LZ4, kafka_java_lz4_frame(DATA)) == DATA


def test_a_batch_compressed_by_hand_decodes():
    records = [build_record(i, None, b"value %d" % i) for i in range(50)]
    body = kafka_java_lz4_frame(b"".join(records))
    batch = decode_batch(build_batch(records, attributes=Compression.LZ4, body=body))
    assert [r.value for r in batch.records] == [b"value %d" % i for i in range(50)]


def test_gzip_and_zstd_write_their_standard_frames():
    assert compress(Compression.GZIP, DATA)[:2] == b"\x1f\x8b"
    assert compress(Compression.ZSTD, DATA)[:4] == struct.pack("<I", 0xFD2FB528)


def test_compressed_batches_are_smaller_for_compressible_values():
    items = [(None, b"the same line of text, again and again") for _ in range(1000)]
    plain = len(encode_batch(items))
    for codec in (Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD):
        assert len(encode_batch(items, compression=codec)) < plain / 4, codec


def test_undecompressable_data_raises_value_error():
    for codec in (Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD):
        with pytest.raises(ValueError, match="does not decompress|overruns|cut short"):
            decompress(codec, b"\x82SNAPPY\x00garbage" if codec is Compression.SNAPPY else b"garbage")
