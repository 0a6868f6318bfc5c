"""The consumer against an in-process cluster: positions, leader changes, truncation, resets."""

import time

import pytest

from replog.client import (
    ClientError,
    Consumer,
    LogTruncationError,
    OffsetOutOfRangeError,
    Producer,
    TopicPartition,
)
from replog.client.fetch_buffer import CompletedFetch, next_fetch_offset
from replog.protocol import encode_batch, stamp_batches, validate_batches

TP = TopicPartition("t", 0)


def produce(fake, count, topic="t", partition=0, prefix=b"v"):
    """One batch per record, so that the fake broker can truncate at any offset."""
    with Producer(fake.bootstrap, linger_ms=0) as producer:
        for i in range(count):
            producer.send(topic, b"%s%d" % (prefix, i), partition=partition).result(10)


def poll_until(consumer, count, timeout_s=10):
    records = []
    deadline = time.monotonic() + timeout_s
    while len(records) < count and time.monotonic() < deadline:
        records += consumer.poll(100)
    return records


def stamped(values, base_offset, epoch=0):
    buffer = bytearray(encode_batch([(None, v) for v in values]))
    stamp_batches(buffer, base_offset, epoch, validate_batches(buffer, max_message_bytes=1 << 20).headers)
    return bytes(buffer)


def test_from_the_earliest_offset_every_record_arrives_once_in_order(fake):
    fake.state.create("t", 1)
    produce(fake, 50)
    with Consumer(fake.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TP])
        records = poll_until(consumer, 50)
        assert [r.offset for r in records] == list(range(50))
        assert [r.value for r in records] == [b"v%d" % i for i in range(50)]
        assert consumer.position(TP) == 50
        assert consumer.poll(50) == []
    first = records[0]
    assert (first.topic, first.partition, first.key, first.headers, first.leader_epoch) == ("t", 0, None, (), 0)


def test_latest_skips_what_was_written_before(fake):
    fake.state.create("t", 1)
    produce(fake, 5)
    with Consumer(fake.bootstrap) as consumer:
        consumer.assign([TP])
        assert consumer.position(TP) == 5
        produce(fake, 3, prefix=b"new")
        assert [r.value for r in poll_until(consumer, 3)] == [b"new0", b"new1", b"new2"]


def test_seek_moves_the_position(fake):
    fake.state.create("t", 1)
    produce(fake, 20)
    with Consumer(fake.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TP])
        poll_until(consumer, 20)
        consumer.seek(TP, 15)
        assert [r.offset for r in poll_until(consumer, 5)] == [15, 16, 17, 18, 19]
        consumer.seek_to_beginning()
        assert poll_until(consumer, 1)[0].offset == 0
        consumer.seek_to_end([TP])
        assert consumer.position(TP) == 20


def test_several_partitions_on_several_leaders(fake):
    fake.state.create("t", 3)
    for p in range(3):
        produce(fake, 10, partition=p, prefix=b"p%d-" % p)
    with Consumer(fake.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("t", p) for p in range(3)])
        records = poll_until(consumer, 30)
    assert sorted((r.partition, r.offset) for r in records) == [(p, o) for p in range(3) for o in range(10)]


def test_max_poll_records_bounds_one_poll(fake):
    fake.state.create("t", 1)
    produce(fake, 30)
    with Consumer(fake.bootstrap, auto_offset_reset="earliest", max_poll_records=7) as consumer:
        consumer.assign([TP])
        first = poll_until(consumer, 1)
        assert len(first) == 7
        assert [r.offset for r in poll_until(consumer, 23)] == list(range(7, 30))


def test_the_next_fetch_is_in_flight_while_the_caller_works(fake):
    fake.state.create("t", 1)
    produce(fake, 10)
    with Consumer(fake.bootstrap, auto_offset_reset="earliest", fetch_max_wait_ms=2000) as consumer:
        consumer.assign([TP])
        poll_until(consumer, 10)
        time.sleep(0.2)
        # The fetch for offset 10 went out before the caller asked again.
        assert fake.state.fetch_requests[-1].topics[0].partitions[0].fetch_offset == 10


def test_a_leader_change_without_truncation_is_validated_and_reading_goes_on(fake):
    fake.state.create("t", 1)
    produce(fake, 10)
    with Consumer(fake.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TP])
        assert len(poll_until(consumer, 10)) == 10
        fake.state.elect("t", 0, leader=2)
        produce(fake, 5, prefix=b"after")
        records = poll_until(consumer, 5)
    assert [r.offset for r in records] == [10, 11, 12, 13, 14]
    assert [r.leader_epoch for r in records] == [1] * 5
    [validation] = fake.state.validations
    asked = validation.topics[0].partitions[0]
    assert (asked.leader_epoch, asked.current_leader_epoch) == (0, 1)


def test_a_truncated_log_is_reported_not_skipped_or_read_again(fake):
    fake.state.create("t", 1)
    produce(fake, 10)
    with Consumer(fake.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TP])
        assert len(poll_until(consumer, 10)) == 10
        fake.state.elect("t", 0, leader=3, truncate_to=6)  # an unclean election lost offsets 6..9
        produce(fake, 4, prefix=b"new")  # the new leader gives offsets 6..9 to other records
        with pytest.raises(LogTruncationError) as raised:
            poll_until(consumer, 1)
        error = raised.value
        assert (error.topic, error.partition, error.position, error.end_offset) == ("t", 0, 10, 6)
        assert consumer.poll(300) == [], "the partition waits for the caller to decide"
        consumer.seek(TP, error.end_offset)
        assert [r.value for r in poll_until(consumer, 4)] == [b"new0", b"new1", b"new2", b"new3"]


def test_out_of_range_resets_by_auto_offset_reset(fake):
    fake.state.create("t", 1)
    produce(fake, 5)
    with Consumer(fake.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TP])
        consumer.seek(TP, 1000)
        assert poll_until(consumer, 5)[0].offset == 0


def test_out_of_range_without_a_reset_policy_is_raised(fake):
    fake.state.create("t", 1)
    with Consumer(fake.bootstrap, auto_offset_reset="none") as consumer:
        consumer.assign([TP])
        consumer.seek(TP, 1000)
        with pytest.raises(OffsetOutOfRangeError, match="1000"):
            poll_until(consumer, 1)


def test_beginning_and_end_offsets(fake):
    fake.state.create("t", 2)
    produce(fake, 7, partition=1)
    with Consumer(fake.bootstrap) as consumer:
        tps = [TopicPartition("t", 0), TopicPartition("t", 1)]
        assert consumer.end_offsets(tps) == {tps[0]: 0, tps[1]: 7}
        assert consumer.beginning_offsets(tps) == {tps[0]: 0, tps[1]: 0}


def test_groups_are_refused_with_a_clear_message(fake):
    with pytest.raises(ClientError, match="not supported yet"):
        Consumer(fake.bootstrap, group_id="g")
    with Consumer(fake.bootstrap) as consumer:
        with pytest.raises(ClientError, match="assign"):
            consumer.subscribe(["t"])


def test_a_partition_not_assigned_has_no_position(fake):
    with Consumer(fake.bootstrap) as consumer:
        with pytest.raises(ClientError, match="not assigned"):
            consumer.position(TP)


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


def test_a_failure_of_the_io_loop_is_raised_by_poll_not_waited_on(fake, monkeypatch):
    fake.state.create("t", 1)
    with Consumer(fake.bootstrap) as consumer:
        monkeypatch.setattr(consumer._fetcher, "_step", lambda: 1 / 0)
        consumer.assign([TP])
        with pytest.raises(ClientError, match="I/O loop failed: ZeroDivisionError"):
            poll_until(consumer, 1, timeout_s=5)
