"""Creating topics through the active controller, on a real cluster of 3 brokers and 2 controllers."""

import asyncio
from collections import Counter

import grpc
import pytest

from replog.api.common.v1 import common_pb2
from replog.api.controller.v1 import controller_pb2, controller_pb2_grpc
from replog.api.metadata.v1 import metadata_pb2, metadata_pb2_grpc
from replog.zk.store import MetadataStore
from tests.integration.cluster import wait_for

pytestmark = pytest.mark.slow

NONE = common_pb2.ERROR_CODE_NONE


def metadata(cluster, *topics: str) -> metadata_pb2.MetadataResponse:
    with grpc.insecure_channel(cluster.status()["metadata"][0]["address"]) as channel:
        stub = metadata_pb2_grpc.MetadataServiceStub(channel)
        return stub.Metadata(metadata_pb2.MetadataRequest(topics=topics), timeout=5)


def controller_call(address: str, method: str, request):
    with grpc.insecure_channel(address) as channel:
        return getattr(controller_pb2_grpc.ControllerServiceStub(channel), method)(request, timeout=10)


def active_controller_address(cluster) -> str:
    """Where Metadata's `controller` field says the active controller is, as a client finds it."""
    endpoint = wait_for(lambda: metadata(cluster).controller.port and metadata(cluster).controller, 10,
                        "the metadata service to name the active controller")
    return f"{endpoint.host}:{endpoint.port}"


def create(cluster, *topics: controller_pb2.CreatableTopic, validate_only=False) -> dict:
    response = controller_call(active_controller_address(cluster), "CreateTopics",
                               controller_pb2.CreateTopicsRequest(topics=topics, validate_only=validate_only))
    return {t.name: t for t in response.topics}


def described(cluster, topic: str) -> metadata_pb2.TopicMetadata | None:
    (found,) = metadata(cluster, topic).topics
    return found if found.error_code == NONE else None


def read_zookeeper(cluster, topic: str):
    async def read():
        store = MetadataStore(cluster.status()["zookeeper"]["address"], session_timeout_ms=6000,
                              connection_timeout_ms=5000)
        await store.start()
        try:
            return await store.read_topic(topic)
        finally:
            await store.stop()

    return asyncio.run(read())


def test_a_topic_of_six_partitions_on_three_brokers_has_every_leader_and_spreads_them(cluster):
    result = create(cluster, controller_pb2.CreatableTopic(
        name="orders", num_partitions=6, replication_factor=3, configs={"min.insync.replicas": "2"}))["orders"]
    assert result.error_code == NONE, result.error_message
    assert (result.num_partitions, result.replication_factor) == (6, 3) and result.topic_id

    topic = wait_for(lambda: described(cluster, "orders"), 5, "the metadata service to show the topic")
    assert topic.topic_id == result.topic_id
    assert [p.partition for p in topic.partitions] == list(range(6))
    for partition in topic.partitions:
        assert partition.error_code == NONE
        assert sorted(partition.replicas) == [1, 2, 3]
        assert partition.leader == partition.replicas[0]  # the preferred leader
        assert sorted(partition.isr) == [1, 2, 3]
        assert partition.leader_epoch == 0
    assert Counter(p.leader for p in topic.partitions) == {1: 2, 2: 2, 3: 2}

    # ZooKeeper holds the same, and the config.
    snapshot = read_zookeeper(cluster, "orders")
    assert snapshot.assignment.topic_id == result.topic_id
    assert snapshot.config == {"min.insync.replicas": "2"}
    assert {p: s.state.leader for p, s in snapshot.states.items()} == {p.partition: p.leader for p in topic.partitions}
    assert all(s.state.leader_epoch == 0 for s in snapshot.states.values())


def test_explicit_assignments_and_defaults(cluster):
    results = create(
        cluster,
        controller_pb2.CreatableTopic(name="pinned", num_partitions=-1, replication_factor=-1, assignments=[
            controller_pb2.ReplicaAssignment(partition=0, broker_ids=[3, 1]),
            controller_pb2.ReplicaAssignment(partition=1, broker_ids=[2, 3])]),
        controller_pb2.CreatableTopic(name="defaulted", num_partitions=-1, replication_factor=-1),
    )
    assert results["pinned"].error_code == NONE, results["pinned"].error_message
    assert results["defaulted"].error_code == NONE, results["defaulted"].error_message
    assert (results["defaulted"].num_partitions, results["defaulted"].replication_factor) == (1, 1)
    pinned = wait_for(lambda: described(cluster, "pinned"), 5, "the pinned topic")
    assert [(list(p.replicas), p.leader) for p in pinned.partitions] == [([3, 1], 3), ([2, 3], 2)]


@pytest.mark.parametrize("topic, error, words", [
    (controller_pb2.CreatableTopic(name="too-wide", num_partitions=1, replication_factor=4),
     common_pb2.ERROR_CODE_INVALID_REPLICATION_FACTOR, ["4", "3"]),
    (controller_pb2.CreatableTopic(name="bad/name", num_partitions=1, replication_factor=1),
     common_pb2.ERROR_CODE_INVALID_TOPIC_EXCEPTION, ["bad/name"]),
    (controller_pb2.CreatableTopic(name="x" * 250, num_partitions=1, replication_factor=1),
     common_pb2.ERROR_CODE_INVALID_TOPIC_EXCEPTION, ["249"]),
    (controller_pb2.CreatableTopic(name="cfg", num_partitions=1, replication_factor=1,
                                   configs={"retention.ms": "a week"}),
     common_pb2.ERROR_CODE_INVALID_CONFIG, ["retention.ms"]),
    (controller_pb2.CreatableTopic(name="cfg", num_partitions=1, replication_factor=1,
                                   configs={"retention.days": "7"}),
     common_pb2.ERROR_CODE_INVALID_CONFIG, ["retention.days"]),
    (controller_pb2.CreatableTopic(name="none", num_partitions=0, replication_factor=1),
     common_pb2.ERROR_CODE_INVALID_PARTITIONS, ["at least 1"]),
    (controller_pb2.CreatableTopic(name="ghost", num_partitions=-1, replication_factor=-1, assignments=[
        controller_pb2.ReplicaAssignment(partition=0, broker_ids=[1, 7])]),
     common_pb2.ERROR_CODE_INVALID_REPLICA_ASSIGNMENT, ["[7]"]),
])
def test_a_bad_request_gets_kafkas_error_code_and_says_why(cluster, topic, error, words):
    result = create(cluster, topic)[topic.name]
    assert common_pb2.ErrorCode.Name(result.error_code) == common_pb2.ErrorCode.Name(error)
    assert all(word in result.error_message for word in words), result.error_message
    assert (result.num_partitions, result.replication_factor, result.topic_id) == (-1, -1, "")
    assert topic.name not in {t.name for t in metadata(cluster).topics}  # all topics: a long name is refused


def test_creating_an_existing_topic_answers_topic_already_exists(cluster):
    first = create(cluster, controller_pb2.CreatableTopic(name="twice", num_partitions=2, replication_factor=2))
    assert first["twice"].error_code == NONE
    again = create(cluster, controller_pb2.CreatableTopic(name="twice", num_partitions=5, replication_factor=1))
    assert again["twice"].error_code == common_pb2.ERROR_CODE_TOPIC_ALREADY_EXISTS
    assert "twice" in again["twice"].error_message
    topic = wait_for(lambda: described(cluster, "twice"), 5, "the topic")
    assert len(topic.partitions) == 2 and topic.topic_id == first["twice"].topic_id


def test_validate_only_reports_the_outcome_and_creates_nothing(cluster):
    result = create(cluster, controller_pb2.CreatableTopic(name="dry-run", num_partitions=3, replication_factor=2),
                    validate_only=True)["dry-run"]
    assert result.error_code == NONE and (result.num_partitions, result.replication_factor) == (3, 2)
    assert read_zookeeper(cluster, "dry-run") is None
    assert described(cluster, "dry-run") is None


def test_the_controller_that_is_not_active_answers_not_controller(cluster):
    active = active_controller_address(cluster)
    (standby,) = [c["address"] for c in cluster.status()["controllers"] if c["address"] != active]
    created = controller_call(standby, "CreateTopics", controller_pb2.CreateTopicsRequest(
        topics=[controller_pb2.CreatableTopic(name="elsewhere", num_partitions=1, replication_factor=1)]))
    assert created.topics[0].error_code == common_pb2.ERROR_CODE_NOT_CONTROLLER
    altered = controller_call(standby, "AlterPartition", controller_pb2.AlterPartitionRequest(broker_id=1))
    assert altered.error_code == common_pb2.ERROR_CODE_NOT_CONTROLLER
    assert described(cluster, "elsewhere") is None


def test_alter_partition_checks_the_broker_epoch_and_the_epochs_of_the_proposal(cluster):
    create(cluster, controller_pb2.CreatableTopic(name="isr", num_partitions=1, replication_factor=3))
    wait_for(lambda: described(cluster, "isr"), 5, "the topic")
    current = read_zookeeper(cluster, "isr").states[0]
    leader = current.state.leader

    async def broker_epoch():
        store = MetadataStore(cluster.status()["zookeeper"]["address"], session_timeout_ms=6000,
                              connection_timeout_ms=5000)
        await store.start()
        try:
            return (await store.live_brokers())[leader].broker_epoch
        finally:
            await store.stop()

    epoch = asyncio.run(broker_epoch())
    address = active_controller_address(cluster)

    def propose(leader_epoch, partition_epoch, isr, *, broker_epoch=epoch, broker=leader):
        return controller_call(address, "AlterPartition", controller_pb2.AlterPartitionRequest(
            broker_id=broker, broker_epoch=broker_epoch, partitions=[controller_pb2.AlterPartitionProposal(
                topic="isr", partition=0, leader_epoch=leader_epoch, partition_epoch=partition_epoch,
                new_isr_with_epochs=[controller_pb2.IsrMember(broker_id=b, broker_epoch=-1) for b in isr])]))

    state = current.state
    stale = propose(state.leader_epoch, state.partition_epoch, state.isr, broker_epoch=epoch - 1)
    assert stale.error_code == common_pb2.ERROR_CODE_STALE_BROKER_EPOCH and not stale.partitions

    def partition_error(response):
        assert response.error_code == NONE, response.error_message
        (result,) = response.partitions
        assert (result.leader, result.leader_epoch) == (leader, state.leader_epoch)
        return common_pb2.ErrorCode.Name(result.error_code)

    assert partition_error(propose(state.leader_epoch - 1, state.partition_epoch, state.isr)) \
        == "ERROR_CODE_FENCED_LEADER_EPOCH"
    assert partition_error(propose(state.leader_epoch, state.partition_epoch - 1, [leader])) \
        == "ERROR_CODE_INVALID_UPDATE_VERSION"
    assert partition_error(propose(state.leader_epoch, state.partition_epoch, [b for b in state.isr if b != leader])) \
        == "ERROR_CODE_INVALID_REQUEST"
    assert partition_error(propose(state.leader_epoch, state.partition_epoch, [*state.isr, 9])) \
        == "ERROR_CODE_INVALID_REQUEST"
    # Proposing the ISR it already has changes nothing and succeeds.
    assert partition_error(propose(state.leader_epoch, state.partition_epoch, state.isr)) == "ERROR_CODE_NONE"
    assert read_zookeeper(cluster, "isr").states[0].zk_version == current.zk_version


def test_the_controller_reports_partition_counts(cluster):
    from replog.dev.processes import scrape_metric

    (active,) = cluster.active_controllers()
    metrics = cluster.metrics_address("controller", active)
    total = sum(len(t.partitions) for t in metadata(cluster).topics)
    assert wait_for(lambda: scrape_metric(metrics, "replog_global_partition_count") == total, 5,
                    f"replog_global_partition_count to be {total}")
    assert scrape_metric(metrics, "replog_offline_partitions") == 0.0
