"""Our codec against the v2 specification, through a reader that shares none of its code."""

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.protocol import Compression, Record, decode_batch, encode_batch, validate_batches

from .spec_reader import build_batch, build_record, crc32c as spec_crc32c, parse_batch

# One record (null key, value "hello") at baseTimestamp 1700000000000, laid out
# field by field from the specification; the CRC was computed by the bitwise
# CRC-32C in spec_reader and is written here as a fixed value.
HELLO_BATCH = bytes.fromhex(
    "0000000000000000"  # baseOffset 0
    "0000003d"  # batchLength 61: 73 bytes in all
    "ffffffff"  # partitionLeaderEpoch -1
    "02"  # magic 2
    "e641a44b"  # crc
    "0000"  # attributes: no compression, CreateTime
    "00000000"  # lastOffsetDelta 0
    "0000018bcfe56800"  # baseTimestamp 1700000000000
    "0000018bcfe56800"  # maxTimestamp
    "ffffffffffffffff"  # producerId -1
    "ffff"  # producerEpoch -1
    "ffffffff"  # baseSequence -1
    "00000001"  # records count 1
    "16"  # record length 11
    "00"  # attributes
    "00"  # timestampDelta 0
    "00"  # offsetDelta 0
    "01"  # keyLength -1: null
    "0a"  # valueLength 5
    "68656c6c6f"  # "hello"
    "00"  # headers count 0
)


def test_crc32c_check_value():
    # The standard check value of CRC-32C (RFC 3720, appendix B.4).
    assert crc32c.crc32c(b"123456789") == 0xE3069283
    assert spec_crc32c(b"123456789") == 0xE3069283


def test_the_hand_laid_batch_has_the_known_crc():
    assert crc32c.crc32c(HELLO_BATCH[21:]) == 0xE641A44B


def test_our_encoder_writes_the_hand_laid_batch_byte_for_byte():
    assert encode_batch([(None, b"hello")], base_timestamp_ms=1_700_000_000_000) == HELLO_BATCH


def test_our_decoder_reads_the_hand_laid_batch():
    batch = decode_batch(HELLO_BATCH)
    assert batch.crc == 0xE641A44B and batch.size == 73
    assert batch.records == [Record(0, 1_700_000_000_000, None, b"hello")]
    assert validate_batches(HELLO_BATCH, max_message_bytes=1_000).ok


def test_our_decoder_reads_spec_built_records_with_multi_byte_varints():
    records = [
        build_record(0, b"key", b"v" * 200, headers=[("h1", b"x"), ("h2", None)], timestamp_delta=-5),
        build_record(70, None, None, timestamp_delta=100_000),
        build_record(9000, b"", b"w" * 20_000, timestamp_delta=2**40),
    ]
    buf = build_batch(records, base_offset=1000, last_offset_delta=9000, base_timestamp=10**12, max_timestamp=10**12)
    batch = decode_batch(buf)
    assert [(r.offset, r.timestamp) for r in batch.records] == [
        (1000, 10**12 - 5),
        (1070, 10**12 + 100_000),
        (10_000, 10**12 + 2**40),
    ]
    assert batch.records[0].headers == (("h1", b"x"), ("h2", None))
    assert batch.records[2].value == b"w" * 20_000
    assert validate_batches(buf, max_message_bytes=10**6).ok


@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.name)
def test_spec_reader_parses_what_we_encode(codec):
    items = [(b"k%d" % i, b"value-%d" % i * (i + 1), (("n", b"%d" % i),)) for i in range(300)]
    encoded = encode_batch(
        items, base_offset=5, base_timestamp_ms=42, compression=codec, producer_id=8, partition_leader_epoch=2
    )
    parsed = parse_batch(encoded)
    assert parsed.crc_ok and parsed.magic == 2 and parsed.attributes == codec
    assert (parsed.base_offset, parsed.partition_leader_epoch, parsed.producer_id) == (5, 2, 8)
    assert parsed.last_offset_delta == 299 and parsed.base_timestamp == parsed.max_timestamp == 42
    assert [(r.offset_delta, r.key, r.value, r.headers) for r in parsed.records] == [
        (i, k, v, [h[0]]) for i, (k, v, h) in enumerate(items)
    ]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.none() | st.binary(max_size=200), st.none() | st.binary(max_size=200)), min_size=1, max_size=30
    )
)
def test_spec_reader_agrees_on_any_values(items):
    parsed = parse_batch(encode_batch(items, base_timestamp_ms=0))
    assert parsed.crc_ok
    assert [(r.key, r.value) for r in parsed.records] == items
