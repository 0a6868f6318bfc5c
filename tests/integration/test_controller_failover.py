"""Broker and controller failures on a real cluster: leaderships move, epochs grow, state survives."""

import threading
import time

import grpc
import pytest

from replog.api.common.v1 import common_pb2
from replog.api.controller.v1 import controller_pb2, controller_pb2_grpc
from replog.api.metadata.v1 import metadata_pb2, metadata_pb2_grpc
from replog.dev.processes import scrape_metric
from tests.integration.cluster import wait_for

pytestmark = pytest.mark.slow

SESSION_TIMEOUT_S = 6.0  # replog dev's zookeeper.session.timeout.ms
FAILOVER_S_MAX = SESSION_TIMEOUT_S + 5


def metadata(cluster, *topics: str) -> metadata_pb2.MetadataResponse:
    with grpc.insecure_channel(cluster.status()["metadata"][0]["address"]) as channel:
        return metadata_pb2_grpc.MetadataServiceStub(channel).Metadata(
            metadata_pb2.MetadataRequest(topics=topics), timeout=5)


def create(cluster, topic: controller_pb2.CreatableTopic) -> None:
    endpoint = metadata(cluster).controller
    with grpc.insecure_channel(f"{endpoint.host}:{endpoint.port}") as channel:
        response = controller_pb2_grpc.ControllerServiceStub(channel).CreateTopics(
            controller_pb2.CreateTopicsRequest(topics=[topic]), timeout=10)
    assert response.topics[0].error_code == common_pb2.ERROR_CODE_NONE, response.topics[0].error_message
    wait_for(lambda: partitions(cluster, topic.name), 5, f"topic {topic.name} in the metadata")


def partitions(cluster, topic: str) -> dict[int, metadata_pb2.PartitionMetadata]:
    (found,) = metadata(cluster, topic).topics
    return {p.partition: p for p in found.partitions}


def controller_metric(cluster, name: str) -> float:
    (active,) = wait_for(cluster.active_controllers, FAILOVER_S_MAX, "an active controller")
    return scrape_metric(cluster.metrics_address("controller", active), name)


class ImageWatch:
    """A WatchMetadata stream of one topic read in a thread; each image as (live brokers, leaders)."""

    def __init__(self, cluster, topic: str) -> None:
        self._channel = grpc.insecure_channel(cluster.status()["metadata"][0]["address"])
        self._call = metadata_pb2_grpc.MetadataServiceStub(self._channel).WatchMetadata(
            metadata_pb2.WatchMetadataRequest(topics=[topic]))
        self.images: list[tuple[frozenset[int], dict[int, int]]] = []
        self._thread = threading.Thread(target=self._read, args=(topic,), daemon=True)
        self._thread.start()

    def _read(self, topic: str) -> None:
        live: set[int] = set()
        leaders: dict[int, int] = {}
        try:
            for message in self._call:
                if message.full_snapshot:
                    live.clear()
                live |= {b.broker_id for b in message.changed_brokers}
                live -= set(message.removed_broker_ids)
                for changed in message.changed_topics:
                    if changed.name == topic:
                        leaders = {p.partition: p.leader for p in changed.partitions}
                self.images.append((frozenset(live), dict(leaders)))
        except grpc.RpcError:
            pass  # cancelled at the end of the test

    def close(self) -> None:
        self._call.cancel()
        self._channel.close()


def test_sigkill_of_a_broker_moves_its_leaderships_to_isr_members(cluster):
    create(cluster, controller_pb2.CreatableTopic(name="payments", num_partitions=6, replication_factor=3))
    before = partitions(cluster, "payments")
    elections_before = controller_metric(cluster, "replog_leader_elections_total")
    victim = 2
    led = {p for p, m in before.items() if m.leader == victim}
    assert len(led) == 2

    watch = ImageWatch(cluster, "payments")
    wait_for(lambda: watch.images, 5, "the WatchMetadata snapshot")
    cluster.signal("broker", victim, "KILL")
    started = time.monotonic()

    def moved():
        # offline_replicas comes from the live brokers, the leaders from the partition states: the
        # metadata service publishes the states only with the live brokers they were decided on.
        now = partitions(cluster, "payments")
        return now if all(victim not in m.isr and m.leader != victim and list(m.offline_replicas) == [victim]
                          for m in now.values()) else None

    try:
        after = wait_for(moved, FAILOVER_S_MAX, f"broker {victim}'s leaderships and ISR memberships to go")
        print(f"leaders moved {time.monotonic() - started:.2f} s after SIGKILL "
              f"(session timeout {SESSION_TIMEOUT_S:g} s)")
        for partition, now in after.items():
            was = before[partition]
            assert now.error_code == common_pb2.ERROR_CODE_NONE
            assert now.leader in was.isr and now.leader != victim
            assert sorted(now.isr) == sorted(b for b in was.isr if b != victim)
            expected_epoch = was.leader_epoch + 1 if partition in led else was.leader_epoch
            assert now.leader_epoch == expected_epoch, partition
        assert controller_metric(cluster, "replog_leader_elections_total") == elections_before + len(led)
        assert controller_metric(cluster, "replog_offline_partitions") == 0.0
        # No client ever saw the dead broker's partitions led elsewhere while it was still
        # listed as live: the states and the live brokers reach it by different watches.
        moved_while_live = [image for image in watch.images
                            if victim in image[0] and any(image[1].get(p) not in (None, -1, victim) for p in led)]
        assert moved_while_live == [], moved_while_live
    finally:
        watch.close()
        cluster("dev", "start", "broker", str(victim))  # the module's later tests need every broker
    wait_for(lambda: all(not m.offline_replicas for m in partitions(cluster, "payments").values()), 10,
             f"broker {victim} to be live again")
    assert all(m.leader != victim for m in partitions(cluster, "payments").values()), \
        "a returning broker comes back as a follower"


def test_a_partition_whose_only_replica_dies_goes_offline_and_returns_with_it(cluster):
    create(cluster, controller_pb2.CreatableTopic(
        name="single", num_partitions=-1, replication_factor=-1,
        assignments=[controller_pb2.ReplicaAssignment(partition=0, broker_ids=[3])]))
    (before,) = partitions(cluster, "single").values()
    assert before.leader == 3

    cluster.signal("broker", 3, "KILL")
    offline = wait_for(lambda: (p := partitions(cluster, "single")[0]).leader_epoch > before.leader_epoch and p,
                       FAILOVER_S_MAX, "the partition to go offline")
    assert offline.leader == -1 and offline.error_code == common_pb2.ERROR_CODE_LEADER_NOT_AVAILABLE
    assert list(offline.isr) == [3], "the last ISR member stays, so it can lead again without loss"
    assert controller_metric(cluster, "replog_offline_partitions") >= 1

    cluster("dev", "start", "broker", "3")
    back = wait_for(lambda: (p := partitions(cluster, "single")[0]).leader == 3 and p, 10,
                    "broker 3 to lead its partition again")
    assert back.leader_epoch == offline.leader_epoch + 1
    assert wait_for(lambda: controller_metric(cluster, "replog_offline_partitions") == 0.0, 5,
                    "no offline partitions")


def test_a_new_controller_takes_over_the_state_and_handles_the_next_broker_death(cluster):
    create(cluster, controller_pb2.CreatableTopic(name="ledger", num_partitions=3, replication_factor=3))
    before = partitions(cluster, "ledger")
    total = sum(len(t.partitions) for t in metadata(cluster).topics)
    (old,) = cluster.active_controllers()
    cluster.signal("controller", old, "KILL")
    (new,) = wait_for(cluster.active_controllers, FAILOVER_S_MAX, "another controller to become active")
    assert new != old
    assert wait_for(lambda: controller_metric(cluster, "replog_global_partition_count") == total, 5,
                    "the new controller to load every partition")
    assert {p: m.leader for p, m in partitions(cluster, "ledger").items()} == {p: m.leader for p, m in before.items()}

    victim = before[0].leader
    cluster.signal("broker", victim, "KILL")
    wait_for(lambda: all(m.leader not in (victim, -1) for m in partitions(cluster, "ledger").values()),
             FAILOVER_S_MAX, f"the new controller to move broker {victim}'s leaderships")
    cluster("dev", "start", "broker", str(victim))
    cluster("dev", "start", "controller", str(old))
    assert cluster.active_controllers() == [new]
