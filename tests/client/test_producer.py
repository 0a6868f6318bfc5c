"""The producer against an in-process cluster: offsets, partitions, retries, failures, ordering."""

import concurrent.futures
import time

import pytest

from replog.client import (
    ClientError,
    Producer,
    ProduceError,
    ProducerClosedError,
    RecordTooLargeError,
    UnknownTopicError,
)
from replog.core.errors import ErrorCode
from replog.protocol import decode_batch, iter_records
from tests.client.fake_cluster import FakeCluster


def values_in(fake: FakeCluster, topic: str, partition: int) -> list[bytes]:
    return [r.value for r in iter_records(b"".join(fake.state.records(topic, partition)))]


def test_acknowledged_records_carry_consecutive_offsets_in_one_partition(fake):
    fake.state.create("t", 1)
    with Producer(fake.bootstrap) as producer:
        futures = [producer.send("t", b"v%d" % i) for i in range(10)]
        producer.flush(10)
        metadata = [f.result(5) for f in futures]
    assert [m.offset for m in metadata] == list(range(10))
    assert {(m.topic, m.partition) for m in metadata} == {("t", 0)}
    assert all(m.timestamp > 1_600_000_000_000 for m in metadata)
    assert values_in(fake, "t", 0) == [b"v%d" % i for i in range(10)]


def test_records_of_one_batch_travel_in_one_request_encoded_once(fake):
    fake.state.create("t", 1)
    with Producer(fake.bootstrap, linger_ms=50) as producer:
        for i in range(100):
            producer.send("t", b"x" * 100, key=b"k%d" % i, headers=[("h", b"1")])
        producer.flush(10)
    [request] = fake.state.produce_requests
    batch = decode_batch(request.topics[0].partitions[0].records)
    assert len(batch.records) == 100
    assert batch.records[5].key == b"k5" and batch.records[5].headers == (("h", b"1"),)


def test_keyed_records_go_to_kafkas_partition_for_the_key(fake):
    fake.state.create("t", 10)
    with Producer(fake.bootstrap) as producer:
        assert producer.send("t", b"v", key=b"foobar").result(10).partition == 6  # to_positive(murmur2) % 10


def test_keyless_records_stick_to_one_partition_per_batch(fake):
    fake.state.create("t", 4)
    with Producer(fake.bootstrap, linger_ms=1000, batch_size=1000) as producer:
        futures = [producer.send("t", b"x" * 100) for _ in range(40)]
        producer.flush(10)
        partitions = [f.result().partition for f in futures]
    runs = [partitions[0]]
    for p in partitions[1:]:
        if p != runs[-1]:
            runs.append(p)
    assert len(runs) >= 4, "batches filled one after another, each on one partition"
    assert all(a != b for a, b in zip(runs, runs[1:]))
    assert max(partitions.count(p) for p in set(partitions)) < 40


def test_an_explicit_partition_is_used_and_checked(fake):
    fake.state.create("t", 3)
    with Producer(fake.bootstrap) as producer:
        assert producer.send("t", b"v", partition=2).result(10).partition == 2
        with pytest.raises(ValueError, match="0..2"):
            producer.send("t", b"v", partition=3)


def test_a_partition_whose_leader_moved_is_retried_at_the_new_leader(fake):
    fake.state.create("t", 1)
    with Producer(fake.bootstrap, retry_backoff_ms=10) as producer:
        producer.send("t", b"before").result(10)
        fake.state.elect("t", 0, leader=2)
        after = producer.send("t", b"after").result(10)
    assert after.offset == 1
    assert values_in(fake, "t", 0) == [b"before", b"after"]


def test_a_retriable_error_is_retried_with_the_same_bytes(fake):
    fake.state.create("t", 1)
    fake.state.inject("t", 0, ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.REQUEST_TIMED_OUT)
    with Producer(fake.bootstrap, retry_backoff_ms=5) as producer:
        assert producer.send("t", b"v").result(10).offset == 0
    sent = [r.topics[0].partitions[0].records for r in fake.state.produce_requests]
    assert len(sent) == 3 and sent[0] == sent[1] == sent[2]


def test_a_non_retriable_error_fails_the_records_with_its_code(fake):
    fake.state.create("t", 1)
    fake.state.inject("t", 0, ErrorCode.INVALID_REQUIRED_ACKS)
    with Producer(fake.bootstrap) as producer:
        future = producer.send("t", b"v")
        with pytest.raises(ProduceError) as raised:
            future.result(10)
    assert raised.value.error_code is ErrorCode.INVALID_REQUIRED_ACKS
    assert "t-0" in str(raised.value) and "INVALID_REQUIRED_ACKS" in str(raised.value)
    assert len(fake.state.produce_requests) == 1


def test_retries_are_bounded(fake):
    fake.state.create("t", 1)
    fake.state.inject("t", 0, *[ErrorCode.NOT_ENOUGH_REPLICAS] * 5)
    with Producer(fake.bootstrap, retries=2, retry_backoff_ms=1) as producer:
        with pytest.raises(ProduceError, match="NOT_ENOUGH_REPLICAS"):
            producer.send("t", b"v").result(10)
    assert len(fake.state.produce_requests) == 3


def test_a_retry_keeps_the_partitions_order(fake):
    fake.state.create("t", 1)
    with Producer(fake.bootstrap, batch_size=200, linger_ms=0, retry_backoff_ms=20,
                  max_in_flight_requests_per_connection=1) as producer:
        fake.state.inject("t", 0, ErrorCode.NOT_ENOUGH_REPLICAS)
        futures = [producer.send("t", b"%03d" % i + b"x" * 60) for i in range(30)]
        producer.flush(10)
        offsets = [f.result().offset for f in futures]
    assert offsets == sorted(offsets) == list(range(30))
    assert [v[:3] for v in values_in(fake, "t", 0)] == [b"%03d" % i for i in range(30)]


def test_acks_zero_reports_no_offsets(fake):
    fake.state.create("t", 1)
    with Producer(fake.bootstrap, acks=0) as producer:
        assert producer.send("t", b"v").result(10).offset == -1
    assert fake.state.produce_requests[0].acks == 0


@pytest.mark.parametrize(("acks", "wire"), [("all", -1), (-1, -1), ("1", 1), (1, 1), (0, 0)])
def test_acks_are_sent_as_kafka_defines_them(fake, acks, wire):
    fake.state.create("t", 1)
    with Producer(fake.bootstrap, acks=acks) as producer:
        producer.send("t", b"v").result(10)
    assert fake.state.produce_requests[0].acks == wire


def test_bad_configs_are_refused_with_their_kafka_name(fake):
    with pytest.raises(ValueError, match="acks"):
        Producer(fake.bootstrap, acks=2)
    with pytest.raises(ValueError, match="compression.type"):
        Producer(fake.bootstrap, compression_type="brotli")
    with pytest.raises(ValueError, match="delivery_timeout_ms"):
        Producer(fake.bootstrap, delivery_timeout_ms=1000)


def test_an_unknown_topic_fails_send_after_max_block_ms(fake):
    with Producer(fake.bootstrap, max_block_ms=300) as producer:
        started = time.monotonic()
        with pytest.raises(UnknownTopicError, match="'nope' does not exist"):
            producer.send("nope", b"v")
        assert time.monotonic() - started < 5


def test_a_topic_created_while_send_waits_is_used(fake):
    with Producer(fake.bootstrap, max_block_ms=5000) as producer:
        creator = concurrent.futures.ThreadPoolExecutor(1).submit(lambda: (time.sleep(0.3), fake.state.create("t", 1)))
        assert producer.send("t", b"v").result(10).offset == 0
        creator.result()


def test_a_record_above_max_request_size_is_refused_at_send(fake):
    fake.state.create("t", 1)
    with Producer(fake.bootstrap, max_request_size=1000) as producer:
        with pytest.raises(RecordTooLargeError, match="max_request_size"):
            producer.send("t", b"x" * 2000)


def test_send_after_close_is_refused_and_close_sends_what_is_queued(fake):
    fake.state.create("t", 1)
    producer = Producer(fake.bootstrap, linger_ms=60_000)
    future = producer.send("t", b"v")
    producer.close()
    assert future.result(0).offset == 0
    with pytest.raises(ProducerClosedError):
        producer.send("t", b"v")


def test_close_with_a_timeout_fails_what_could_not_be_sent(fake):
    fake.state.create("t", 1)
    fake.state.elect("t", 0, leader=-1)  # no leader: nothing can be sent
    producer = Producer(fake.bootstrap, linger_ms=0)
    future = producer.send("t", b"v")
    producer.close(timeout=0.3)
    with pytest.raises(ProducerClosedError):
        future.result(1)


def test_records_expire_after_delivery_timeout(fake):
    fake.state.create("t", 1)
    fake.state.elect("t", 0, leader=-1)
    with Producer(fake.bootstrap, linger_ms=0, request_timeout_ms=200, delivery_timeout_ms=400) as producer:
        future = producer.send("t", b"v")
        with pytest.raises(ProduceError, match="delivery_timeout_ms"):
            future.result(5)


def test_send_many_spreads_batches_and_reports_the_record_count(fake):
    fake.state.create("t", 3)
    with Producer(fake.bootstrap, batch_size=2000) as producer:
        assert producer.send_many("t", [b"x" * 100] * 300).result(10) == 300
        assert producer.send_many("t", [b"y"] * 5, partition=1).result(10) == 5
        assert producer.send_many("t", []).result(1) == 0
    counts = [len(values_in(fake, "t", p)) for p in range(3)]
    assert sum(counts) == 305 and sum(1 for c in counts if c) >= 2


def test_send_many_reports_the_first_failure(fake):
    fake.state.create("t", 1)
    fake.state.inject("t", 0, ErrorCode.INVALID_REQUIRED_ACKS)
    with Producer(fake.bootstrap) as producer:
        with pytest.raises(ProduceError):
            producer.send_many("t", [b"v"] * 10).result(10)


def test_callbacks_receive_the_record_future(fake):
    fake.state.create("t", 1)
    seen = concurrent.futures.Future()
    with Producer(fake.bootstrap) as producer:
        producer.send("t", b"v").add_done_callback(lambda f: seen.set_result(f.result().offset))
        assert seen.result(10) == 0


def test_one_request_per_leader_covers_all_its_partitions(fake):
    fake.state.create("t", 6)  # leaders 1, 2, 3, 1, 2, 3
    with Producer(fake.bootstrap, linger_ms=200) as producer:
        for p in range(6):
            producer.send("t", b"v", partition=p)
        producer.flush(10)
    assert len(fake.state.produce_requests) == 3
    assert sorted(len(r.topics[0].partitions) for r in fake.state.produce_requests) == [2, 2, 2]


def test_close_with_a_timeout_gives_up_on_requests_in_flight(fake):
    fake.state.create("t", 1)
    producer = Producer(fake.bootstrap, linger_ms=0)
    producer.partitions_for("t")
    fake.state.produce_gate.clear()  # the broker hangs in Produce
    future = producer.send("t", b"v")
    time.sleep(0.2)
    started = time.monotonic()
    producer.close(timeout=0.2)
    assert time.monotonic() - started < 3
    with pytest.raises(ProducerClosedError, match="closed before"):
        future.result(1)
    fake.state.produce_gate.set()


def test_keys_values_and_headers_must_be_bytes(fake):
    fake.state.create("t", 1)
    with Producer(fake.bootstrap) as producer:
        with pytest.raises(TypeError, match=r"value must be bytes, not str; encode it first"):
            producer.send("t", "text")
        with pytest.raises(TypeError, match="key must be bytes, not int"):
            producer.send("t", b"v", key=5)
        with pytest.raises(TypeError, match="header 'h'"):
            producer.send("t", b"v", headers=[("h", "x")])
        with pytest.raises(TypeError, match="value must be bytes"):
            producer.send_many("t", [b"ok", "text"])
        assert producer.send("t", bytearray(b"v"), key=memoryview(b"k")).result(10).offset == 0


def test_a_failure_of_the_io_loop_fails_the_records_instead_of_hanging(fake, monkeypatch):
    fake.state.create("t", 1)
    producer = Producer(fake.bootstrap, linger_ms=50)
    producer.partitions_for("t")
    monkeypatch.setattr(producer._accumulator, "drain", lambda *args: 1 / 0)
    future = producer.send("t", b"v")
    with pytest.raises(ClientError, match="I/O loop failed: ZeroDivisionError"):
        future.result(5)
    with pytest.raises(ProducerClosedError):
        producer.send("t", b"v")
    producer.close(5)
