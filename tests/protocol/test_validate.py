"""validate_batches: what the broker accepts, and the one sentence it answers otherwise."""

import struct

import crc32c
import pytest

from replog.core.errors import ErrorCode
from replog.protocol import Compression, encode_batch, read_header, validate_batches

from .spec_reader import build_batch, build_record

LIMIT = 1 << 20


def batch(n=3, offset=0, **kwargs):
    return encode_batch([(None, b"v%d" % i) for i in range(n)], base_offset=offset, base_timestamp_ms=0, **kwargs)


def with_crc_fixed(buf: bytearray) -> bytes:
    buf[17:21] = struct.pack(">I", crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


def test_sound_batches_pass_with_their_headers():
    buf = batch(3) + batch(2, compression=Compression.LZ4) + batch(1)
    result = validate_batches(buf, max_message_bytes=LIMIT)
    assert result.ok and result.error is ErrorCode.NONE and result.reason == ""
    assert [h.records_count for h in result.headers] == [3, 2, 1]
    assert [h.position for h in result.headers] == [0, len(batch(3)), len(buf) - len(batch(1))]
    assert result.headers[1].compression is Compression.LZ4


def test_empty_input_is_an_invalid_request():
    result = validate_batches(b"", max_message_bytes=LIMIT)
    assert result.error is ErrorCode.INVALID_REQUEST
    assert "empty" in result.reason


def test_a_flipped_byte_is_caught_by_the_crc():
    buf = bytearray(batch(3))
    buf[-2] ^= 0x40
    result = validate_batches(bytes(buf), max_message_bytes=LIMIT)
    header = read_header(buf)
    assert result.error is ErrorCode.CORRUPT_MESSAGE
    assert result.reason.startswith(f"batch at byte 0 has CRC 0x{header.crc:08x} but its contents hash to 0x")


def test_the_reason_names_the_faulty_batch_by_position():
    first = batch(2)
    second = bytearray(batch(2))
    second[30] ^= 1
    result = validate_batches(first + bytes(second), max_message_bytes=LIMIT)
    assert result.error is ErrorCode.CORRUPT_MESSAGE
    assert result.reason.startswith(f"batch at byte {len(first)} has CRC")
    assert result.headers == []


def test_a_batch_above_max_message_bytes_is_too_large():
    buf = batch(100)
    result = validate_batches(buf, max_message_bytes=len(buf) - 1)
    assert result.error is ErrorCode.MESSAGE_TOO_LARGE
    assert result.reason == f"batch at byte 0 is {len(buf)} bytes, more than max.message.bytes ({len(buf) - 1})"
    assert validate_batches(buf, max_message_bytes=len(buf)).ok


@pytest.mark.parametrize("cut", [1, 12, 60, 61, 70])
def test_a_trailing_partial_batch_is_corrupt(cut):
    buf = batch(3)
    result = validate_batches(buf + buf[:cut], max_message_bytes=LIMIT)
    assert result.error is ErrorCode.CORRUPT_MESSAGE
    assert f"batch at byte {len(buf)}" in result.reason


def test_a_batch_length_overrunning_the_buffer_is_corrupt():
    buf = bytearray(batch(3))
    buf[8:12] = struct.pack(">i", len(buf))
    result = validate_batches(bytes(buf), max_message_bytes=LIMIT)
    assert result.error is ErrorCode.CORRUPT_MESSAGE
    assert f"declares {len(buf) + 12} bytes but only {len(buf)} remain" in result.reason


def test_a_batch_length_below_the_header_is_corrupt():
    buf = bytearray(batch(3))
    buf[8:12] = struct.pack(">i", 10)
    assert "less than its own header" in validate_batches(bytes(buf), max_message_bytes=LIMIT).reason


def test_only_magic_2_is_accepted():
    buf = bytearray(batch(1))
    buf[16] = 1
    result = validate_batches(bytes(buf), max_message_bytes=LIMIT)
    assert result.error is ErrorCode.CORRUPT_MESSAGE and "magic 1" in result.reason


def test_an_unknown_codec_is_corrupt():
    buf = bytearray(batch(1))
    buf[22] |= 0x07
    assert "compression codec 7" in validate_batches(with_crc_fixed(buf), max_message_bytes=LIMIT).reason


def test_more_records_than_the_offset_range_is_corrupt():
    buf = bytearray(batch(3))
    buf[23:27] = struct.pack(">i", 1)  # lastOffsetDelta 1 for 3 records
    assert "claims 3 records" in validate_batches(with_crc_fixed(buf), max_message_bytes=LIMIT).reason


def test_fewer_records_than_the_offset_range_is_allowed_as_after_compaction():
    records = [build_record(0, b"a", b"1"), build_record(4, b"b", b"2")]
    assert validate_batches(build_batch(records, last_offset_delta=4), max_message_bytes=LIMIT).ok


def test_record_lengths_must_tile_the_batch():
    records = [build_record(0, None, b"a" * 20), build_record(1, None, b"b" * 20)]
    body = b"".join(records)
    # The header says 3 records but only 2 are there, all under a valid CRC.
    short = build_batch(records + [b""], body=body)
    assert "holds 2 records but its header says 3" in validate_batches(short, max_message_bytes=LIMIT).reason
    trailing = build_batch(records, body=body + b"\x00\x00")
    assert "has 2 bytes after its 2 records" in validate_batches(trailing, max_message_bytes=LIMIT).reason
    overrun = build_batch(records, body=body[:-1])
    assert "running 1 bytes past the batch end" in validate_batches(overrun, max_message_bytes=LIMIT).reason


def test_any_buffer_type_is_accepted_and_non_buffers_are_refused():
    buf = batch(2)
    for form in (buf, bytearray(buf), memoryview(buf)):
        assert validate_batches(form, max_message_bytes=LIMIT).ok
    assert validate_batches("text", max_message_bytes=LIMIT).error is ErrorCode.INVALID_REQUEST
