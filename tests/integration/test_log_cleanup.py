"""Retention and compaction run on the brokers, below the high watermark."""

import os

import pytest

from replog.client import Admin, Consumer, NewTopic, Producer, TopicPartition
from tests.integration.cluster import read_partition, started, wait_for

pytestmark = pytest.mark.slow

SEGMENT_BYTES = 16_384


@pytest.fixture(scope="module")
def quick_cleanup_cluster(tmp_path_factory):
    yield from started(tmp_path_factory, "cleanup", "--brokers", "2", "--controllers", "1",
                       "--config", "log.retention.check.interval.ms=500")


@pytest.fixture(scope="module")
def bootstrap(quick_cleanup_cluster):
    return quick_cleanup_cluster.status()["metadata"][0]["address"]


def create(bootstrap, name, configs):
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(name, 1, 2, configs={"segment.bytes": str(SEGMENT_BYTES), **configs})])


def segment_count(cluster, topic):
    counts = []
    for broker in cluster.status()["brokers"]:
        directory = os.path.join(broker["data_dir"], f"{topic}-0")
        counts.append(sum(1 for name in os.listdir(directory) if name.endswith(".log")))
    return counts


def read_all(bootstrap, topic):
    return read_partition(bootstrap, TopicPartition(topic, 0))


def test_retention_bytes_deletes_old_segments_on_every_replica(quick_cleanup_cluster, bootstrap):
    topic = "retained"
    create(bootstrap, topic, {"retention.bytes": str(3 * SEGMENT_BYTES)})
    with Producer(bootstrap, acks="all", batch_size=4096) as producer:
        for i in range(2000):
            producer.send(topic, b"%0100d" % i, partition=0)
    consumer = Consumer(bootstrap)
    tp = TopicPartition(topic, 0)
    try:
        wait_for(lambda: consumer.beginning_offsets([tp])[tp] > 0, 30, "retention to move the log start")
    finally:
        consumer.close()
    wait_for(lambda: max(segment_count(quick_cleanup_cluster, topic)) <= 5, 30, "old segments to be deleted")
    records = read_all(bootstrap, topic)
    assert records[0].offset > 0
    assert records[-1].value == b"%0100d" % 1999, "the newest records are kept"


def test_a_compacted_topic_keeps_the_latest_value_of_every_key(quick_cleanup_cluster, bootstrap):
    topic = "compacted"
    create(bootstrap, topic, {"cleanup.policy": "compact"})
    with Producer(bootstrap, acks="all", batch_size=2048) as producer:
        for round_number in range(100):
            for key in range(10):
                producer.send(topic, b"%d-%0100d" % (key, round_number), key=b"key-%d" % key, partition=0)
    wait_for(lambda: len(read_all(bootstrap, topic)) < 500, 30, "the cleaner to compact the closed segments")
    latest = {}
    offsets = []
    for record in read_all(bootstrap, topic):
        latest[record.key] = record.value
        offsets.append(record.offset)
    assert latest == {b"key-%d" % key: b"%d-%0100d" % (key, 99) for key in range(10)}
    assert offsets == sorted(set(offsets)), "compaction keeps offsets and their order"
