"""Controller failures in the middle of admin work, on a real cluster: a topic being created is
complete or absent afterwards, never half-made; a deletion the dead controller started is finished
by the next one."""

import os
import signal
import threading

import grpc
import pytest

from replog.api.common.v1 import common_pb2
from replog.api.controller.v1 import controller_pb2, controller_pb2_grpc
from replog.client import Admin, AdminError
from replog.core.errors import ErrorCode
from replog.zk import paths
from tests.integration.cluster import wait_for
from tests.integration.test_admin_support import (
    FAILOVER_S_MAX,
    active_controller,
    bootstrap,
    in_zookeeper,
    metadata,
    partitions,
)

pytestmark = pytest.mark.slow

PARTITIONS_PER_TOPIC = 100  # a multi of 200 znodes: most of the creator's time is spent inside one


def fail_over(cluster, signal: str = "KILL") -> tuple[int, int]:
    """Kill the active controller; (old id, new id) once the other one is active."""
    old = active_controller(cluster)
    cluster.signal("controller", old, signal)
    new = wait_for(lambda: (c := metadata(cluster).controller_id) not in (-1, 0, old) and c, FAILOVER_S_MAX,
                   "the other controller to take over")
    return old, new


def test_a_controller_killed_while_creating_topics_leaves_each_complete_or_absent(cluster):
    names = [f"burst-{i}" for i in range(20)]
    endpoint = metadata(cluster).controller
    answers: dict[str, str] = {}
    in_flight: list[str] = []

    def create_one_by_one() -> None:
        with grpc.insecure_channel(f"{endpoint.host}:{endpoint.port}") as channel:
            stub = controller_pb2_grpc.ControllerServiceStub(channel)
            for name in names:
                in_flight.append(name)
                try:
                    response = stub.CreateTopics(controller_pb2.CreateTopicsRequest(topics=[
                        controller_pb2.CreatableTopic(name=name, num_partitions=PARTITIONS_PER_TOPIC,
                                                      replication_factor=1)]), timeout=30)
                    answers[name] = common_pb2.ErrorCode.Name(response.topics[0].error_code)
                except grpc.RpcError as error:
                    answers[name] = error.code().name
                    return  # the controller is gone

    old = active_controller(cluster)
    creator = threading.Thread(target=create_one_by_one)
    creator.start()
    wait_for(lambda: len(in_flight) >= 3, 60, "a few creations", interval_s=0.001)
    os.kill(next(c["pid"] for c in cluster.state()["controllers"] if c["id"] == old), signal.SIGKILL)
    creator.join(60)
    wait_for(lambda: metadata(cluster).controller_id not in (-1, 0, old), FAILOVER_S_MAX,
             "the other controller to take over")
    interrupted = in_flight[-1]
    assert answers[interrupted] in ("UNAVAILABLE", "CANCELLED", "ERROR_CODE_NONE"), answers

    async def read(store):
        return {name: await store.read_topic(name) for name in names}, {
            name: await store.exists(paths.topic_config(name)) for name in names}

    snapshots, configs = in_zookeeper(cluster, read)
    created = [name for name, snapshot in snapshots.items() if snapshot is not None]
    assert created, "some topics were created before the kill"
    assert all(answers.get(name) == "ERROR_CODE_NONE" for name in created if name != interrupted)
    for name in created:
        snapshot = snapshots[name]
        assert len(snapshot.assignment.partitions) == PARTITIONS_PER_TOPIC
        assert sorted(snapshot.states) == list(range(PARTITIONS_PER_TOPIC)), f"{name} is half-made in ZooKeeper"
        assert configs[name]
        wait_for(lambda: len(partitions(cluster, name)) == PARTITIONS_PER_TOPIC, 30, f"{name} in the metadata")
    for name in set(names) - set(created):
        assert not configs[name] and not partitions(cluster, name), f"{name} is half-made"
    print(f"killed controller {old} while creating {interrupted!r} ({answers[interrupted]}): "
          f"{'created whole' if interrupted in created else 'absent'}; {len(created)} topics created")
    cluster("dev", "start", "controller", str(old))
    with Admin(bootstrap(cluster)) as admin:
        admin.delete_topics(created)  # so that no broker has to stop while the sole replica of hundreds


def test_a_deletion_left_unfinished_by_a_dead_controller_is_finished_by_the_next(cluster):
    cluster("topics", "create", "leftover", "--replica-assignment", "1:3,3:1")
    cluster.signal("broker", 3, "TERM")
    with Admin(bootstrap(cluster)) as admin:
        admin.delete_topics(["leftover"], timeout_ms=0)  # answered once marked
        with pytest.raises(AdminError) as pending:
            admin.delete_topics(["leftover"], timeout_ms=500)
    assert pending.value.error_code is ErrorCode.REQUEST_TIMED_OUT and "3]" in str(pending.value)
    broker_1 = next(b for b in cluster.status()["brokers"] if b["id"] == 1)
    wait_for(lambda: not any(d.startswith("leftover-") for d in os.listdir(broker_1["data_dir"])), 10,
             "broker 1 to delete its replicas")

    async def left(store):
        return [path for path in (paths.topic("leftover"), paths.topic_config("leftover"),
                                  paths.topic_deletion("leftover")) if await store.exists(path)]

    assert in_zookeeper(cluster, left) == [paths.topic("leftover"), paths.topic_config("leftover"),
                                           paths.topic_deletion("leftover")], "marked, not yet removed"
    wait_for(lambda: not partitions(cluster, "leftover"), 10, "the metadata service to stop serving the topic")
    old, new = fail_over(cluster)
    cluster("dev", "start", "broker", "3")
    wait_for(lambda: in_zookeeper(cluster, left) == [], 30,
             f"controller {new} to finish the deletion once broker 3 is back")
    cluster("dev", "start", "controller", str(old))
    cluster("topics", "create", "leftover", "--partitions", "1", "--replication-factor", "3")
