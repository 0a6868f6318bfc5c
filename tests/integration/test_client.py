"""The Python client against a real local cluster: topics, acks, ordering, failover, truncation checks."""

import threading
import time

import pytest

from replog.client import (
    AdminError,
    Consumer,
    LogTruncationError,
    NewTopic,
    ProduceError,
    Producer,
    TopicPartition,
    UnknownTopicError,
)
from replog.core.errors import ErrorCode
from tests.integration.cluster import wait_for

pytestmark = pytest.mark.slow

SESSION_TIMEOUT_S = 6.0  # replog dev's zookeeper.session.timeout.ms
FAILOVER_S_MAX = SESSION_TIMEOUT_S + 20


def create(admin, name, partitions=3, replication_factor=3, **configs):
    admin.create_topics([NewTopic(name, partitions, replication_factor, configs=configs)])
    return name


def poll_until(consumer, count, timeout_s=30):
    records = []
    deadline = time.monotonic() + timeout_s
    while len(records) < count and time.monotonic() < deadline:
        records += consumer.poll(500)
    return records


def read_all(bootstrap, topic, partitions, expected, timeout_s=30):
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        return poll_until(consumer, expected, timeout_s)


def leader_of(admin, topic, partition):
    [described] = admin.describe_topics([topic])
    return described.partitions[partition]


def test_a_new_topic_has_leaders_spread_and_a_full_isr(admin):
    created = admin.create_topics([NewTopic("spread", 3, 3)])
    assert (created["spread"].num_partitions, created["spread"].replication_factor) == (3, 3)
    [topic] = admin.describe_topics(["spread"])
    assert [p.partition for p in topic.partitions] == [0, 1, 2]
    assert sorted(p.leader for p in topic.partitions) == [1, 2, 3]
    assert all(p.leader == p.replicas[0] for p in topic.partitions), "the preferred leader leads"
    assert all(sorted(p.replicas) == [1, 2, 3] and sorted(p.isr) == [1, 2, 3] for p in topic.partitions)
    assert "spread" in admin.list_topics()


def test_creating_an_existing_topic_fails_for_that_topic_alone(admin):
    create(admin, "taken", partitions=1, replication_factor=1)
    with pytest.raises(AdminError) as raised:
        admin.create_topics([NewTopic("taken", 1, 1), NewTopic("free", 1, 1)])
    assert raised.value.error_code is ErrorCode.TOPIC_ALREADY_EXISTS
    assert set(raised.value.errors) == {"taken"} and set(raised.value.created) == {"free"}
    wait_for(lambda: "free" in admin.list_topics(), 10, "the topic created alongside to be listed")


def test_validate_only_checks_a_topic_without_creating_it(admin):
    assert "checked" in admin.create_topics([NewTopic("checked", 1, 1)], validate_only=True)
    with pytest.raises(AdminError) as raised:
        admin.create_topics([NewTopic("too-many-replicas", 1, 5)], validate_only=True)
    assert raised.value.error_code is ErrorCode.INVALID_REPLICATION_FACTOR
    assert "checked" not in admin.list_topics()
    with pytest.raises(UnknownTopicError, match="'checked' does not exist"):
        admin.describe_topics(["checked"])


def test_an_admin_that_knew_the_old_controller_creates_topics_at_the_new_one(cluster, admin):
    create(admin, "before-failover", partitions=1, replication_factor=1)
    (old,) = cluster.active_controllers()
    cluster.signal("controller", old, "TERM")
    (new,) = wait_for(lambda: [c for c in cluster.active_controllers() if c != old], FAILOVER_S_MAX,
                      "another controller to become active")
    cluster("dev", "start", "controller", str(old))  # a standby now, at the address the admin knows
    assert "after-failover" in admin.create_topics([NewTopic("after-failover", 1, 1)])
    assert cluster.active_controllers() == [new]


def test_every_acknowledged_record_is_read_back_once_in_partition_order(admin, bootstrap):
    topic = create(admin, "roundtrip")
    with Producer(bootstrap, acks="all") as producer:
        futures = [producer.send(topic, b"value-%d" % i, key=b"key-%d" % (i % 50)) for i in range(5000)]
        producer.flush(60)
        acked = [f.result() for f in futures]
    by_partition = {}
    for index, meta in enumerate(acked):
        by_partition.setdefault(meta.partition, []).append((meta.offset, index))
    for offsets in by_partition.values():
        assert [o for o, _ in offsets] == list(range(len(offsets))), "offsets are consecutive from 0"
    records = read_all(bootstrap, topic, 3, 5000)
    assert len(records) == 5000
    seen = {(r.partition, r.offset): (r.key, r.value) for r in records}
    assert len(seen) == 5000, "no record twice"
    for index, meta in enumerate(acked):
        assert seen[(meta.partition, meta.offset)] == (b"key-%d" % (index % 50), b"value-%d" % index)


@pytest.mark.parametrize("acks", [0, 1])
def test_acks_zero_and_one_write_records_too(admin, bootstrap, acks):
    topic = create(admin, f"acks-{acks}", partitions=1)
    with Producer(bootstrap, acks=acks) as producer:
        producer.send_many(topic, [b"r%d" % i for i in range(100)]).result(30)
        offsets = [producer.send(topic, b"last").result(30).offset]
    assert offsets == ([-1] if acks == 0 else [100])
    assert len(read_all(bootstrap, topic, 1, 101)) == 101


def test_an_unknown_topic_is_reported_after_max_block_ms(bootstrap):
    with Producer(bootstrap, max_block_ms=1000) as producer:
        started = time.monotonic()
        with pytest.raises(UnknownTopicError, match="'no-such-topic' does not exist"):
            producer.send("no-such-topic", b"v")
        assert time.monotonic() - started < 10


def test_no_acknowledged_write_is_lost_when_the_leader_is_killed(cluster, admin, bootstrap):
    topic = create(admin, "failover", partitions=1)
    victim = leader_of(admin, topic, 0).leader
    acked: list[bytes] = []
    failed: list[BaseException] = []
    stop = threading.Event()

    def produce():
        with Producer(bootstrap, acks="all", linger_ms=2, retry_backoff_ms=50) as producer:
            i = 0
            while not stop.is_set():
                value = b"m%06d" % i
                future = producer.send(topic, value)
                future.add_done_callback(
                    lambda f, v=value: failed.append(f.exception()) if f.exception() else acked.append(v))
                i += 1
                time.sleep(0.0005)
            producer.flush(120)

    writer = threading.Thread(target=produce)
    writer.start()
    wait_for(lambda: len(acked) > 500, 30, "records before the failover")
    cluster.signal("broker", victim, "KILL")
    wait_for(lambda: leader_of(admin, topic, 0).leader not in (victim, -1), FAILOVER_S_MAX, "a new leader")
    count_at_failover = len(acked)
    wait_for(lambda: len(acked) > count_at_failover + 500, 60, "records after the failover")
    stop.set()
    writer.join(180)
    cluster("dev", "start", "broker", str(victim))
    assert not failed, failed[:3]
    values = [r.value for r in read_all(bootstrap, topic, 1, len(acked), timeout_s=60)]
    assert set(acked) <= set(values), "every acknowledged record survived"
    positions = [values.index(v) for v in acked]
    assert positions == sorted(positions), "in the order they were acknowledged"


def test_a_consumer_follows_a_leader_change_without_skipping_or_repeating(cluster, admin, bootstrap):
    topic = create(admin, "follow", partitions=1)
    tp = TopicPartition(topic, 0)
    with Producer(bootstrap) as producer, Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        producer.send_many(topic, [b"a%d" % i for i in range(100)]).result(30)
        consumer.assign([tp])
        got = poll_until(consumer, 100)
        old_leader = leader_of(admin, topic, 0).leader
        cluster.signal("broker", old_leader, "KILL")
        wait_for(lambda: leader_of(admin, topic, 0).leader not in (old_leader, -1), FAILOVER_S_MAX, "a new leader")
        producer.send_many(topic, [b"b%d" % i for i in range(100)]).result(60)
        got += poll_until(consumer, 200 - len(got), timeout_s=60)
        cluster("dev", "start", "broker", str(old_leader))
    assert [r.offset for r in got] == list(range(200))
    assert got[-1].leader_epoch > got[0].leader_epoch


def test_min_insync_replicas_refuses_acks_all_writes_when_the_isr_is_too_small(cluster, admin, bootstrap):
    topic = create(admin, "strict", partitions=1, **{"min.insync.replicas": "3"})
    follower = next(r for r in leader_of(admin, topic, 0).replicas if r != leader_of(admin, topic, 0).leader)
    cluster.signal("broker", follower, "KILL")
    try:
        wait_for(lambda: len(leader_of(admin, topic, 0).isr) == 2, 40, "the ISR to shrink")
        for acks in ("all", -1):
            with Producer(bootstrap, acks=acks, retries=0) as producer:
                with pytest.raises(ProduceError) as raised:
                    producer.send(topic, b"v").result(30)
            assert raised.value.error_code in (ErrorCode.NOT_ENOUGH_REPLICAS,
                                               ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND), acks
        for acks in (1, "1"):
            with Producer(bootstrap, acks=acks) as producer:
                assert producer.send(topic, b"v").result(30).offset >= 0, acks
        with Producer(bootstrap, acks=0) as producer:
            assert producer.send(topic, b"v").result(30).offset == -1
    finally:
        cluster("dev", "start", "broker", str(follower))


def test_a_consumer_reports_the_records_an_unclean_election_lost(cluster, admin, bootstrap):
    topic = "unclean"
    admin.create_topics([NewTopic(topic, replica_assignment={0: [1, 2]},
                                  configs={"unclean.leader.election.enable": "true", "min.insync.replicas": "1"})])
    tp = TopicPartition(topic, 0)
    with Producer(bootstrap, acks="all") as producer:
        producer.send_many(topic, [b"both-%d" % i for i in range(10)]).result(30)
        cluster.signal("broker", 2, "KILL")
        wait_for(lambda: leader_of(admin, topic, 0).isr == (1,), FAILOVER_S_MAX, "broker 2 to leave the ISR")
        producer.send_many(topic, [b"only-on-1-%d" % i for i in range(10)]).result(30)
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([tp])
        assert len(poll_until(consumer, 20)) == 20
        assert consumer.position(tp) == 20
        cluster.signal("broker", 1, "KILL")
        try:
            cluster("dev", "start", "broker", "2")  # the only live replica: elected although not in the ISR
            wait_for(lambda: leader_of(admin, topic, 0).leader == 2, FAILOVER_S_MAX, "broker 2 to lead, uncleanly")
            with pytest.raises(LogTruncationError) as raised:
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    assert consumer.poll(500) == [], "no record may be read past the truncation"
            error = raised.value
            assert (error.topic, error.partition, error.position, error.end_offset) == (topic, 0, 20, 10)
            assert consumer.poll(300) == [], "the partition waits for the caller to decide"
            with Producer(bootstrap, acks=1) as producer:
                producer.send_many(topic, [b"new-%d" % i for i in range(3)]).result(30)
            consumer.seek(tp, error.end_offset)
            assert [(r.offset, r.value) for r in poll_until(consumer, 3)] == [(10 + i, b"new-%d" % i) for i in range(3)]
        finally:
            cluster("dev", "start", "broker", "1")
