"""Records gather into batches by batch_size and linger_ms; batches leave per leader, in order."""

import itertools
import threading

import pytest

from replog.client.accumulator import BATCH_OVERHEAD_BYTES, RecordAccumulator, record_size_bytes
from replog.client.errors import ClientTimeoutError, ProducerClosedError
from replog.client.producer import OWN_TIMESTAMP_BYTES
from replog.core.topic_partition import TopicPartition
from replog.protocol import decode_batch, encode_batch
from replog.protocol.compression import Compression
from tests.client.helpers import metadata

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
T2 = TopicPartition("t", 2)
CLUSTER = metadata({"t": [(1, 0), (1, 0), (2, 0)]})  # partitions 0 and 1 on broker 1, 2 on broker 2
MiB = 1 << 20


def accumulator(batch_size=1000, linger_ms=5, buffer_memory=MiB):
    return RecordAccumulator(batch_size=batch_size, linger_ms=linger_ms, buffer_memory=buffer_memory)


def add(acc, tp, value=b"v" * 50, now_ms=0.0, **kwargs):
    return acc.append(tp, (None, value), record_size_bytes(None, value), now_ms, **kwargs)


@pytest.mark.parametrize("key,value,headers", [
    (None, b"", ()),
    (None, b"x" * 100, ()),
    (b"k" * 63, b"x" * 8000, ()),
    (b"k" * 64, b"x" * 8192, ()),
    (None, None, ()),
    (b"key", b"x" * 3000, (("h", b"1"), ("hh", None))),
])
def test_record_size_is_never_below_the_encoded_size_and_close_to_it(key, value, headers):
    estimated = record_size_bytes(key, value, headers)
    for count in (1, 20_000):  # offset deltas of one byte, and of three
        rows = [(key, value, headers)] * count
        encoded = len(encode_batch(rows)) - BATCH_OVERHEAD_BYTES
        assert encoded <= estimated * count <= encoded + 2 * count


def test_records_share_a_batch_until_batch_size_would_be_passed():
    acc = accumulator(batch_size=BATCH_OVERHEAD_BYTES + 3 * record_size_bytes(None, b"v" * 50))
    results = [add(acc, T0) for _ in range(4)]
    batches = [r[0] for r in results]
    assert batches[0] is batches[1] is batches[2]
    assert batches[3] is not batches[0]
    assert [r[1] for r in results] == [0, 1, 2, 0]  # index of the record within its batch
    assert [r[2] for r in results] == [True, False, False, True]  # a new batch was opened


@pytest.mark.parametrize("batch_size", [16_384, MiB])
def test_an_encoded_full_batch_fits_in_batch_size(batch_size):
    acc = accumulator(batch_size=batch_size, buffer_memory=4 * MiB)
    first = add(acc, T0, b"x" * 100)[0]
    while add(acc, T0, b"x" * 100)[0] is first:
        pass
    assert batch_size * 0.98 < len(first.encode(0, 0)) <= batch_size


def test_a_record_larger_than_batch_size_gets_a_batch_of_its_own():
    acc = accumulator(batch_size=200)
    big, _, opened = add(acc, T0, b"x" * 500)
    assert opened and big.rows == [(None, b"x" * 500)]
    assert add(acc, T0)[0] is not big


def test_a_batch_is_ready_when_full_or_after_linger_ms():
    acc = accumulator(batch_size=BATCH_OVERHEAD_BYTES + record_size_bytes(None, b"v" * 50), linger_ms=5)
    add(acc, T2, now_ms=100.0)
    check = acc.ready(CLUSTER, 102.0)
    assert check.leaders == frozenset() and check.next_ready_ms == pytest.approx(3.0)
    assert acc.ready(CLUSTER, 105.0).leaders == {2}
    add(acc, T0, now_ms=102.0)
    add(acc, T0, now_ms=102.0)  # does not fit: the first batch of T0 is full
    assert acc.ready(CLUSTER, 102.0).leaders == {1}


def test_flush_makes_every_batch_ready_at_once():
    acc = accumulator(linger_ms=10_000)
    add(acc, T0)
    assert acc.ready(CLUSTER, 0.0).leaders == frozenset()
    acc.begin_flush()
    assert acc.ready(CLUSTER, 0.0).leaders == {1}
    acc.end_flush()


def test_partitions_without_a_known_leader_are_reported_for_a_metadata_refresh():
    acc = accumulator()
    add(acc, TopicPartition("other", 0))
    assert acc.ready(CLUSTER, 10.0).unknown_leader_topics == {"other"}


def test_drain_takes_one_batch_per_partition_of_each_ready_leader_even_if_not_full():
    acc = accumulator(linger_ms=5)
    add(acc, T0, now_ms=0.0)
    add(acc, T1, now_ms=4.0)  # still lingering, but broker 1 gets a request anyway
    add(acc, T2, now_ms=4.0)
    drained = acc.drain(CLUSTER, {1}, max_request_size=MiB, now_ms=5.0)
    assert {b.tp for b in drained[1]} == {T0, T1}
    assert 2 not in drained
    assert all(b.attempts == 1 for b in drained[1])
    assert add(acc, T0, now_ms=6.0)[2], "a drained batch takes no more records"


def test_drain_keeps_a_request_within_max_request_size():
    acc = accumulator(batch_size=MiB)
    add(acc, T0, b"x" * 600)
    add(acc, T1, b"x" * 600)
    drained = acc.drain(CLUSTER, {1}, max_request_size=1000, now_ms=10.0)
    assert len(drained[1]) == 1
    assert len(acc.drain(CLUSTER, {1}, max_request_size=1000, now_ms=10.0)[1]) == 1


def test_drain_rotates_which_partition_goes_first():
    acc = accumulator(batch_size=MiB)
    firsts = set()
    for _ in range(4):
        add(acc, T0, b"x" * 600)
        add(acc, T1, b"x" * 600)
        batches = acc.drain(CLUSTER, {1}, max_request_size=1000, now_ms=10.0)[1]
        firsts.add(batches[0].tp)
        for batch in batches:
            acc.complete(batch)
        acc.abort_queued()
    assert firsts == {T0, T1}


def test_a_busy_leader_is_not_ready():
    acc = accumulator()
    add(acc, T0)
    assert acc.ready(CLUSTER, 10.0, busy_leaders=[1]).leaders == frozenset()


def test_a_partition_has_one_batch_in_flight_while_its_next_one_keeps_filling():
    acc = accumulator(batch_size=BATCH_OVERHEAD_BYTES + 2 * record_size_bytes(None, b"v" * 50))
    first = add(acc, T0)[0]
    add(acc, T0)
    second = add(acc, T0)[0]
    assert acc.drain(CLUSTER, {1}, MiB, 10.0)[1] == [first]
    assert acc.ready(CLUSTER, 10.0).leaders == frozenset()
    assert acc.drain(CLUSTER, {1}, MiB, 10.0) == {}
    assert add(acc, T0)[0] is second, "the next batch takes records meanwhile"
    acc.complete(first)
    assert acc.drain(CLUSTER, {1}, MiB, 10.0)[1] == [second]


def test_other_partitions_of_the_same_leader_go_while_one_is_in_flight():
    acc = accumulator()
    add(acc, T0)
    acc.drain(CLUSTER, {1}, MiB, 10.0)
    add(acc, T1)
    assert [b.tp for b in acc.drain(CLUSTER, {1}, MiB, 10.0)[1]] == [T1]


def test_a_retried_batch_goes_back_in_front_of_later_batches_of_its_partition():
    acc = accumulator(batch_size=BATCH_OVERHEAD_BYTES + record_size_bytes(None, b"v" * 50))
    first = add(acc, T0, now_ms=0.0)[0]
    second = add(acc, T0, now_ms=0.0)[0]
    [sent] = acc.drain(CLUSTER, {1}, MiB, now_ms=10.0)[1]
    assert sent is first
    acc.requeue(first, retry_at_ms=110.0)
    assert acc.ready(CLUSTER, 50.0).next_ready_ms == pytest.approx(60.0), "the retry waits out its backoff"
    assert acc.drain(CLUSTER, {1}, MiB, now_ms=50.0) == {}, "and the later batch does not overtake it"
    assert acc.drain(CLUSTER, {1}, MiB, now_ms=110.0)[1] == [first]
    assert first.attempts == 2
    acc.complete(first)
    assert acc.drain(CLUSTER, {1}, MiB, now_ms=110.0)[1] == [second]


def test_a_retried_batch_sends_the_bytes_of_its_first_attempt():
    acc = accumulator()
    batch = add(acc, T0, now_ms=0.0)[0]
    [sent] = acc.drain(CLUSTER, {1}, MiB, now_ms=10.0)[1]
    first = sent.encode(Compression.NONE, timestamp_ms=1_000)
    acc.requeue(sent, retry_at_ms=20.0)
    [again] = acc.drain(CLUSTER, {1}, MiB, now_ms=20.0)[1]
    assert again is batch and again.attempts == 2
    assert again.encode(Compression.NONE, timestamp_ms=2_000) == first, "same records, same create time, same CRC"
    assert again.timestamp_ms == 1_000


def test_queued_batches_expire_after_delivery_timeout():
    acc = accumulator(linger_ms=1_000_000)
    old = add(acc, T0, now_ms=0.0)[0]
    young = add(acc, T2, now_ms=500.0)[0]
    assert acc.expire(now_ms=1000.0, delivery_timeout_ms=1000) == [old]
    assert acc.expire(now_ms=1000.0, delivery_timeout_ms=1000) == []
    assert acc.drain(CLUSTER, {1, 2}, MiB, 1000.0) == {2: [young]}


def test_append_blocks_while_buffer_memory_is_full_and_gives_up_after_block_s():
    size = record_size_bytes(None, b"v" * 50)
    acc = accumulator(batch_size=MiB, buffer_memory=BATCH_OVERHEAD_BYTES + 2 * size)
    batch = add(acc, T0)[0]
    add(acc, T0)
    with pytest.raises(ClientTimeoutError, match="buffer_memory"):
        add(acc, T0, block_s=0.05)
    acc.drain(CLUSTER, {1}, MiB, 10.0)
    releaser = threading.Timer(0.05, acc.complete, [batch])
    releaser.start()
    assert add(acc, T0, block_s=5)[2], "room came back once the batch was done"
    releaser.join()


def test_after_close_appends_are_refused_and_everything_queued_is_ready():
    acc = accumulator(linger_ms=1_000_000)
    add(acc, T0)
    acc.close()
    with pytest.raises(ProducerClosedError):
        add(acc, T0)
    assert acc.ready(CLUSTER, 0.0).leaders == {1}
    assert not acc.closing_done()
    [batch] = acc.drain(CLUSTER, {1}, MiB, 0.0)[1]
    acc.complete(batch)
    assert acc.closing_done()


def test_append_rows_fills_the_open_batch_then_the_next_and_stops_where_told():
    size = record_size_bytes(None, b"v" * 50)
    acc = accumulator(batch_size=BATCH_OVERHEAD_BYTES + 3 * size)
    rows = [(None, b"v" * 50)] * 6
    ends = list(itertools.accumulate([size] * 6, initial=0))
    end, batch, opened = acc.append_rows(T0, rows, ends, 0, 6, 0.0)
    assert (end, opened, len(batch.rows)) == (3, True, 3)
    end, second, opened = acc.append_rows(T0, rows, ends, 3, 4, 0.0)
    assert (end, opened, len(second.rows)) == (4, True, 1)
    end, same, opened = acc.append_rows(T0, rows, ends, 4, 6, 0.0)
    assert (end, opened, same is second, len(second.rows)) == (6, False, True, 3)


def test_flush_returns_the_results_of_every_batch_not_yet_done():
    acc = accumulator()
    a = add(acc, T0)[0]
    b = add(acc, T2)[0]
    pending = acc.begin_flush()
    assert set(pending) == {a.result, b.result}
    acc.end_flush()


# -- idempotent producers: numbered batches, several in flight per partition ----------------------


def idempotent(in_flight=5):
    return RecordAccumulator(batch_size=BATCH_OVERHEAD_BYTES + 2 * record_size_bytes(None, b"v" * 50), linger_ms=5, buffer_memory=MiB, idempotent=True,
                             in_flight_per_partition=in_flight)


def fill(acc, tp, batches):
    """`batches` full batches of two records for tp; returns them."""
    opened = []
    for _ in range(batches * 2):
        batch, _, new = add(acc, tp)
        if new:
            opened.append(batch)
    return opened


def test_an_idempotent_partition_has_up_to_five_batches_in_flight_numbered_in_order():
    acc = idempotent()
    batches = fill(acc, T0, 7)
    sent = [acc.drain(CLUSTER, {1}, MiB, 10.0).get(1, []) for _ in range(7)]
    assert [s for s in sent if s] == [[b] for b in batches[:5]], "five leave, one per request, in order"
    assert [b.base_sequence for b in batches[:5]] == [0, 2, 4, 6, 8]
    assert batches[5].base_sequence == -1, "a batch is numbered when it first leaves"
    acc.complete(batches[0])
    assert acc.drain(CLUSTER, {1}, MiB, 10.0)[1] == [batches[5]]
    assert batches[5].base_sequence == 10


def test_a_batch_that_is_not_full_waits_for_its_partition_s_batches_in_flight_unless_flushed():
    acc = idempotent()
    first = fill(acc, T0, 1)[0]
    second = add(acc, T0)[0]
    assert acc.drain(CLUSTER, {1}, MiB, 10.0)[1] == [first]
    assert acc.ready(CLUSTER, 10.0).leaders == frozenset(), "one record, and a batch in flight: it waits"
    assert acc.drain(CLUSTER, {1}, MiB, 10.0) == {}
    pending = acc.begin_flush()
    assert second.result in pending
    assert acc.drain(CLUSTER, {1}, MiB, 10.0)[1] == [second], "flush() sends it behind the first"
    acc.end_flush()
    third = add(acc, T0)[0]
    acc.complete(first)
    acc.complete(second)
    assert acc.drain(CLUSTER, {1}, MiB, 10.0)[1] == [third], "with nothing in flight it leaves at once"
    assert [b.base_sequence for b in (first, second, third)] == [0, 2, 3]


def test_a_batch_back_for_a_retry_holds_its_partition_until_the_others_in_flight_are_back():
    acc = idempotent()
    first, second, third = fill(acc, T0, 3)
    for _ in range(2):
        acc.drain(CLUSTER, {1}, MiB, 10.0)
    acc.requeue(first, retry_at_ms=10.0)
    assert acc.drain(CLUSTER, {1}, MiB, 20.0) == {}, "neither the retry nor the third leave while the second flies"
    assert acc.has_earlier(second), "the second's refusal as out of order is a retry behind the first"
    acc.requeue(second, retry_at_ms=10.0)
    assert acc.drain(CLUSTER, {1}, MiB, 20.0)[1] == [first]
    assert acc.drain(CLUSTER, {1}, MiB, 20.0)[1] == [second]
    assert (first.base_sequence, second.base_sequence, third.base_sequence) == (0, 2, -1)
    assert acc.drain(CLUSTER, {1}, MiB, 20.0)[1] == [third] and third.base_sequence == 4
    assert not acc.has_earlier(first)


def test_a_new_producer_id_numbers_every_partition_from_zero_again_and_renumbers_batches_sent_before():
    acc = idempotent()
    first, second = fill(acc, T0, 2)
    acc.drain(CLUSTER, {1}, MiB, 10.0)
    acc.drain(CLUSTER, {1}, MiB, 10.0)
    acc.complete(first)
    acc.reset_sequences()
    acc.requeue(second, retry_at_ms=10.0)
    assert acc.drain(CLUSTER, {1}, MiB, 20.0)[1] == [second]
    assert second.base_sequence == 0 and second.generation == acc.generation


def test_without_idempotence_a_partition_keeps_one_batch_in_flight_and_batches_are_not_numbered():
    acc = accumulator(batch_size=BATCH_OVERHEAD_BYTES + 2 * record_size_bytes(None, b"v" * 50))
    fill(acc, T0, 3)
    [sent] = acc.drain(CLUSTER, {1}, MiB, 10.0)[1]
    assert acc.drain(CLUSTER, {1}, MiB, 10.0) == {} and sent.base_sequence == -1


def test_a_batch_of_rows_with_their_own_timestamps_says_their_latest_and_one_with_plain_rows_too_its_own():
    now_ms = 1_700_000_000_000
    for rows, latest in (([(None, b"a", (), 1_000), (None, b"b", (), 500)], 1_000),
                         ([(None, b"a", (), 1_000), (None, b"b")], now_ms)):
        acc = accumulator()
        batch = [acc.append(T0, row, record_size_bytes(None, row[1]) + OWN_TIMESTAMP_BYTES, 0.0) for row in rows][0][0]
        decoded = decode_batch(batch.encode(Compression.NONE, now_ms))
        assert decoded.max_timestamp == latest
        assert [r.timestamp for r in decoded.records] == [row[3] if len(row) == 4 else now_ms for row in rows]


def test_an_own_timestamp_as_far_from_the_batchs_as_can_be_still_fits_the_size_counted():
    row = (None, b"v" * 100, (), 0)
    encoded = len(encode_batch([row], base_timestamp_ms=2**53, max_timestamp_ms=0)) - BATCH_OVERHEAD_BYTES
    assert encoded <= record_size_bytes(None, row[1]) + OWN_TIMESTAMP_BYTES
