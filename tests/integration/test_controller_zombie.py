"""A zombie controller on a real cluster: the active controller is paused past its ZooKeeper session,
another takes over, and when the first one runs again everything it might still send is refused —
its ZooKeeper writes fail the controller-epoch check, and brokers answer STALE_CONTROLLER_EPOCH.

The stale controller's write and LeaderAndIsr are driven from the test, with its lease, through the
real ZooKeeper and broker APIs: that is exactly what a controller that missed its own demotion
would send."""

import dataclasses
import uuid

import grpc
import pytest

from replog.api.broker.v1 import broker_pb2, broker_pb2_grpc
from replog.api.common.v1 import common_pb2
from replog.core.topic_partition import TopicPartition
from replog.dev.processes import scrape_metric
from replog.zk.records import LeaderAndIsr, TopicAssignment
from replog.zk.store import ControllerFencedError, ControllerLease, StateWrite
from tests.integration.cluster import wait_for
from tests.integration.test_admin_support import FAILOVER_S_MAX, active_controller, in_zookeeper, metadata

pytestmark = pytest.mark.slow

STALE = common_pb2.ERROR_CODE_STALE_CONTROLLER_EPOCH


def leader_and_isr(address: str, request: broker_pb2.LeaderAndIsrRequest) -> broker_pb2.LeaderAndIsrResponse:
    with grpc.insecure_channel(address) as channel:
        return broker_pb2_grpc.BrokerServiceStub(channel).LeaderAndIsr(request, timeout=5)


def test_a_controller_paused_past_its_session_is_fenced_when_it_wakes(cluster):
    cluster("topics", "create", "guarded", "--partitions", "1", "--replication-factor", "3")
    tp = TopicPartition("guarded", 0)
    old = active_controller(cluster)
    epoch, epoch_zk_version = in_zookeeper(cluster, lambda store: store.read_controller_epoch())
    cluster.signal("controller", old, "STOP")
    try:
        new = wait_for(lambda: (c := metadata(cluster).controller_id) not in (-1, 0, old) and c,
                       FAILOVER_S_MAX, "the other controller to take over from the paused one")
    finally:
        cluster.signal("controller", old, "CONT")
    assert in_zookeeper(cluster, lambda store: store.read_controller_epoch())[0] == epoch + 1
    old_metrics = cluster.metrics_address("controller", old)
    wait_for(lambda: scrape_metric(old_metrics, "replog_active_controller_count") == 0.0, 15,
             f"controller {old} to notice, once running, that it is no longer active")
    assert "lost its ZooKeeper session" in cluster.log_text("controller", old)
    assert active_controller(cluster) == new

    # Its writes to ZooKeeper are refused whole.
    stale_lease = ControllerLease(old, epoch, epoch_zk_version)
    before = in_zookeeper(cluster, lambda store: store.read_partition_state(tp))
    hijack = dataclasses.replace(before.state, leader=before.state.isr[-1], leader_epoch=before.state.leader_epoch + 1,
                                 controller_epoch=epoch, partition_epoch=before.state.partition_epoch + 1)

    async def stale_writes(store):
        with pytest.raises(ControllerFencedError):
            await store.write_partition_states(stale_lease, [StateWrite(tp, hijack, before.zk_version)])
        replicas = (1, 2)
        with pytest.raises(ControllerFencedError):
            await store.create_topic(stale_lease, "zombie", TopicAssignment(uuid.uuid4().hex, {0: replicas}), {},
                                     {0: LeaderAndIsr(1, 0, replicas, epoch, 0)})
        return await store.read_partition_state(tp), await store.read_topic("zombie")

    after, zombie_topic = in_zookeeper(cluster, stale_writes)
    assert after == before and zombie_topic is None

    # Brokers refuse its requests: each has heard from the new controller, whose epoch is higher.
    for broker in cluster.state()["brokers"]:
        request = broker_pb2.LeaderAndIsrRequest(controller_id=old, controller_epoch=epoch, broker_epoch=-1)
        wait_for(lambda: leader_and_isr(broker["address"], request).error_code == STALE, 10,
                 f"broker {broker['id']} to know the new controller epoch")
        request.partition_states.add(
            topic=tp.topic, partition=tp.partition, controller_epoch=epoch, leader=hijack.leader,
            leader_epoch=hijack.leader_epoch, isr=hijack.isr, partition_epoch=hijack.partition_epoch, replicas=[1, 2, 3])
        response = leader_and_isr(broker["address"], request)
        assert response.error_code == STALE and "newer controller" in response.error_message
    now = {p.partition: p for p in metadata(cluster, tp.topic).topics[0].partitions}[0]
    assert (now.leader, now.leader_epoch) == (before.state.leader, before.state.leader_epoch)
