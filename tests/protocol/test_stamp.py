"""The broker's writes into a producer's bytes: offsets and leader epoch without touching the CRC,
LogAppendTime, and a topic's compression.type."""

import gzip
import struct

import crc32c

from replog.core.txn.markers import TxnMarker
from replog.protocol import (
    Compression,
    encode_batch,
    iter_batches,
    recompress_batches,
    stamp_batches,
    stamp_log_append_time,
    validate_batches,
)
from replog.protocol.control import marker_batch

from .spec_reader import build_batch, build_record


def test_stamping_sets_consecutive_offsets_and_keeps_every_crc_valid():
    batches = [
        encode_batch([(None, b"a"), (None, b"b"), (None, b"c")]),
        encode_batch([(b"k", b"d")], compression=Compression.GZIP),
        encode_batch([(None, b"e"), (None, b"f")], compression=Compression.SNAPPY),
    ]
    buf = bytearray(b"".join(batches))
    crcs_before = [h.crc for h in validate_batches(buf, max_message_bytes=1 << 20).headers]
    headers = validate_batches(buf, max_message_bytes=1 << 20).headers

    next_offset = stamp_batches(buf, 1000, 7, headers)

    assert next_offset == 1006
    result = validate_batches(buf, max_message_bytes=1 << 20)
    assert result.ok
    assert [h.crc for h in result.headers] == crcs_before
    assert [(h.base_offset, h.last_offset, h.partition_leader_epoch) for h in result.headers] == [
        (1000, 1002, 7),
        (1003, 1003, 7),
        (1004, 1005, 7),
    ]
    decoded = list(iter_batches(buf))
    assert [r.offset for b in decoded for r in b.records] == list(range(1000, 1006))
    assert [r.value for b in decoded for r in b.records] == [b"a", b"b", b"c", b"d", b"e", b"f"]


def test_stamping_through_a_memoryview_writes_the_underlying_buffer():
    buf = bytearray(b"\xee" * 5 + encode_batch([(None, b"x")]))
    view = memoryview(buf)[5:]
    headers = validate_batches(view, max_message_bytes=1 << 20).headers
    assert stamp_batches(view, 42, 3, headers) == 43
    assert buf[:5] == b"\xee" * 5
    assert validate_batches(buf[5:], max_message_bytes=1 << 20).headers[0].base_offset == 42


def test_a_batch_with_offset_gaps_keeps_its_offset_range():
    buf = bytearray(build_batch([build_record(0, b"a", b"1"), build_record(4, b"b", b"2")], last_offset_delta=4))
    headers = validate_batches(buf, max_message_bytes=1 << 20).headers
    assert stamp_batches(buf, 10, 0, headers) == 15
    assert [r.offset for b in iter_batches(buf) for r in b.records] == [10, 14]


def test_log_append_time_gives_every_record_the_leaders_time_and_a_crc_that_holds():
    """On a LogAppendTime topic the leader's stamp inside the CRC'd range is hashed again; the records
    are not re-encoded, so a compressed batch keeps its payload byte for byte."""
    buf = bytearray(encode_batch([(None, b"a", (), 1_000), (None, b"b", (), 3_000)], base_timestamp_ms=1_000,
                                 max_timestamp_ms=3_000)
                    + encode_batch([(b"k", b"c")], compression=Compression.ZSTD, base_timestamp_ms=5_000))
    headers = validate_batches(buf, max_message_bytes=1 << 20).headers
    payloads = [bytes(buf[h.position + 61:h.end]) for h in headers]

    stamp_log_append_time(buf, headers, 1_700_000_000_123)

    stamped = validate_batches(buf, max_message_bytes=1 << 20)
    assert stamped.ok, stamped.reason
    assert all(h.is_log_append_time and h.max_timestamp == 1_700_000_000_123 for h in stamped.headers)
    assert [h.base_timestamp for h in stamped.headers] == [1_000, 5_000], "the producer's first time stays"
    assert [bytes(buf[h.position + 61:h.end]) for h in stamped.headers] == payloads
    assert [r.timestamp for b in iter_batches(buf) for r in b.records] == [1_700_000_000_123] * 3


def test_a_log_append_time_batch_stays_one_when_encoded_again():
    """The cleaner re-encodes a batch's survivors: a LogAppendTime batch keeps its type and time."""
    buf = bytearray(encode_batch([(b"k", b"v"), (b"j", b"w")], base_timestamp_ms=1_000))
    stamp_log_append_time(buf, validate_batches(buf, max_message_bytes=1 << 20).headers, 9_000)
    decoded = next(iter_batches(buf))

    again = next(iter_batches(encode_batch(decoded.records[1:], base_offset=decoded.base_offset,
                                           log_append_time=decoded.is_log_append_time)))

    assert again.is_log_append_time and again.max_timestamp == 9_000
    assert [(r.offset, r.timestamp) for r in again.records] == [(1, 9_000)]


def test_recompressing_keeps_each_batchs_offsets_times_producer_fields_and_records():
    """A topic whose compression.type names a codec has the leader store every batch in it."""
    plain = encode_batch([(b"k", b"v" * 100, (("h", b"1"),), 1_000), (None, b"w" * 100, (), 900)],
                         base_offset=0, base_timestamp_ms=1_000, max_timestamp_ms=1_000, producer_id=7,
                         producer_epoch=2, base_sequence=40, transactional=True)
    zstd = encode_batch([(None, b"z")], base_offset=2, compression=Compression.ZSTD, base_timestamp_ms=2_000)
    marker = marker_batch(TxnMarker(7, 2, 0, commit=True), timestamp_ms=3_000, base_offset=3)
    buf = plain + zstd + marker
    headers = validate_batches(buf, max_message_bytes=1 << 20).headers

    stored = recompress_batches(buf, headers, Compression.ZSTD)

    before, after = list(iter_batches(buf)), list(iter_batches(stored))
    assert [b.compression for b in after] == [Compression.ZSTD, Compression.ZSTD, Compression.NONE]
    assert stored.endswith(zstd + marker), "a batch in the codec and a marker stay as they are"
    fields = ("base_offset", "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id", "producer_epoch",
              "base_sequence", "is_transactional", "records_count")
    assert [[getattr(b, f) for f in fields] for b in after] == [[getattr(b, f) for f in fields] for b in before]
    assert [b.records for b in after] == [b.records for b in before]
    assert len(stored) < len(buf), "200 repeated bytes shrink in zstd"
    assert recompress_batches(stored, validate_batches(stored, max_message_bytes=1 << 20).headers,
                              Compression.ZSTD) is None, "nothing to do when every batch is in the codec"


def test_an_uncompressed_topic_stores_a_producers_compressed_batch_plain():
    gzip = encode_batch([(b"k", b"v")], compression=Compression.GZIP, base_timestamp_ms=5)
    stored = recompress_batches(gzip, validate_batches(gzip, max_message_bytes=1 << 20).headers,
                                Compression.for_topic("uncompressed"))
    (batch,) = iter_batches(stored)
    assert batch.compression is Compression.NONE and [(r.key, r.value, r.timestamp) for r in batch.records] == [
        (b"k", b"v", 5)]
    assert Compression.for_topic("producer") is None and Compression.for_topic("lz4") is Compression.LZ4


def test_records_that_do_not_parse_inside_a_compressed_batch_show_once_stored_plain():
    """Recompression moves the records section as it is: a compressed batch's records are walked only
    once they lie uncompressed, so the check after recompressing catches what the producer hid."""
    good = encode_batch([(b"k", b"v")], compression=Compression.GZIP, base_timestamp_ms=5)
    payload = gzip.compress(b"\x7f" * 20)  # inflates, but to no record
    head = bytearray(good[:61])
    struct.pack_into(">i", head, 8, 49 + len(payload))
    struct.pack_into(">I", head, 17, crc32c.crc32c(payload, crc32c.crc32c(bytes(head[21:]))))
    hidden = bytes(head) + payload
    assert validate_batches(hidden, max_message_bytes=1 << 20).ok, "a compressed batch's records are not walked"

    stored = recompress_batches(hidden, validate_batches(hidden, max_message_bytes=1 << 20).headers,
                                Compression.NONE)

    checked = validate_batches(stored, max_message_bytes=1 << 20)
    assert not checked.ok and checked.error.name == "CORRUPT_MESSAGE"
