"""The producer against a real local cluster: where records go, what it refuses, and how long it waits."""

import contextlib
import itertools
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from replog.client import (
    ClientError,
    ClientTimeoutError,
    Consumer,
    NewTopic,
    ProduceError,
    Producer,
    ProducerClosedError,
    RecordTooLargeError,
    TimestampType,
    TopicPartition,
    UnknownTopicError,
)
from replog.core.errors import ErrorCode

pytestmark = pytest.mark.slow

PAUSED_BROKER = 3
DEADLINE_MARGIN_S = 2.0  # the producer's gRPC deadline is request_timeout_ms plus this


def create(admin, name, partitions=1, **configs):
    admin.create_topics([NewTopic(name, partitions, 1, configs=configs)])
    return name


def end_offsets(bootstrap, topic, partitions):
    with Consumer(bootstrap) as consumer:
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in range(partitions)])
    return [ends[TopicPartition(topic, p)] for p in range(partitions)]


def read_one(bootstrap, topic, timeout_s=30):
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            records = consumer.poll(500)
            if records:
                return records[0]
    raise AssertionError(f"no record of {topic} arrived within {timeout_s:g} s")


@contextlib.contextmanager
def paused(cluster, broker_id):
    """The broker is stopped with SIGSTOP: it holds its connections and answers nothing until SIGCONT.

    Pauses stay well below the ZooKeeper session timeout, so the cluster does not notice.
    """
    cluster.signal("broker", broker_id, "STOP")
    try:
        yield
    finally:
        cluster.signal("broker", broker_id, "CONT")


def test_a_key_lands_on_kafkas_partition_for_it_and_an_explicit_partition_wins(admin, bootstrap):
    topic = create(admin, "keyed", partitions=10)
    with Producer(bootstrap) as producer:
        landed = {producer.send(topic, b"v%d" % i, key=b"foobar").result(30).partition for i in range(3)}
        assert landed == {6}, "toPositive(murmur2(b'foobar')) % 10, as with Kafka's Java client"
        assert producer.send(topic, b"v", key=b"foobar", partition=2).result(30).partition == 2
        with pytest.raises(ValueError, match="0..9"):
            producer.send(topic, b"v", partition=10)


def test_records_without_a_key_stick_to_a_partition_for_batch_size_bytes_before_moving_on(admin, bootstrap):
    topic = create(admin, "sticky", partitions=4)
    with Producer(bootstrap, linger_ms=1000, batch_size=1000) as producer:
        futures = [producer.send(topic, b"x" * 100) for _ in range(40)]
        producer.flush(30)
        partitions = [f.result().partition for f in futures]
    runs = [(p, len(list(group))) for p, group in itertools.groupby(partitions)]
    assert len(runs) >= 4, f"about 9 records of 108 bytes fill batch_size, then the next go elsewhere: {runs}"
    assert all(8 <= length <= 10 for _p, length in runs[:-1]), runs


def test_keys_values_and_headers_arrive_as_sent_and_text_is_refused(admin, bootstrap):
    topic = create(admin, "bytes-only")
    with Producer(bootstrap) as producer:
        with pytest.raises(TypeError, match=r"value must be bytes, not str; encode it first"):
            producer.send(topic, "text")
        with pytest.raises(TypeError, match="key must be bytes, not int"):
            producer.send(topic, b"v", key=5)
        with pytest.raises(TypeError, match="header 'h'"):
            producer.send(topic, b"v", headers=[("h", "x")])
        with pytest.raises(TypeError, match="value must be bytes"):
            producer.send_many(topic, [b"ok", "text"])
        sent = producer.send(topic, bytearray(b"value"), key=memoryview(b"key"),
                             headers=[("h", b"1"), ("empty", None)]).result(30)
    assert sent.offset == 0, "nothing refused was written"
    record = read_one(bootstrap, topic)
    assert (record.key, record.value, record.headers) == (b"key", b"value", (("h", b"1"), ("empty", None)))
    assert record.timestamp == sent.timestamp and sent.timestamp > 1_600_000_000_000
    assert record.timestamp_type is TimestampType.CREATE_TIME


def test_records_too_large_are_refused_at_send_or_failed_by_the_broker_without_retries(admin, bootstrap):
    topic = create(admin, "small-records", **{"max.message.bytes": "1000"})
    with Producer(bootstrap, max_request_size=10_000) as producer:
        with pytest.raises(RecordTooLargeError, match="max_request_size"):
            producer.send(topic, b"x" * 20_000)
        with pytest.raises(ProduceError) as raised:
            producer.send(topic, b"x" * 2000).result(10)  # a retry would wait out the 120 s delivery timeout
        assert raised.value.error_code is ErrorCode.MESSAGE_TOO_LARGE
        assert f"{topic}-0" in str(raised.value) and "MESSAGE_TOO_LARGE" in str(raised.value)
        with pytest.raises(ProduceError, match="MESSAGE_TOO_LARGE"):
            producer.send_many(topic, [b"ok", b"x" * 2000]).result(10)
        assert producer.send(topic, b"fits").result(10).offset == 0, "nothing refused was written"


def test_what_a_topics_configs_refuse_fails_the_record_alone_and_the_partition_goes_on(admin, bootstrap):
    """A record without a key on a compacted topic, or timestamped two hours ahead: the leader answers
    with Kafka's error and appends nothing, the producer does not retry it, and the next record lands."""
    compacted = create(admin, "compacted-keys", **{"cleanup.policy": "compact"})
    timed = create(admin, "bounded-times", **{"message.timestamp.before.max.ms": "86400000"})
    now = int(time.time() * 1000)
    with Producer(bootstrap) as producer:
        for topic, bad, code, says in (
                (compacted, dict(key=None), ErrorCode.INVALID_RECORD, "has no key"),
                (timed, dict(timestamp_ms=now + 7_200_000), ErrorCode.INVALID_TIMESTAMP,
                 "message.timestamp.after.max.ms=3600000"),
                (timed, dict(timestamp_ms=now - 2 * 86_400_000), ErrorCode.INVALID_TIMESTAMP,
                 "message.timestamp.before.max.ms=86400000")):
            with pytest.raises(ProduceError) as raised:
                producer.send(topic, b"refused", **bad).result(10)  # a retry would wait out the delivery timeout
            assert raised.value.error_code is code and says in str(raised.value)
        assert producer.send(compacted, b"kept", key=b"k").result(30).offset == 0, "nothing refused was written"
        assert producer.send(timed, b"kept", timestamp_ms=now).result(30).offset == 0
    assert read_one(bootstrap, compacted).value == b"kept"


def test_a_log_append_time_topic_gives_each_record_the_leaders_time(admin, bootstrap):
    topic = create(admin, "appended-at", **{"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    with Producer(bootstrap) as producer:
        sent = producer.send(topic, b"v", timestamp_ms=1_000).result(30)
    after = int(time.time() * 1000)
    assert before <= sent.timestamp <= after, "the producer learns the leader's time from its answer"
    record = read_one(bootstrap, topic)
    assert (record.timestamp, record.timestamp_type) == (sent.timestamp, TimestampType.LOG_APPEND_TIME)
    assert str(record.timestamp_type) == "LogAppendTime"


def test_send_many_counts_its_records_and_spreads_its_batches(admin, bootstrap):
    topic = create(admin, "many", partitions=3)
    with Producer(bootstrap, batch_size=2000) as producer:
        assert producer.send_many(topic, [b"x" * 100] * 300).result(30) == 300
        spread = end_offsets(bootstrap, topic, 3)
        assert sum(spread) == 300 and sum(1 for count in spread if count) >= 2
        assert producer.send_many(topic, [b"y"] * 5, partition=1).result(30) == 5
        assert producer.send_many(topic, []).result(1) == 0
    assert end_offsets(bootstrap, topic, 3) == [spread[0], spread[1] + 5, spread[2]]


def test_send_waits_up_to_max_block_ms_for_a_topic_being_created(admin, bootstrap):
    with Producer(bootstrap, max_block_ms=30_000) as producer, ThreadPoolExecutor(1) as pool:
        sent = pool.submit(lambda: producer.send("created-meanwhile", b"v").result(30))
        create(admin, "created-meanwhile")
        assert sent.result(60).offset == 0


def test_partitions_for_a_missing_topic_gives_up_after_its_own_timeout(admin, bootstrap):
    create(admin, "listed", partitions=3)
    with Producer(bootstrap, max_block_ms=60_000) as producer:
        assert producer.partitions_for("listed", 0) == [0, 1, 2]
        started = time.monotonic()
        with pytest.raises(UnknownTopicError, match="topic 'never-created' does not exist"):
            producer.partitions_for("never-created", 0.5)
        assert time.monotonic() - started < 5  # not max_block_ms


def test_close_sends_what_is_queued_and_then_refuses_records(admin, bootstrap):
    topic = create(admin, "closing")
    producer = Producer(bootstrap, linger_ms=60_000)
    future = producer.send(topic, b"v")
    producer.close(timeout=30)
    assert future.result(0).offset == 0
    with pytest.raises(ProducerClosedError):
        producer.send(topic, b"v")


def test_a_bug_in_the_io_loop_fails_the_records_instead_of_hanging(admin, bootstrap, monkeypatch):
    topic = create(admin, "io-loop-bug")
    producer = Producer(bootstrap, linger_ms=50)
    producer.partitions_for(topic)
    monkeypatch.setattr(producer._accumulator, "drain", lambda *args: 1 / 0)
    future = producer.send(topic, b"v")
    with pytest.raises(ClientError, match="I/O loop failed: ZeroDivisionError"):
        future.result(5)
    with pytest.raises(ProducerClosedError):
        producer.send(topic, b"v")
    producer.close(5)


def test_records_for_a_paused_leader_fail_once_delivery_timeout_ms_has_passed(cluster, admin, bootstrap):
    topic = "paused-delivery"
    admin.create_topics([NewTopic(topic, replica_assignment={0: [PAUSED_BROKER]})])
    request_timeout_ms = 500
    # Without idempotence a partition has one batch in flight, so the later records wait unsent.
    with Producer(bootstrap, linger_ms=0, request_timeout_ms=request_timeout_ms,
                  delivery_timeout_ms=request_timeout_ms, enable_idempotence=False) as producer:
        producer.partitions_for(topic)
        with paused(cluster, PAUSED_BROKER):
            in_flight = producer.send(topic, b"in flight")
            with pytest.raises(ClientTimeoutError, match="unacknowledged"):
                producer.flush(0.2)
            queued = [producer.send(topic, b"queued %d" % i) for i in range(2)]
            queued_errors = [f.exception(timeout=5) for f in queued]
            in_flight_error = in_flight.exception(timeout=request_timeout_ms / 1000 + DEADLINE_MARGIN_S + 5)
    for error in queued_errors:
        assert isinstance(error, ProduceError) and error.error_code is ErrorCode.REQUEST_TIMED_OUT, error
        assert "delivery_timeout_ms" in str(error), "queued behind the batch in flight, they expired unsent"
    assert isinstance(in_flight_error, ProduceError) and in_flight_error.error_code is ErrorCode.REQUEST_TIMED_OUT


def test_close_with_a_timeout_fails_what_a_paused_leader_did_not_acknowledge(cluster, admin, bootstrap):
    topic = "paused-close"
    admin.create_topics([NewTopic(topic, replica_assignment={0: [PAUSED_BROKER]})])
    producer = Producer(bootstrap, linger_ms=0)
    producer.partitions_for(topic)
    with paused(cluster, PAUSED_BROKER):
        in_flight = producer.send(topic, b"in flight")
        with pytest.raises(ClientTimeoutError):
            producer.flush(0.2)
        queued = producer.send(topic, b"queued")
        started = time.monotonic()
        producer.close(timeout=0.3)
        assert time.monotonic() - started < 5
    for future in (in_flight, queued):
        with pytest.raises(ProducerClosedError, match="closed before"):
            future.result(1)
    with Producer(bootstrap) as producer:
        assert producer.send(topic, b"after").result(30).offset >= 0, "the broker serves again"
