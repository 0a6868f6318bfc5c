"""ControlledShutdown, the controller's side: a broker about to stop hands its leaderships and ISR
places over at once; until it is gone it is neither elected nor let back into an ISR. On a real
cluster, then in-process for the figure: a broker leading 1,000 partitions."""

import asyncio
import threading
import time
import uuid

import grpc
import pytest

from replog.api.common.v1 import common_pb2
from replog.api.controller.v1 import controller_pb2, controller_pb2_grpc
from replog.client import Producer
from replog.controller.driver import Controller, ControllerSettings
from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition
from replog.core.topic_plan import NewTopic, TopicDefaults
from replog.dev.processes import free_port
from replog.zk.store import BrokerRegistration, MetadataStore
from tests.integration.cluster import wait_for
from tests.integration.test_admin_support import (
    FAILOVER_S_MAX,
    bootstrap,
    broker_epoch,
    in_zookeeper,
    metadata,
    partitions,
)

pytestmark = pytest.mark.slow

LEADERSHIPS = 1000
SHUTDOWN_S_MAX = 1.0
SHUTDOWN_WAIT_S = 5.0  # well under the session timeout: a controlled shutdown does not wait for it
# How long a leader's controlled shutdown may hold an acks=all write: a retry after the leader
# answers NOT_LEADER_OR_FOLLOWER, far below shutdown.grace.ms (5 s), which it once took.
SHUTDOWN_HOLD_S_MAX = 2.0


def call_controller(cluster, method: str, request):
    endpoint = metadata(cluster).controller
    with grpc.insecure_channel(f"{endpoint.host}:{endpoint.port}") as channel:
        return getattr(controller_pb2_grpc.ControllerServiceStub(channel), method)(request, timeout=10)


def test_a_broker_shutting_down_hands_over_its_leaderships_and_is_kept_out_until_it_returns(cluster):
    cluster("topics", "create", "draining", "--partitions", "6", "--replication-factor", "3")
    cluster("topics", "create", "pinned", "--replica-assignment", "1")
    led = [p for p, m in partitions(cluster, "draining").items() if m.leader == 1]
    assert led
    epoch = broker_epoch(cluster, 1)

    stale = call_controller(cluster, "ControlledShutdown",
                            controller_pb2.ControlledShutdownRequest(broker_id=1, broker_epoch=epoch - 1))
    assert stale.error_code == common_pb2.ERROR_CODE_STALE_BROKER_EPOCH

    response = call_controller(cluster, "ControlledShutdown",
                               controller_pb2.ControlledShutdownRequest(broker_id=1, broker_epoch=epoch))
    assert response.error_code == common_pb2.ERROR_CODE_NONE, response.error_message
    assert [(p.topic, p.partition) for p in response.remaining_partitions] == [("pinned", 0)], \
        "its only replica cannot be handed over"
    wait_for(lambda: all(m.leader in (2, 3) and sorted(m.isr) == [2, 3]
                         for m in partitions(cluster, "draining").values()), 5,
             "the metadata service to show broker 1 out of every leadership and ISR")
    assert partitions(cluster, "pinned")[0].leader == 1

    # The new leaders see broker 1 still fetching, but it may not join their ISR again.
    partition = led[0]
    state = in_zookeeper(cluster, lambda store: store.read_partition_state(TopicPartition("draining", partition)))
    leader = state.state.leader
    rejoin = call_controller(cluster, "AlterPartition", controller_pb2.AlterPartitionRequest(
        broker_id=leader, broker_epoch=broker_epoch(cluster, leader), partitions=[
            controller_pb2.AlterPartitionProposal(topic="draining", partition=partition,
                                                  leader_epoch=state.state.leader_epoch,
                                                  partition_epoch=state.state.partition_epoch,
                                                  new_isr_with_epochs=[
                                                      *(controller_pb2.IsrMember(broker_id=b, broker_epoch=-1)
                                                        for b in state.state.isr),
                                                      controller_pb2.IsrMember(broker_id=1, broker_epoch=epoch)])]))
    assert rejoin.partitions[0].error_code == common_pb2.ERROR_CODE_INELIGIBLE_REPLICA
    assert "controlled shutdown" in rejoin.partitions[0].error_message
    preferred = call_controller(cluster, "ElectLeaders", controller_pb2.ElectLeadersRequest(
        election_type=controller_pb2.ELECTION_TYPE_PREFERRED,
        topic_partitions=[common_pb2.TopicPartitions(topic="draining", partitions=[partition])]))
    assert preferred.results[0].error_code == common_pb2.ERROR_CODE_PREFERRED_LEADER_NOT_AVAILABLE

    # Once it has gone and registered again, it is an ordinary broker.
    cluster.signal("broker", 1, "KILL")
    wait_for(lambda: partitions(cluster, "pinned")[0].leader == -1, FAILOVER_S_MAX, "broker 1's session to end")
    cluster("dev", "start", "broker", "1")
    wait_for(lambda: all(1 in m.isr for m in partitions(cluster, "draining").values()), 30,
             "broker 1 to rejoin every ISR after its restart")


def test_a_broker_stopped_again_soon_after_its_restart_hands_over_every_leadership_again(new_cluster):
    """A rolling restart that comes round to a broker twice: its second controlled shutdown must
    find it an ordinary broker again (out of the shutting-down set, back in the ISRs)."""
    new_cluster.up_sharing_zookeeper("--brokers", "3", "--controllers", "1")
    new_cluster("topics", "create", "rolling", "--partitions", "30", "--replication-factor", "3")
    preferred = {p for p, m in partitions(new_cluster, "rolling").items() if m.replicas[0] == 2}
    for round_ in (1, 2):
        wait_for(lambda: {p for p, m in partitions(new_cluster, "rolling").items() if m.leader == 2} == preferred
                 and all(sorted(m.isr) == [1, 2, 3] for m in partitions(new_cluster, "rolling").values()),
                 30, f"broker 2 to lead its preferred partitions with full ISRs (round {round_})")
        new_cluster.signal("broker", 2, "TERM")
        wait_for(lambda: all(m.leader not in (2, -1) and 2 not in m.isr
                             for m in partitions(new_cluster, "rolling").values()), SHUTDOWN_WAIT_S,
                 f"broker 2's controlled shutdown to move every leadership and ISR place (round {round_})")
        wait_for(lambda: not next(b for b in new_cluster.status()["brokers"] if b["id"] == 2)["alive"], 30,
                 "broker 2 to exit")
        new_cluster("dev", "start", "broker", "2")
        wait_for(lambda: all(2 in m.isr for m in partitions(new_cluster, "rolling").values()), 30,
                 f"broker 2 to rejoin every ISR after its restart (round {round_})")
        new_cluster("leader-election", "--election-type", "preferred", "--all-topic-partitions")
    assert "still leading" not in new_cluster.log_text("broker", 2)


def test_a_broker_leading_a_thousand_partitions_is_drained_in_well_under_a_second(cluster):
    """In-process: the controller against the cluster's ZooKeeper, the brokers only registrations."""
    connect = f"{cluster.state()['zookeeper']['address']}/shutdown-{uuid.uuid4().hex[:8]}"

    async def scenario() -> tuple[float, list[TopicPartition], int]:
        own = MetadataStore(connect, session_timeout_ms=6000, connection_timeout_ms=5000)
        brokers = MetadataStore(connect, session_timeout_ms=6000, connection_timeout_ms=5000)
        await own.start()
        await brokers.start()
        epochs = {}
        for broker in (1, 2, 3):
            epochs[broker] = await brokers.register_broker(
                BrokerRegistration(broker, "127.0.0.1", free_port("127.0.0.1"), None, 0, 0), wait_s=1)
        controller = Controller(own, ControllerSettings(9, TopicDefaults(1, 1), 1.0, 1 << 20), on_fenced=print)
        controller.start()
        controller.activate(await own.elect_controller(9, "127.0.0.1", 1))
        try:
            wide = NewTopic("wide", assignments=tuple((p, (1, 2, 3)) for p in range(LEADERSHIPS)))
            while (outcome := (await controller.topics.create_topics([wide], validate_only=False))[0]).error \
                    == ErrorCode.NOT_CONTROLLER:
                await asyncio.sleep(0.05)
            assert outcome.error == ErrorCode.NONE, outcome.message
            started = time.perf_counter()
            rejection, remaining = await controller.leadership.controlled_shutdown(1, epochs[1])
            elapsed = time.perf_counter() - started
            assert rejection is None
            led_by_2 = sum(1 for v in (await own.read_topic("wide")).states.values()
                           if v.state.leader == 2 and v.state.isr == (2, 3))
            return elapsed, remaining, led_by_2
        finally:
            await controller.stop()
            await own.stop()
            await brokers.stop()

    elapsed, remaining, moved = asyncio.run(scenario())
    print(f"controlled shutdown of a broker leading {LEADERSHIPS} partitions: {elapsed * 1000:.0f} ms")
    assert remaining == [] and moved == LEADERSHIPS
    assert elapsed < SHUTDOWN_S_MAX


def test_acks_all_producers_wait_only_briefly_while_their_leader_shuts_down(cluster):
    """The leader's own LeaderAndIsr can come after the controller's answer to its ControlledShutdown;
    producers it still held were then answered only when its server stopped, after shutdown.grace.ms."""
    cluster("topics", "create", "rolled", "--partitions", "1", "--replication-factor", "3",
            "--config", "min.insync.replicas=2")
    leader = partitions(cluster, "rolled")[0].leader
    waits: list[tuple[float, float | None]] = []  # (sent at, seconds to its acknowledgement; None: failed)
    stop = threading.Event()

    def produce() -> None:
        with Producer(bootstrap(cluster), acks="all", linger_ms=0) as producer:
            while not stop.is_set():
                sent_at = time.monotonic()
                producer.send("rolled", b"r", partition=0).add_done_callback(
                    lambda future, sent_at=sent_at: waits.append(
                        (sent_at, None if future.exception() else time.monotonic() - sent_at)))
                time.sleep(0.002)

    sender = threading.Thread(target=produce, daemon=True)
    sender.start()
    try:
        wait_for(lambda: len(waits) > 100, 10, "the producer to get going")
        killed = time.monotonic()
        cluster.signal("broker", leader, "TERM")
        wait_for(lambda: not next(b for b in cluster.status()["brokers"] if b["id"] == leader)["alive"], 30,
                 f"broker {leader} to exit")
    finally:
        stop.set()
        sender.join(30)
        cluster("dev", "start", "broker", str(leader))
    after = [wait for sent_at, wait in waits if sent_at >= killed]
    assert after and None not in after, "every record is acknowledged"
    assert max(after) < SHUTDOWN_HOLD_S_MAX, f"a record waited {max(after):.2f} s for its acknowledgement"
    wait_for(lambda: sorted(partitions(cluster, "rolled")[0].isr) == [1, 2, 3], 30,
             f"broker {leader} to rejoin the ISR")
