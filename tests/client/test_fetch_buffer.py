"""What poll() takes from a fetched answer: whole batches only, from the position on."""

from replog.client.fetch_buffer import CompletedFetch, next_fetch_offset
from replog.core.topic_partition import TopicPartition
from replog.protocol import encode_batch, stamp_batches, validate_batches

TP = TopicPartition("t", 0)


def stamped(values, base_offset, epoch=0):
    """A batch as a leader stores it: offsets from base_offset, stamped with its leader epoch."""
    buffer = bytearray(encode_batch([(None, v) for v in values]))
    stamp_batches(buffer, base_offset, epoch, validate_batches(buffer, max_message_bytes=1 << 20).headers)
    return bytes(buffer)


def test_next_fetch_offset_stops_before_a_cut_off_batch():
    first = stamped([b"a", b"b"], 10)
    second = stamped([b"c"], 12)
    assert next_fetch_offset(first + second, 10) == 13
    assert next_fetch_offset(first + second[:-5], 10) == 12
    assert next_fetch_offset(first[:30], 10) == 10


def test_a_completed_fetch_skips_records_before_the_position_and_resumes_where_it_stopped():
    fetch = CompletedFetch(TP, 0, stamped([b"a", b"b", b"c"], 10, epoch=4) + stamped([b"d", b"e"], 13, epoch=5))
    out = []
    assert fetch.take(out, 2, 11) == (13, 4)
    assert [r.value for r in out] == [b"b", b"c"]
    out.clear()
    assert fetch.take(out, 10, 13) == (15, 5)
    assert [(r.offset, r.value, r.leader_epoch) for r in out] == [(13, b"d", 5), (14, b"e", 5)]
    assert fetch.exhausted or fetch.take([], 1, 15) == (15, -1)
