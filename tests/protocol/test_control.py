"""Transaction markers travel as Kafka's control batches: the attribute bits, the producer's id and epoch,
and one record with the ControlRecord key and the EndTransactionMarker value; what a read_committed
consumer makes of real batches."""

import struct

import pytest

from replog.core.txn.markers import ControlType, TxnMarker
from replog.core.txn.read_committed import read_committed
from replog.protocol import CorruptBatchError, decode_batch, encode_batch, iter_batches
from replog.protocol.control import (
    control_type_id,
    decode_marker,
    decode_marker_value,
    encode_control_key,
    encode_marker_value,
    fetched_batch,
    marker_batch,
)


def test_the_key_and_value_are_kafkas_bytes():
    assert encode_control_key(ControlType.ABORT) == b"\x00\x00\x00\x00"
    assert encode_control_key(ControlType.COMMIT) == b"\x00\x00\x00\x01"
    assert encode_marker_value(7) == b"\x00\x00\x00\x00\x00\x07"


@pytest.mark.parametrize("commit", [True, False])
def test_a_marker_batch_reads_back_as_the_marker(commit):
    marker = TxnMarker(producer_id=42, producer_epoch=3, coordinator_epoch=9, commit=commit)
    batch = decode_batch(marker_batch(marker, timestamp_ms=1_000, base_offset=77))
    assert batch.is_control and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.base_offset) == (42, 3, -1, 77)
    assert decode_marker(batch) == marker


def test_newer_versions_are_read_by_their_known_prefix_as_kafka_does():
    assert control_type_id(struct.pack(">hh", 3, 1) + b"more") == 1
    assert decode_marker_value(struct.pack(">hi", 2, 5) + b"more") == 5


@pytest.mark.parametrize(("key", "value", "says"), [
    (b"\x00\x00\x00", encode_marker_value(1), "key needs 4 bytes"),
    (struct.pack(">hh", -1, 0), encode_marker_value(1), "version -1"),
    (encode_control_key(ControlType.COMMIT), b"\x00\x00\x00", "value needs 6 bytes"),
    (encode_control_key(ControlType.COMMIT), None, "value needs 6 bytes"),
])
def test_a_control_batch_that_is_no_marker_is_a_corrupt_batch(key, value, says):
    batch = decode_batch(encode_batch([(key, value)], producer_id=1, producer_epoch=0, transactional=True,
                                      control=True, base_timestamp_ms=0))
    with pytest.raises(CorruptBatchError, match=says):
        decode_marker(batch)


def test_another_kind_of_control_record_is_no_transaction_marker():
    batch = decode_batch(encode_batch([(struct.pack(">hh", 0, 2), b"")], control=True, base_timestamp_ms=0))
    assert decode_marker(batch) is None


def test_a_read_committed_consumer_drops_an_aborted_transaction_in_real_batches():
    pid = 5
    log = b"".join([
        encode_batch([(None, b"aborted")], base_offset=0, producer_id=pid, producer_epoch=0, base_sequence=0,
                     transactional=True, base_timestamp_ms=0),
        encode_batch([(None, b"plain")], base_offset=1, base_timestamp_ms=0),
        marker_batch(TxnMarker(pid, 1, 0, commit=False), timestamp_ms=0, base_offset=2),
        encode_batch([(None, b"committed")], base_offset=3, producer_id=pid, producer_epoch=1, base_sequence=0,
                     transactional=True, base_timestamp_ms=0),
        marker_batch(TxnMarker(pid, 2, 0, commit=True), timestamp_ms=0, base_offset=4),
    ])
    batches = [fetched_batch(b) for b in iter_batches(log)]
    assert [r.value for r in read_committed(batches, [(pid, 0)], last_stable_offset=5)] == [b"plain", b"committed"]
