"""The consumer against a real local cluster: where it starts, seeking, resets, offsets and refusals."""

import time

import pytest

from replog.client import (
    ClientError,
    Consumer,
    NewTopic,
    OffsetOutOfRangeError,
    Producer,
    TopicPartition,
)
from tests.integration.cluster import wait_for

pytestmark = pytest.mark.slow

POLL_TIMEOUT_S = 30


def create(admin, name, partitions=1):
    admin.create_topics([NewTopic(name, partitions, 1)])
    return name


def produce(bootstrap, topic, values, partition=0):
    with Producer(bootstrap) as producer:
        producer.send_many(topic, values, partition=partition).result(30)


def polls_until(consumer, count, timeout_s=POLL_TIMEOUT_S):
    """The answers of poll() until `count` records came back in all."""
    answers = []
    deadline = time.monotonic() + timeout_s
    while sum(len(a) for a in answers) < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"{sum(len(a) for a in answers)} of {count} records within {timeout_s:g} s")
        answers.append(consumer.poll(100))
    return [answer for answer in answers if answer]


def poll_until(consumer, count, timeout_s=POLL_TIMEOUT_S):
    return [record for answer in polls_until(consumer, count, timeout_s) for record in answer]


def test_by_default_a_consumer_starts_at_the_end_and_reads_what_comes_after(admin, bootstrap):
    topic = create(admin, "from-latest")
    tp = TopicPartition(topic, 0)
    produce(bootstrap, topic, [b"old%d" % i for i in range(5)])
    with Consumer(bootstrap) as consumer:
        consumer.assign([tp])
        assert consumer.position(tp) == 5
        produce(bootstrap, topic, [b"new0", b"new1", b"new2"])
        assert [r.value for r in poll_until(consumer, 3)] == [b"new0", b"new1", b"new2"]


def test_seek_moves_the_position_back_and_forth(admin, bootstrap):
    topic = create(admin, "seeking")
    tp = TopicPartition(topic, 0)
    produce(bootstrap, topic, [b"v%d" % i for i in range(20)])
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([tp])
        assert [r.offset for r in poll_until(consumer, 20)] == list(range(20))
        assert consumer.position(tp) == 20 and consumer.poll(100) == []
        consumer.seek(tp, 15)
        assert [(r.offset, r.value) for r in poll_until(consumer, 5)] == [(o, b"v%d" % o) for o in range(15, 20)]
        consumer.seek_to_beginning()
        assert poll_until(consumer, 1)[0].offset == 0
        consumer.seek_to_end([tp])
        assert consumer.position(tp) == 20


def test_one_poll_returns_at_most_max_poll_records(admin, bootstrap):
    topic = create(admin, "bounded-polls")
    produce(bootstrap, topic, [b"v%d" % i for i in range(30)])
    with Consumer(bootstrap, auto_offset_reset="earliest", max_poll_records=7) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        answers = polls_until(consumer, 30)
    assert max(len(a) for a in answers) == 7
    assert [r.offset for a in answers for r in a] == list(range(30))


def test_a_position_past_the_end_is_reset_by_auto_offset_reset_or_raised(admin, bootstrap):
    topic = create(admin, "out-of-range")
    tp = TopicPartition(topic, 0)
    produce(bootstrap, topic, [b"v%d" % i for i in range(5)])
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 1000)
        assert [r.offset for r in poll_until(consumer, 5)] == list(range(5))
    with Consumer(bootstrap, auto_offset_reset="latest") as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 1000)
        wait_for(lambda: consumer.poll(100) == [] and consumer.position(tp) == 5, POLL_TIMEOUT_S, "a reset to the end")
        produce(bootstrap, topic, [b"after"])
        assert [(r.offset, r.value) for r in poll_until(consumer, 1)] == [(5, b"after")]
    with Consumer(bootstrap, auto_offset_reset="none") as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 1000)
        with pytest.raises(OffsetOutOfRangeError, match="1000"):
            poll_until(consumer, 1)


def test_beginning_and_end_offsets_of_empty_and_written_partitions(admin, bootstrap):
    topic = create(admin, "offsets", partitions=2)
    produce(bootstrap, topic, [b"v%d" % i for i in range(7)], partition=1)
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    with Consumer(bootstrap) as consumer:
        assert consumer.end_offsets(tps) == {tps[0]: 0, tps[1]: 7}
        assert consumer.beginning_offsets(tps) == {tps[0]: 0, tps[1]: 0}


def test_a_bug_in_the_io_loop_is_raised_by_poll_not_waited_on(admin, bootstrap, monkeypatch):
    topic = create(admin, "io-loop-bug")
    with Consumer(bootstrap) as consumer:
        monkeypatch.setattr(consumer._fetcher, "_step", lambda: 1 / 0)
        consumer.assign([TopicPartition(topic, 0)])
        with pytest.raises(ClientError, match="I/O loop failed: ZeroDivisionError"):
            poll_until(consumer, 1, timeout_s=5)


def test_a_paused_partition_is_neither_fetched_nor_returned_and_resumes_where_it_stood(admin, bootstrap):
    topic = create(admin, "pausing", partitions=2)
    paused, running = TopicPartition(topic, 0), TopicPartition(topic, 1)
    produce(bootstrap, topic, [b"p%d" % i for i in range(10)], partition=0)
    produce(bootstrap, topic, [b"r%d" % i for i in range(10)], partition=1)
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([paused, running])
        consumer.pause([paused])
        assert consumer.paused() == {paused}
        assert {(r.partition, r.offset) for r in poll_until(consumer, 10)} == {(1, o) for o in range(10)}
        produce(bootstrap, topic, [b"r10"], partition=1)
        assert [(r.partition, r.value) for r in poll_until(consumer, 1)] == [(1, b"r10")]
        assert consumer.poll(300) == [] and consumer.position(paused) == 0
        consumer.resume([paused])
        assert consumer.paused() == set()
        assert [(r.partition, r.value) for r in poll_until(consumer, 10)] == [(0, b"p%d" % i) for i in range(10)]
        with pytest.raises(ClientError, match="is not assigned to this consumer"):
            consumer.pause([TopicPartition(topic, 7)])


def test_records_keep_the_timestamps_sent_and_offsets_for_times_finds_the_first_at_or_after_each(admin, bootstrap):
    topic = create(admin, "by-time")
    tp = TopicPartition(topic, 0)
    with Producer(bootstrap) as producer:
        futures = [producer.send(topic, b"v%d" % i, partition=0, timestamp_ms=ms)
                   for i, ms in enumerate((1_000, 3_000, 2_000))]
        assert [f.result(30).timestamp for f in futures] == [1_000, 3_000, 2_000]
        with pytest.raises(ValueError, match="timestamp_ms must be ms since the Unix epoch"):
            producer.send(topic, b"v", timestamp_ms=-5)
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([tp])
        assert [(r.offset, r.timestamp) for r in poll_until(consumer, 3)] == [(0, 1_000), (1, 3_000), (2, 2_000)]
        found = consumer.offsets_for_times({tp: 1_500})
        assert found[tp].offset == 1 and found[tp].timestamp == 3_000 and found[tp].leader_epoch >= 0
        assert consumer.offsets_for_times({tp: 0})[tp][:2] == (0, 1_000)
        assert consumer.offsets_for_times({tp: 3_001}) == {tp: None}
        with pytest.raises(ValueError, match="ms since the Unix epoch"):
            consumer.offsets_for_times({tp: -1})
