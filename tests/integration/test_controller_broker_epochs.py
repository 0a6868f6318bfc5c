"""KIP-903 on real processes: a follower restarted with a torn log tail is not let back into the ISR
by a proposal naming its previous incarnation; it returns once its log matches the leader's.

The leader is stopped (SIGSTOP) while the follower restarts, so the follower cannot catch up
meanwhile; the cluster's ZooKeeper session timeout is long enough for the leader to keep its
session through the pause.
"""

import os
import random

import grpc
import pytest

from replog.api.common.v1 import common_pb2
from replog.api.controller.v1 import controller_pb2, controller_pb2_grpc
from replog.client import Producer
from replog.core.topic_partition import TopicPartition
from replog.zk.store import MetadataStore, VersionedState
from tests.integration.cluster import LocalCluster, started, wait_for
from tests.integration.test_admin_support import bootstrap, broker_epoch, in_zookeeper
from tests.replicas import batches, tear_last_segment

pytestmark = pytest.mark.slow

SESSION_TIMEOUT_MS = 12_000
DEATH_S_MAX = SESSION_TIMEOUT_MS / 1000 + 10
CATCH_UP_S_MAX = 20
TOPIC = "epochs"
PARTITION = TopicPartition(TOPIC, 0)
LEADER, OTHER, FOLLOWER = 1, 2, 3
RECORDS = 30


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from started(tmp_path_factory, "epochs", "--brokers", "3", "--controllers", "1",
                       "--config", f"zookeeper.session.timeout.ms={SESSION_TIMEOUT_MS}")


def partition_dir(cluster: LocalCluster, broker: int) -> str:
    (found,) = [b for b in cluster.status()["brokers"] if b["id"] == broker]
    return os.path.join(found["data_dir"], f"{TOPIC}-0")


def partition_state(cluster: LocalCluster) -> VersionedState:
    async def read(store: MetadataStore) -> VersionedState:
        return await store.read_partition_state(PARTITION)

    return in_zookeeper(cluster, read)


def alter_partition(cluster: LocalCluster, request: controller_pb2.AlterPartitionRequest):
    (active,) = [c for c in cluster.status()["controllers"] if c["active"]]
    with grpc.insecure_channel(active["address"]) as channel:
        return controller_pb2_grpc.ControllerServiceStub(channel).AlterPartition(request, timeout=10)


def test_a_follower_with_a_torn_tail_is_refused_under_its_old_epoch_and_rejoins_once_its_log_matches(cluster):
    cluster("topics", "create", TOPIC, "--replica-assignment", f"{LEADER}:{OTHER}:{FOLLOWER}",
            "--config", "min.insync.replicas=2")
    with Producer(bootstrap(cluster), acks="all", linger_ms=0) as producer:
        for n in range(RECORDS):  # one batch each, so that a torn tail loses whole batches
            producer.send(TOPIC, b"r%d" % n, partition=0).result(timeout=10)
    leader_log = batches(partition_dir(cluster, LEADER))
    wait_for(lambda: batches(partition_dir(cluster, FOLLOWER)) == leader_log, 10, "the follower to hold every batch")
    old_epoch = broker_epoch(cluster, FOLLOWER)

    cluster.signal("broker", FOLLOWER, "KILL")
    tear_last_segment(partition_dir(cluster, FOLLOWER), random.Random(903))
    assert len(batches(partition_dir(cluster, FOLLOWER))) < len(leader_log), "the scenario's premise: a torn tail"
    wait_for(lambda: FOLLOWER not in partition_state(cluster).state.isr, DEATH_S_MAX,
             f"broker {FOLLOWER}'s session to end and the ISR to lose it")

    cluster.signal("broker", LEADER, "STOP")
    try:
        cluster("dev", "start", "broker", str(FOLLOWER))
        new_epoch = broker_epoch(cluster, FOLLOWER)
        assert new_epoch > old_epoch
        before = partition_state(cluster)
        assert before.state.leader == LEADER
        # The leader proposes the follower with the broker epoch of the incarnation it saw fetching.
        response = alter_partition(cluster, controller_pb2.AlterPartitionRequest(
            broker_id=LEADER, broker_epoch=broker_epoch(cluster, LEADER), partitions=[
                controller_pb2.AlterPartitionProposal(
                    topic=TOPIC, partition=0, leader_epoch=before.state.leader_epoch,
                    partition_epoch=before.state.partition_epoch, new_isr_with_epochs=[
                        controller_pb2.IsrMember(broker_id=LEADER, broker_epoch=-1),
                        controller_pb2.IsrMember(broker_id=OTHER, broker_epoch=broker_epoch(cluster, OTHER)),
                        controller_pb2.IsrMember(broker_id=FOLLOWER, broker_epoch=old_epoch)])]))
        assert response.error_code == common_pb2.ERROR_CODE_NONE, response.error_message
        (result,) = response.partitions
        assert result.error_code == common_pb2.ERROR_CODE_INELIGIBLE_REPLICA, result.error_message
        assert result.error_message == (f"broker {FOLLOWER} was proposed with broker epoch {old_epoch}, but its "
                                        f"current registration has broker epoch {new_epoch}")
        after = partition_state(cluster)
        assert FOLLOWER not in after.state.isr and after.zk_version == before.zk_version
        assert batches(partition_dir(cluster, FOLLOWER)) != leader_log, "it could not catch up meanwhile"
    finally:
        cluster.signal("broker", LEADER, "CONT")

    # Back in the ISR only once its log matches the leader's, batch for batch.
    wait_for(lambda: FOLLOWER in partition_state(cluster).state.isr, CATCH_UP_S_MAX,
             f"broker {FOLLOWER} to rejoin the ISR", interval_s=0.02)
    assert batches(partition_dir(cluster, FOLLOWER)) == leader_log == batches(partition_dir(cluster, LEADER))
