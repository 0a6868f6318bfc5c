"""The transaction protocol a cluster runs (transaction.version), seen through the Python producer.

Given a one-broker cluster at each version, a transaction over two partitions commits and a read_committed
consumer reads exactly its records. On version 2 (the default) the coordinator says so at InitProducerId and
the producer sends no AddPartitionsToTxn at all: the partition leader adds the partitions (KIP-890 part 2);
on version 1 the producer adds them itself. One broker, so that a leader's add is no RPC of its own and
every AddPartitionsToTxn the broker serves is the producer's.

Given two brokers whose settings differ (broker 2 restarted with transaction.version=1 and verification
off), a producer of each coordinator's version commits transactions over partitions of both brokers, and
read_committed reads them all: broker 2 still adds the partitions of the producer on version 2, so no
transaction is left open on its partitions.
"""

from __future__ import annotations

import os
import urllib.request

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from replog.api.coordinator.v1 import coordinator_pb2 as cp
from replog.api.coordinator.v1 import coordinator_pb2_grpc as cg
from replog.client import Admin, Consumer, NewTopic, Producer, TopicPartition
from replog.core.errors import ErrorCode
from tests.integration.cluster import replog, started, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

TOPIC = "orders"
ADD_PARTITIONS = "replog_request_duration_seconds_count"


@pytest.fixture(scope="module", params=[2, 1], ids=["transaction.version=2", "transaction.version=1"])
def cluster(request, tmp_path_factory):
    version = request.param
    for local in started(tmp_path_factory, f"v{version}", "--brokers", "1", "--controllers", "1",
                         "--config", f"transaction.version={version}",
                         "--config", "transaction.state.log.replication.factor=1",
                         "--config", "transaction.state.log.min.isr=1",
                         "--config", "transaction.state.log.num.partitions=2",
                         "--config", "offsets.topic.replication.factor=1",
                         "--config", "offsets.topic.num.partitions=2"):
        bootstrap = local.status()["metadata"][0]["address"]
        with Admin(bootstrap) as admin:
            admin.create_topics([NewTopic(TOPIC, 2, 1)])
            wait_for(lambda: all(p.leader >= 0 for p in admin.describe_topics([TOPIC])[0].partitions), 60, "leaders")
        yield local, bootstrap, version


def adds_served(local) -> float:
    """AddPartitionsToTxn requests the broker has served."""
    address = local.metrics_address("broker", 1)
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as response:
        text = response.read().decode()
    return sum(sample.value for family in text_string_to_metric_families(text) for sample in family.samples
               if sample.name == ADD_PARTITIONS and sample.labels.get("rpc") == "AddPartitionsToTxn")


def test_a_transaction_commits_and_only_a_producer_on_version_1_adds_partitions_itself(cluster):
    local, bootstrap, version = cluster
    with grpc.insecure_channel(local.status()["brokers"][0]["address"]) as channel:
        stub = cg.CoordinatorServiceStub(channel)
        # FindCoordinator creates __transaction_state; the one broker then coordinates every id.
        wait_for(lambda: stub.FindCoordinator(cp.FindCoordinatorRequest(
            keys=["probe"], key_type=cp.COORDINATOR_TYPE_TRANSACTION), timeout=30).coordinators[0].error_code
            == ErrorCode.NONE, 60, "a transaction coordinator")
        answer = wait_for(lambda: (a := stub.InitProducerId(cp.InitProducerIdRequest(
            transactional_id="probe", transaction_timeout_ms=60_000), timeout=30)).error_code == ErrorCode.NONE
            and a, 60, "InitProducerId")
    assert answer.transaction_version == version

    served_before = adds_served(local)
    with Producer(bootstrap, transactional_id="orders-writer") as producer:
        producer.init_transactions()
        for round_ in range(2):
            producer.begin_transaction()
            for partition in (0, 1):
                producer.send(TOPIC, b"order %d-%d" % (round_, partition), partition=partition)
            producer.commit_transaction()
    served = adds_served(local) - served_before
    if version == 2:
        assert served == 0, f"the producer sent {served:.0f} AddPartitionsToTxn on transaction version 2"
    else:
        assert served >= 2, "one AddPartitionsToTxn a transaction, at least"

    with Consumer(bootstrap, isolation_level="read_committed", auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)])
        seen: list[bytes] = []
        wait_for(lambda: seen.extend(r.value for r in consumer.poll(200)) or len(seen) >= 4, 30, "four records")
    assert sorted(seen) == [b"order 0-0", b"order 0-1", b"order 1-0", b"order 1-1"]


MIXED_TOPIC = "mixed"


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """Two brokers: broker 1 on transaction version 2, broker 2 on version 1 with verification off."""
    for local in started(tmp_path_factory, "mixed", "--brokers", "2", "--controllers", "1",
                         "--config", "transaction.state.log.replication.factor=1",
                         "--config", "transaction.state.log.min.isr=1",
                         "--config", "transaction.state.log.num.partitions=4",
                         "--config", "offsets.topic.replication.factor=1",
                         "--config", "offsets.topic.num.partitions=2"):
        local.signal("broker", 2, "TERM")
        replog("dev", "start", "broker", "2", "--data-dir", local.data_dir,
               env={**os.environ, "REPLOG_TRANSACTION_VERSION": "1",
                    "REPLOG_TRANSACTION_PARTITION_VERIFICATION_ENABLE": "false"})
        bootstrap = local.status()["metadata"][0]["address"]
        with Admin(bootstrap) as admin:
            admin.create_topics([NewTopic(MIXED_TOPIC, 4, 1)])
            wait_for(lambda: {p.leader for p in admin.describe_topics([MIXED_TOPIC])[0].partitions} == {1, 2}, 60,
                     "partitions led by both brokers")
        yield local, bootstrap


def coordinated_by(stub, broker_id: int) -> str:
    """A transactional id whose coordinator is `broker_id`."""
    for index in range(200):
        transactional_id = f"writer-{index}"
        answer = stub.FindCoordinator(cp.FindCoordinatorRequest(
            keys=[transactional_id], key_type=cp.COORDINATOR_TYPE_TRANSACTION), timeout=30).coordinators[0]
        if answer.error_code == ErrorCode.NONE and answer.coordinator.broker_id == broker_id:
            return transactional_id
    raise AssertionError(f"no transactional id of the first 200 is coordinated by broker {broker_id}")


def test_brokers_on_different_versions_commit_every_producers_transactions(mixed):
    local, bootstrap = mixed
    with grpc.insecure_channel(local.status()["brokers"][0]["address"]) as channel:
        stub = cg.CoordinatorServiceStub(channel)
        wait_for(lambda: stub.FindCoordinator(cp.FindCoordinatorRequest(
            keys=["probe"], key_type=cp.COORDINATOR_TYPE_TRANSACTION), timeout=30).coordinators[0].error_code
            == ErrorCode.NONE, 60, "a transaction coordinator")
        writers = [wait_for(lambda: coordinated_by(stub, broker_id), 60, f"broker {broker_id}'s ids")
                   for broker_id in (1, 2)]
    for broker, transactional_id, version in zip(local.status()["brokers"], writers, (2, 1)):
        with grpc.insecure_channel(broker["address"]) as channel:
            answer = cg.CoordinatorServiceStub(channel).InitProducerId(cp.InitProducerIdRequest(
                transactional_id=transactional_id, transaction_timeout_ms=60_000), timeout=30)
        assert (answer.error_code, answer.transaction_version) == (ErrorCode.NONE, version), broker
    with Admin(bootstrap) as admin:
        partitions = admin.describe_topics([MIXED_TOPIC])[0].partitions
    expected = []
    for transactional_id in writers:
        with Producer(bootstrap, transactional_id=transactional_id) as producer:
            producer.init_transactions()
            for round_ in range(2):
                producer.begin_transaction()
                for p in partitions:  # led by both brokers
                    value = b"%s %d %d" % (transactional_id.encode(), round_, p.partition)
                    producer.send(MIXED_TOPIC, value, partition=p.partition)
                    expected.append(value)
                producer.commit_transaction()

    with Consumer(bootstrap, isolation_level="read_committed", auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(MIXED_TOPIC, p.partition) for p in partitions])
        seen: list[bytes] = []
        wait_for(lambda: seen.extend(r.value for r in consumer.poll(200)) or len(seen) >= len(expected), 30,
                 f"{len(expected)} committed records ({len(seen)} read)")
    assert sorted(seen) == sorted(expected)
