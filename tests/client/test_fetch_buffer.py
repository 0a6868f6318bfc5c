"""What poll() takes from a fetched answer: whole batches only, from the position on."""

from replog.client.fetch_buffer import CompletedFetch, FetchBuffer, next_fetch_offset
from replog.client.fetch_state import EARLIEST, Assignment
from replog.core.topic_partition import TopicPartition
from replog.core.txn.markers import TxnMarker
from replog.core.txn.read_committed import AbortedFilter
from replog.protocol import encode_batch, stamp_batches, validate_batches
from replog.protocol.control import marker_batch

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


def transactional(values, base_offset, producer_id):
    buffer = bytearray(encode_batch([(None, v) for v in values], producer_id=producer_id, producer_epoch=0,
                                    base_sequence=0, transactional=True))
    stamp_batches(buffer, base_offset, 0, validate_batches(buffer, max_message_bytes=1 << 20).headers)
    return bytes(buffer)


def marker(offset, producer_id, commit):
    buffer = bytearray(marker_batch(TxnMarker(producer_id, 1, 0, commit), timestamp_ms=0))
    stamp_batches(buffer, offset, 0, validate_batches(buffer, max_message_bytes=1 << 20).headers)
    return bytes(buffer)


# Producer 7 commits a, b; producer 8 aborts x, y; a plain record p sits between them.
LOG = (transactional([b"a"], 0, 7) + transactional([b"x"], 1, 8) + stamped([b"p"], 2)
       + transactional([b"b"], 3, 7) + transactional([b"y"], 4, 8) + marker(5, 7, True) + marker(6, 8, False))


def taken(fetch, position=0):
    out = []
    assert fetch.take(out, 100, position)[0] == 7  # the position passes every batch, markers included
    return [r.value for r in out]


def test_read_committed_drops_the_aborted_transactions_batches_and_never_returns_a_marker():
    assert taken(CompletedFetch(TP, 0, LOG, AbortedFilter([(8, 1)]))) == [b"a", b"p", b"b"]


def test_read_uncommitted_returns_aborted_records_but_never_a_marker():
    assert taken(CompletedFetch(TP, 0, LOG)) == [b"a", b"x", b"p", b"b", b"y"]


def test_an_aborted_transaction_that_began_before_the_fetch_still_counts():
    # The answer lists the transaction with its first offset (1), below the fetch's start (4).
    assert taken(CompletedFetch(TP, 0, LOG, AbortedFilter([(8, 1)])), position=4) == []


def test_after_its_abort_marker_a_producers_next_transaction_is_read_again():
    later = LOG + transactional([b"z"], 7, 8)
    out = []
    CompletedFetch(TP, 0, later, AbortedFilter([(8, 1)])).take(out, 100, 0)
    assert [r.value for r in out] == [b"a", b"p", b"b", b"z"]


def test_an_abort_marker_before_the_position_still_ends_its_transaction():
    later = LOG + transactional([b"z"], 7, 8)
    out = []
    CompletedFetch(TP, 0, later, AbortedFilter([(8, 1)])).take(out, 100, 7)
    assert [r.value for r in out] == [b"z"]


def test_a_paused_partitions_fetched_records_wait_in_order_while_the_others_are_returned():
    other = TopicPartition("t", 1)
    assignment = Assignment(EARLIEST)
    assignment.assign([TP, other])
    for tp in (TP, other):
        assignment.seek(tp, 0)
    buffer = FetchBuffer(assignment)
    buffer.completed.extend([CompletedFetch(TP, assignment.get(TP).generation, stamped([b"a", b"b"], 0)),
                             CompletedFetch(other, assignment.get(other).generation, stamped([b"x"], 0)),
                             CompletedFetch(TP, assignment.get(TP).generation, stamped([b"c"], 2))])
    assignment.pause([TP])
    assert assignment.paused() == {TP}
    assert [r.value for r in buffer.collect(10)] == [b"x"]
    assert [r.value for r in buffer.collect(10)] == []
    assert assignment.get(TP).position == 0 and buffer.buffered()[TP] == 2
    assignment.resume([TP])
    assert [r.value for r in buffer.collect(10)] == [b"a", b"b", b"c"]
    assert assignment.get(TP).position == 3 and assignment.paused() == set()
