"""What a topic's configs refuse in a producer's batches, asked before the leader's core takes them:
keys on a compacted topic, and CreateTime timestamps within message.timestamp.before/after.max.ms."""

import struct

import crc32c
import pytest

from replog.core.errors import ErrorCode
from replog.core.txn.markers import TxnMarker
from replog.protocol import Compression, encode_batch, record_decoding, validate_batches
from replog.protocol.control import marker_batch
from replog.storage import LogConfig
from replog.storage.appended_batches import refused_records

NOW = 1_700_000_000_000
HOUR = 3_600_000


@pytest.fixture(autouse=True, params=["compiled walk", "decoder alone"])
def walk(request, monkeypatch):
    """Each rule holds with the compiled walk over the records and where only the decoder serves."""
    if request.param == "decoder alone":
        monkeypatch.setattr(record_decoding, "_refused_compiled", None)
    elif record_decoding._refused_compiled is None:
        pytest.fail("replog/protocol/_records.c was not built")


def refused(data: bytes, now: int = NOW, **config):
    headers = validate_batches(data, max_message_bytes=1 << 20).headers
    return refused_records(data, headers, LogConfig(**config), now)


def test_a_compacted_topic_refuses_a_record_without_a_key_and_names_it():
    keyed = encode_batch([(b"k", b"v")], base_timestamp_ms=NOW)
    mixed = encode_batch([(b"a", b"1"), (None, b"2")], base_timestamp_ms=NOW, compression=Compression.LZ4)

    assert refused(keyed + mixed, cleanup_policy="compact") == (
        ErrorCode.INVALID_RECORD, "record 1 of batch 1 has no key, and a compacted topic keeps the latest record "
                                  "of each key: give every record a key")
    assert refused(keyed, cleanup_policy="compact,delete") is None
    assert refused(mixed) is None, "a topic that only deletes takes records without keys"


def test_markers_are_not_the_producers_records():
    marker = marker_batch(TxnMarker(7, 0, 0, commit=True), timestamp_ms=0)
    assert refused(marker, cleanup_policy="compact", message_timestamp_before_max_ms=HOUR) is None


def test_a_create_time_after_the_brokers_clock_by_more_than_the_bound_is_refused():
    at_bound = encode_batch([(None, b"v")], base_timestamp_ms=NOW + HOUR)
    beyond = encode_batch([(None, b"v", (), NOW), (None, b"w", (), NOW + HOUR + 1)], base_timestamp_ms=NOW,
                          max_timestamp_ms=NOW + HOUR + 1)

    assert refused(at_bound) is None
    error, reason = refused(at_bound + beyond)
    assert error is ErrorCode.INVALID_TIMESTAMP
    assert reason == (f"batch 1 holds a record timestamped {NOW + HOUR + 1}, more than "
                      f"message.timestamp.after.max.ms={HOUR} after the broker's clock ({NOW}); the topic takes "
                      f"timestamps up to {NOW + HOUR}")
    assert refused(beyond, message_timestamp_after_max_ms=2 * HOUR) is None


def test_old_create_times_pass_unless_the_topic_bounds_them_and_then_every_record_counts():
    """The first record's time does not settle the lower bound: a later record may be older."""
    older_later = encode_batch([(None, b"new", (), NOW), (None, b"old", (), 1_000)], base_timestamp_ms=NOW,
                               max_timestamp_ms=NOW)

    assert refused(older_later) is None, "message.timestamp.before.max.ms is unbounded by default, as in Kafka"
    error, reason = refused(older_later, message_timestamp_before_max_ms=HOUR)
    assert error is ErrorCode.INVALID_TIMESTAMP
    assert reason.startswith("record 1 of batch 0 is timestamped 1000, more than "
                             f"message.timestamp.before.max.ms={HOUR} before the broker's clock ({NOW})")


def test_a_log_append_time_topic_checks_no_producer_time():
    anything = encode_batch([(None, b"v", (), 1_000), (None, b"w", (), NOW + 10 * HOUR)], base_timestamp_ms=1_000,
                            max_timestamp_ms=NOW + 10 * HOUR)
    assert refused(anything, message_timestamp_type="LogAppendTime", message_timestamp_before_max_ms=HOUR) is None


@pytest.mark.parametrize("config", [{"cleanup_policy": "compact"}, {"message_timestamp_before_max_ms": HOUR}])
def test_records_that_do_not_inflate_are_corrupt_not_a_crash(config):
    data = bytearray(encode_batch([(b"k", b"v" * 50)], base_timestamp_ms=NOW, compression=Compression.GZIP))
    data[70:80] = b"\xff" * 10
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))  # a sound CRC over unsound records

    error, reason = refused(bytes(data), **config)

    assert error is ErrorCode.CORRUPT_MESSAGE and "batch at byte 0" in reason
