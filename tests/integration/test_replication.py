"""Replication on real processes: 3 brokers, RF=3, min.insync.replicas=2, acks=all."""

from __future__ import annotations

import os
import threading
import time

import pytest

from replog.client import Consumer, NewTopic, ProduceError, Producer, TopicPartition
from tests.integration.cluster import wait_for
from tests.replicas import batches

pytestmark = pytest.mark.slow

SESSION_TIMEOUT_S = 6.0  # replog dev's zookeeper.session.timeout.ms
LAG_TIME_S = 10.0  # replog dev's replica.lag.time.max.ms


def create_topic(admin, name, partitions=1):
    admin.create_topics([NewTopic(name, partitions, 3, configs={"min.insync.replicas": "2"})])
    return wait_for(lambda: _described(admin, name), 15, f"{name} to have leaders")


def _described(admin, name):
    (topic,) = admin.describe_topics([name])
    if all(p.leader >= 0 for p in topic.partitions):
        return topic
    return None


def partition_info(admin, topic, partition=0):
    (description,) = admin.describe_topics([topic])
    return description.partitions[partition]


def consume_all(bootstrap, topic, partitions, until_offsets, timeout_s=60):
    consumer = Consumer(bootstrap, auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        records = []
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            records += consumer.poll(timeout_ms=500)
            if all(consumer.position(TopicPartition(topic, p)) >= until_offsets[p] for p in range(partitions)):
                return records
        raise AssertionError(f"consumed only {len(records)} records within {timeout_s} s")
    finally:
        consumer.close()


def assert_replicas_identical(cluster, topic, partition, high_watermark):
    copies = {}
    for broker in cluster.status()["brokers"]:
        path = os.path.join(broker["data_dir"], f"{topic}-{partition}")
        copies[broker["id"]] = b"".join(batch.data for batch in batches(path, below_offset=high_watermark))
    reference = copies[min(copies)]
    assert reference, "no batches below the high watermark"
    for broker_id, data in copies.items():
        assert data == reference, f"broker {broker_id}'s copy of {topic}-{partition} differs below the HW"


class AckRecorder:
    """Produces unique values in a background thread and records every acknowledgement."""

    def __init__(self, bootstrap: str, topic: str, total: int) -> None:
        self.topic = topic
        self.total = total
        self.acked: dict[bytes, int] = {}
        self.failures: list[BaseException] = []
        self._lock = threading.Lock()
        self.producer = Producer(bootstrap, acks="all", linger_ms=2, batch_size=16 * 1024,
                                 delivery_timeout_ms=60_000, request_timeout_ms=10_000)
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        for i in range(self.total):
            value = b"value-%06d" % i
            self.producer.send(self.topic, value, partition=0).add_done_callback(
                lambda future, value=value: self._record(value, future))
            if i % 200 == 0:
                time.sleep(0.02)  # spread the load so that faults land mid-stream
        self.producer.flush(timeout=120)

    def _record(self, value: bytes, future) -> None:
        error = future.exception()
        with self._lock:
            if error is None:
                self.acked[value] = future.result().offset
            else:
                self.failures.append(error)

    @property
    def answered(self) -> int:
        with self._lock:
            return len(self.acked) + len(self.failures)


def test_acks_all_records_survive_a_leader_sigkill_and_restart(cluster, admin, bootstrap):
    topic = "survive-leader-kill"
    create_topic(admin, topic)
    writer = AckRecorder(bootstrap, topic, total=10_000)
    writer.thread.start()
    wait_for(lambda: len(writer.acked) > 1000, 30, "the first thousand acknowledgements")
    old_leader = partition_info(admin, topic).leader
    cluster.signal("broker", old_leader, "KILL")
    wait_for(lambda: partition_info(admin, topic).leader not in (-1, old_leader),
             SESSION_TIMEOUT_S + 10, "a new leader")
    cluster("dev", "start", "broker", str(old_leader))
    writer.thread.join(timeout=180)
    writer.producer.close()
    assert writer.answered == writer.total
    assert len(writer.acked) >= writer.total * 0.9, (
        f"only {len(writer.acked)} of {writer.total} acknowledged; failures: {writer.failures[:3]}")

    wait_for(lambda: len(partition_info(admin, topic).isr) == 3, LAG_TIME_S + 30, "the restarted broker to rejoin")
    end = max(writer.acked.values()) + 1
    records = consume_all(bootstrap, topic, 1, {0: end})
    consumed = {r.value for r in records}
    lost = [v for v in writer.acked if v not in consumed]
    assert not lost, f"{len(lost)} acknowledged records lost, e.g. {lost[:3]}"
    offsets = [r.offset for r in records]
    assert offsets == sorted(set(offsets)), "offsets must be strictly increasing"
    assert_replicas_identical(cluster, topic, 0, end)


def test_a_paused_follower_leaves_the_isr_and_rejoins(cluster, admin, bootstrap):
    topic = "paused-follower"
    create_topic(admin, topic)
    info = partition_info(admin, topic)
    follower = next(r for r in info.replicas if r != info.leader)
    cluster.signal("broker", follower, "STOP")
    try:
        with Producer(bootstrap, acks=1) as producer:
            producer.send(topic, b"while paused", partition=0).result(timeout=30)
        started = time.monotonic()
        wait_for(lambda: follower not in partition_info(admin, topic).isr, LAG_TIME_S + 10,
                 "the paused follower to leave the ISR")
        print(f"follower left the ISR {time.monotonic() - started:.1f} s after the write it missed")
    finally:
        cluster.signal("broker", follower, "CONT")
    wait_for(lambda: follower in partition_info(admin, topic).isr, 30, "the follower to rejoin the ISR")


def test_acks_all_is_refused_while_the_isr_is_below_the_minimum(cluster, admin, bootstrap):
    topic = "under-min-isr"
    create_topic(admin, topic)
    info = partition_info(admin, topic)
    followers = [r for r in info.replicas if r != info.leader]
    with Producer(bootstrap, acks="all") as producer:
        producer.send(topic, b"before", partition=0).result(timeout=30)
    consumer = Consumer(bootstrap)
    tp = TopicPartition(topic, 0)
    high_watermark = consumer.end_offsets([tp])[tp]
    for broker in followers:
        cluster.signal("broker", broker, "KILL")
    try:
        wait_for(lambda: partition_info(admin, topic).isr == (info.leader,), SESSION_TIMEOUT_S + 10,
                 "the ISR to shrink to the leader")
        with Producer(bootstrap, acks="all", retries=0, delivery_timeout_ms=20_000,
                      request_timeout_ms=10_000) as producer:
            with pytest.raises(ProduceError, match="NOT_ENOUGH_REPLICAS"):
                producer.send(topic, b"refused", partition=0).result(timeout=30)
        assert consumer.end_offsets([tp])[tp] == high_watermark, "the high watermark must not move"
    finally:
        consumer.close()
        for broker in followers:
            cluster("dev", "start", "broker", str(broker))
    wait_for(lambda: len(partition_info(admin, topic).isr) == 3, LAG_TIME_S + 30, "the ISR to recover")
