"""Hanging transactions on real brokers (KIP-664): found, aborted, and the partition moves on.

KIP-890's verification keeps a partition from opening a transaction its coordinator did not add, so
on a default cluster no write can leave one hanging. An old client does not ask, and a cluster that
turns verification off (transaction.partition.verification.enable=false) lets its writes through:
here such a client writes transactionally to a compacted partition it never added to its
transaction, and a second writer uses a producer id no coordinator ever gave out. Both transactions
hold the partition's last stable offset: read_committed consumers stop at the first, and the cleaner
compacts nothing past it. `replog transactions find-hanging` names both (and not a healthy open
transaction elsewhere); `replog transactions abort` ends them, by start offset and by producer; the
LSO then reaches the high watermark, the waiting read_committed consumer gets what follows, and the
cleaner drops the aborted records while the committed value of their key stays."""

from __future__ import annotations

import json

import grpc
import pytest

from replog.api.broker.v1 import broker_pb2 as bp
from replog.api.broker.v1 import broker_pb2_grpc as bg
from replog.client import Admin, Consumer, NewTopic, Producer, TopicPartition
from replog.core.errors import ErrorCode
from replog.dev.processes import scrape_metric
from replog.protocol import encode_batch, iter_batches
from tests.integration.cluster import replog as cluster_command
from tests.integration.cluster import started, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

TOPIC = "hang"
TP = TopicPartition(TOPIC, 0)
UNKNOWN_PRODUCER_ID = 987_654_321  # no coordinator gave it out


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from started(tmp_path_factory, "hanging", "--brokers", "3", "--controllers", "1",
                       "--config", "transaction.partition.verification.enable=false",
                       "--config", "log.retention.check.interval.ms=300")


def replog(bootstrap, *args, check=True):
    return cluster_command(*args, "--bootstrap", bootstrap, check=check)


def leader(admin: Admin) -> tuple[int, bg.BrokerServiceStub]:
    leader_id = admin.describe_topics([TOPIC])[0].partitions[0].leader
    return leader_id, bg.BrokerServiceStub(grpc.insecure_channel(admin.cluster().brokers[leader_id]))


def produce_transactional(broker: bg.BrokerServiceStub, producer_id: int, epoch: int, key: bytes, value: bytes,
                          transactional_id: str) -> None:
    """An old client's transactional write: no AddPartitionsToTxn before it, and no verification."""
    batch = encode_batch([(key, value)], producer_id=producer_id, producer_epoch=epoch, base_sequence=0,
                         transactional=True)
    request = bp.ProduceRequest(transactional_id=transactional_id, acks=-1, timeout_ms=10_000)
    request.topics.add(topic=TOPIC).partitions.add(partition=0, records=batch, current_leader_epoch=-1)
    answer = broker.Produce(request, timeout=30).topics[0].partitions[0]
    assert ErrorCode.of(answer.error_code) is ErrorCode.NONE, answer


def last_stable_offset(broker: bg.BrokerServiceStub) -> int:
    request = bp.ListOffsetsRequest(replica_id=-1, isolation_level=bp.ISOLATION_LEVEL_READ_COMMITTED)
    request.topics.add(topic=TOPIC).partitions.add(partition=0, timestamp_ms=-1, current_leader_epoch=-1)
    return broker.ListOffsets(request, timeout=30).topics[0].partitions[0].offset


def stored(broker: bg.BrokerServiceStub) -> list[tuple[int, bytes, bytes]]:
    """Every record the leader's log holds now (read_uncommitted): (offset, key, value)."""
    request = bp.FetchRequest(replica_id=-1, max_wait_ms=0, max_bytes=1 << 22,
                              isolation_level=bp.ISOLATION_LEVEL_READ_UNCOMMITTED)
    request.topics.add(topic=TOPIC).partitions.add(partition=0, fetch_offset=0, current_leader_epoch=-1,
                                                   partition_max_bytes=1 << 22)
    answer = broker.Fetch(request, timeout=30).topics[0].partitions[0]
    return [(r.offset, r.key, r.value) for b in iter_batches(answer.records) if not b.is_control for r in b.records]


def spacers(producer: Producer, name: str) -> int:
    """Four records of distinct keys, so that what came before sits in closed segments (segment.bytes=200);
    the offset of the last."""
    return [producer.send(TOPIC, b"x", key=b"%s-%d" % (name.encode(), index), partition=0).result(30).offset
            for index in range(4)][-1]


def hanging(bootstrap, *scope: str) -> list[dict]:
    return json.loads(replog(bootstrap, "transactions", "find-hanging", *scope, "--json").stdout
                      )["hanging_transactions"]


def test_a_hanging_transaction_is_found_aborted_and_the_partition_moves_on(cluster, bootstrap):
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, 1, 3, configs={"cleanup.policy": "compact", "segment.bytes": "200"}),
                             NewTopic("healthy", 1, 3)])
        leader_id, broker = leader(admin)
    plain = Producer(bootstrap, acks="all", linger_ms=0)
    old_client = Producer(bootstrap, transactional_id="old-client", linger_ms=0)
    healthy = Producer(bootstrap, transactional_id="healthy-writer", linger_ms=0)
    reader = Consumer(bootstrap, isolation_level="read_committed", auto_offset_reset="earliest")
    try:
        plain.send(TOPIC, b"offset=10", key=b"group|orders|0", partition=0).result(30)
        for round_ in range(8):  # below the LSO-to-be: the cleaner may compact these
            plain.send(TOPIC, b"%d" % round_, key=b"below", partition=0).result(30)
        spacers(plain, "before")
        old_client.init_transactions()
        [described] = json.loads(replog(bootstrap, "transactions", "describe", "old-client", "--json").stdout
                                 )["transactions"]
        old_id, old_epoch = described["producer_id"], described["producer_epoch"]
        produce_transactional(broker, old_id, old_epoch, b"group|orders|0", b"offset=20", "old-client")
        produce_transactional(broker, UNKNOWN_PRODUCER_ID, 0, b"group|orders|0", b"offset=30", "gone")
        for round_ in range(8):  # past the LSO: the cleaner must leave them all
            plain.send(TOPIC, b"%d" % round_, key=b"above", partition=0).result(30)
        high_watermark = spacers(plain, "after") + 1
        healthy.init_transactions()
        healthy.begin_transaction()
        healthy.send("healthy", b"open and fine", partition=0).result(30)

        # The LSO is stuck at the first hanging transaction; a read_committed reader stops there.
        first_start = min(offset for offset, _, value in stored(broker) if value == b"offset=20")
        assert last_stable_offset(broker) == first_start
        reader.assign([TP])
        read = []
        wait_for(lambda: read.extend(reader.poll(200)) or reader.position(TP) >= first_start, 30,
                 "the reader to reach the LSO")
        read.extend(reader.poll(1000))
        assert reader.position(TP) == first_start and b"above" not in [r.key for r in read]

        # The cleaner runs (the duplicates below the LSO go) but leaves everything at or past the LSO.
        wait_for(lambda: [k for _, k, _ in stored(broker)].count(b"below") == 1, 60, "the cleaner below the LSO")
        assert [k for _, k, _ in stored(broker)].count(b"above") == 8

        # find-hanging names both, whatever the scope; not the healthy open transaction; not recent ones by default.
        found = hanging(bootstrap, "--topic", TOPIC, "--max-transaction-timeout", "0")
        assert len(found) == 2, found
        by_producer = {h["producer_id"]: h for h in found}
        assert by_producer[old_id]["start_offset"] == first_start
        assert by_producer[old_id]["transactional_id"] == "old-client"
        assert by_producer[UNKNOWN_PRODUCER_ID]["start_offset"] == first_start + 1
        assert by_producer[UNKNOWN_PRODUCER_ID]["transactional_id"] is None
        assert all(h["topic"] == TOPIC and h["partition"] == 0 and h["duration_ms"] >= 0 for h in found)
        everywhere = hanging(bootstrap, "--broker-id", str(leader_id), "--max-transaction-timeout", "0")
        assert sorted(h["producer_id"] for h in everywhere) == sorted(by_producer)
        assert hanging(bootstrap, "--topic", TOPIC) == []  # younger than the default 15 minutes
        text = replog(bootstrap, "transactions", "find-hanging", "--topic", TOPIC, "--partition", "0",
                      "--max-transaction-timeout", "0").stdout.splitlines()
        assert text[0].split()[:3] == ["TOPIC", "PARTITION", "PRODUCER-ID"] and len(text) == 3
        assert scrape_metric(cluster.metrics_address("broker", leader_id),
                             "replog_partitions_with_late_transactions") == 0  # late only after 20 minutes

        # Abort the first by its start offset: the LSO moves on to the second.
        aborted = json.loads(replog(bootstrap, "transactions", "abort", "--topic", TOPIC, "--partition", "0",
                                    "--start-offset", str(first_start), "--json").stdout)
        assert aborted["producer_id"] == old_id and aborted["marker_producer_epoch"] == old_epoch + 1
        wait_for(lambda: last_stable_offset(broker) == first_start + 1, 30, "the LSO to reach the second")
        # The second by its producer, epoch and coordinator epoch (none: it never had a marker).
        said = replog(bootstrap, "transactions", "abort", "--topic", TOPIC, "--partition", "0", "--producer-id",
                      str(UNKNOWN_PRODUCER_ID), "--producer-epoch", "0", "--coordinator-epoch", "-1").stdout
        assert said.startswith(f"Aborted the transaction of producer {UNKNOWN_PRODUCER_ID} on {TOPIC}-0")
        wait_for(lambda: last_stable_offset(broker) >= high_watermark, 30, "the LSO to reach the high watermark")

        # The waiting reader moves on past both, never seeing an aborted record.
        wait_for(lambda: read.extend(reader.poll(200)) or reader.position(TP) >= high_watermark, 30,
                 "the reader to read on to the high watermark")
        assert [r.value for r in read if r.key == b"group|orders|0"] == [b"offset=10"]
        assert [r.key for r in read].count(b"above") >= 1 and read[-1].key == b"after-3"
        assert hanging(bootstrap, "--topic", TOPIC, "--max-transaction-timeout", "0") == []

        # The cleaner now drops the aborted records; the committed offset they shadowed stays.
        wait_for(lambda: [v for _, k, v in stored(broker) if k == b"group|orders|0"] == [b"offset=10"], 60,
                 "the cleaner to drop the aborted records")
        wait_for(lambda: [k for _, k, _ in stored(broker)].count(b"above") == 1, 60, "the cleaner past the old LSO")
        healthy.commit_transaction()
    finally:
        reader.close()
        for producer in (plain, old_client, healthy):
            producer.close()


@pytest.mark.parametrize("args, says", [
    (("abort", "--topic", "no-such-topic", "--partition", "0", "--start-offset", "0"),
     "topic 'no-such-topic' does not exist"),
    (("abort", "--topic", TOPIC, "--partition", "0", "--start-offset", "123456"),
     f"no transaction open on {TOPIC}-0 begins at offset 123456"),
    (("abort", "--topic", TOPIC, "--partition", "0", "--producer-id", "5"),
     "--producer-epoch, --coordinator-epoch missing"),
    (("abort", "--topic", TOPIC, "--partition", "0"), "either by --start-offset or by --producer-id"),
    (("abort", "--topic", TOPIC, "--partition", "0", "--producer-id", "5", "--producer-epoch", "0",
      "--coordinator-epoch", "0"), f"producer 5 has no transaction open on {TOPIC}-0"),
    (("find-hanging",), "find-hanging needs --topic or --broker-id"),
    (("find-hanging", "--partition", "0"), "--partition needs --topic"),
    (("find-hanging", "--broker-id", "99"), "broker 99 is not in the cluster"),
    (("find-hanging", "--topic", "no-such-topic"), "topic 'no-such-topic' does not exist"),
])
def test_bad_input_gets_one_clear_sentence(bootstrap, args, says):
    with Admin(bootstrap) as admin:
        if TOPIC not in admin.list_topics():
            admin.create_topics([NewTopic(TOPIC, 1, 3, configs={"cleanup.policy": "compact"})])
    result = replog(bootstrap, "transactions", *args, check=False)
    assert result.returncode == 1, result
    assert says in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
