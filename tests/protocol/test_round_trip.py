"""Whatever goes into encode_batch comes back out of decode_batch, for every codec."""

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.core.errors import ErrorCode
from replog.protocol import (
    Compression,
    CorruptBatchError,
    Record,
    decode_batch,
    encode_batch,
    iter_records,
    read_header,
)

CODECS = list(Compression)
BYTES_OR_NONE = st.none() | st.binary(max_size=300)
HEADERS = st.lists(st.tuples(st.text(max_size=10), BYTES_OR_NONE), max_size=3).map(tuple)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_values_keys_and_headers_survive_every_codec(codec):
    items = [
        (None, b"value-0"),
        (b"key-1", None),
        (None, None),
        (b"", b""),
        (b"k", b"v" * 100_000, (("trace-id", b"abc"), ("empty", b""), ("null", None), ("ünïcode", b"\xff"))),
    ]
    encoded = encode_batch(items, base_offset=40, base_timestamp_ms=1_700_000_000_000, compression=codec)
    batch = decode_batch(encoded)
    assert batch.compression is codec
    assert batch.size == len(encoded)
    assert [(r.offset, r.timestamp) for r in batch.records] == [(40 + i, 1_700_000_000_000) for i in range(5)]
    assert [(r.key, r.value) for r in batch.records] == [(k, v) for k, v, *_ in items]
    assert batch.records[4].headers == items[4][2]


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_a_large_batch_round_trips(codec):
    items = [(str(i).encode(), bytes([i % 251]) * (i % 700)) for i in range(5000)]
    batch = decode_batch(encode_batch(items, compression=codec))
    assert batch.records_count == 5000 and batch.last_offset == 4999
    assert [(r.key, r.value) for r in batch.records] == items


def test_header_fields_are_written_where_the_arguments_say():
    encoded = encode_batch(
        [(None, b"a"), (None, b"b")],
        base_offset=7,
        base_timestamp_ms=123,
        producer_id=99,
        producer_epoch=3,
        base_sequence=17,
        partition_leader_epoch=5,
        transactional=True,
    )
    header = read_header(encoded)
    assert (header.base_offset, header.last_offset, header.partition_leader_epoch) == (7, 8, 5)
    assert (header.base_timestamp, header.max_timestamp) == (123, 123)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (99, 3, 17)
    assert header.is_transactional and not header.is_control and header.magic == 2
    assert header.records_count == 2 and header.size == len(encoded)


def test_records_keep_their_own_offsets_and_timestamps():
    records = [
        Record(100, 5_000, b"a", b"1"),
        Record(101, 4_000, None, b"2", (("h", b"x"),)),
        Record(105, 9_000, b"c", None),
    ]
    encoded = encode_batch(records, base_offset=100)
    header = read_header(encoded)
    assert (header.base_timestamp, header.max_timestamp, header.last_offset_delta) == (5_000, 9_000, 5)
    assert decode_batch(encoded).records == records


def test_records_whose_offsets_do_not_increase_are_refused():
    with pytest.raises(ValueError, match="does not follow"):
        encode_batch([Record(3, 0, None, b"a"), Record(3, 0, None, b"b")], base_offset=3)


def test_an_empty_batch_is_refused():
    with pytest.raises(ValueError, match="at least one record"):
        encode_batch([])


def test_log_append_time_gives_every_record_the_max_timestamp():
    encoded = bytearray(encode_batch([(None, b"a"), (None, b"b")], base_timestamp_ms=10))
    # LogAppendTime is bit 3 of attributes; the broker sets it and re-stamps maxTimestamp.
    encoded[22] |= 0x08
    encoded[35:43] = (777).to_bytes(8, "big")
    encoded[17:21] = crc32c.crc32c(bytes(encoded[21:])).to_bytes(4, "big")
    assert [r.timestamp for r in decode_batch(bytes(encoded)).records] == [777, 777]


def test_iter_records_walks_several_batches_and_skips_a_partial_tail():
    first = encode_batch([(None, b"a"), (None, b"b")], base_offset=0)
    second = encode_batch([(None, b"c")], base_offset=2, compression=Compression.ZSTD)
    buf = first + second + second[:30]
    assert [(r.offset, r.value) for r in iter_records(buf)] == [(0, b"a"), (1, b"b"), (2, b"c")]


def test_compression_names_follow_kafka_compression_type():
    assert [Compression.from_name(n) for n in ("none", "gzip", "snappy", "lz4", "zstd", "GZIP")] == [
        Compression.NONE,
        Compression.GZIP,
        Compression.SNAPPY,
        Compression.LZ4,
        Compression.ZSTD,
        Compression.GZIP,
    ]
    with pytest.raises(ValueError, match="unknown compression.type 'brotli'"):
        Compression.from_name("brotli")


@settings(max_examples=150, deadline=None)
@given(
    items=st.lists(st.tuples(BYTES_OR_NONE, BYTES_OR_NONE, HEADERS), min_size=1, max_size=20),
    codec=st.sampled_from(CODECS),
    base_offset=st.integers(min_value=0, max_value=2**62),
    base_timestamp=st.integers(min_value=-(2**40), max_value=2**50),
)
def test_any_records_round_trip(items, codec, base_offset, base_timestamp):
    encoded = encode_batch(items, base_offset=base_offset, base_timestamp_ms=base_timestamp, compression=codec)
    records = decode_batch(encoded).records
    assert records == [Record(base_offset + i, base_timestamp, k, v, h) for i, (k, v, h) in enumerate(items)]


def test_max_timestamp_is_the_latest_record_even_before_the_base():
    records = [Record(0, 50, None, b"a"), Record(1, 80, None, b"b")]
    header = read_header(encode_batch(records, base_timestamp_ms=100))
    assert (header.base_timestamp, header.max_timestamp) == (100, 80)
    assert decode_batch(encode_batch(records, base_timestamp_ms=100)).records == records


def test_corrupt_batch_error_names_the_batch_and_the_fault():
    good = encode_batch([(None, b"a")])
    bad = bytearray(good)
    bad[-1] ^= 0xFF
    with pytest.raises(CorruptBatchError) as caught:
        list(iter_records(good + bytes(bad)))
    assert caught.value.position == len(good)
    assert str(caught.value).startswith(f"batch at byte {len(good)} has CRC 0x")
    assert caught.value.error_code is ErrorCode.CORRUPT_MESSAGE
