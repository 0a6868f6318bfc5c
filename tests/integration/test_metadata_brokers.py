"""The metadata service in-process against a real ZooKeeper: partition states never run ahead of
the live brokers they were decided on.

The controller's notification of new states and the service's watch of /brokers/ids travel on
different ZooKeeper sessions, so the states of an election may arrive first. Kafka's
UpdateMetadata carries both at once; here the service confirms the live brokers before it
publishes states from a notification.
"""

import asyncio
import uuid

import pytest

from replog.core.topic_partition import TopicPartition
from replog.dev.processes import free_port
from replog.metadata.service import MetadataProcess
from replog.zk.records import LeaderAndIsr, TopicAssignment
from replog.zk.store import BrokerRegistration, MetadataStore, StateWrite

pytestmark = pytest.mark.slow

WAIT_S = 10.0
TOPIC = "ledger"


async def until(condition, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"no {what} within {WAIT_S:g} s")
        await asyncio.sleep(0.01)


def store(connect: str) -> MetadataStore:
    return MetadataStore(connect, session_timeout_ms=6000, connection_timeout_ms=5000)


async def register(connect: str, broker_id: int) -> MetadataStore:
    """A session of its own holding broker_id's registration: stopping it is the broker's death."""
    session = store(connect)
    await session.start()
    await session.register_broker(BrokerRegistration(broker_id, "127.0.0.1", free_port("127.0.0.1"), None, 0, 0),
                                  wait_s=1)
    return session


def test_states_from_an_election_are_published_with_the_dead_broker_gone(zookeeper):
    connect = f"{zookeeper}/metadata-{uuid.uuid4().hex[:8]}"

    async def main() -> None:
        controller = store(connect)
        await controller.start()
        brokers = {broker_id: await register(connect, broker_id) for broker_id in (1, 2, 3)}
        lease = await controller.elect_controller(7, "127.0.0.1", 1)
        led_by_3 = LeaderAndIsr(3, 0, (3, 1), lease.epoch, 0)
        await controller.create_topic(lease, TOPIC, TopicAssignment("id-1", {0: (3, 1)}), {}, {0: led_by_3})
        process = MetadataProcess({"zookeeper.connect": connect, "zookeeper.session.timeout.ms": 6000,
                                   "zookeeper.connection.timeout.ms": 5000})
        await process.start()
        try:
            await until(lambda: TOPIC in process.image.topics and process.image.live_broker_ids == {1, 2, 3},
                        "first image")
            # The service's own watch of /brokers/ids lags: it will not hear of broker 3's death.
            process._refresh.request = lambda: None
            await brokers.pop(3).stop()
            (current,) = [s for s in (await controller.read_topic(TOPIC)).states.values()]
            elected = LeaderAndIsr(1, 1, (1,), lease.epoch, 1)
            await controller.write_partition_states(
                lease, [StateWrite(TopicPartition(TOPIC, 0), elected, current.zk_version)])

            def leader() -> int:
                return process.image.topics[TOPIC].partitions[0].leader

            await until(lambda: leader() == 1, "image with the new leader")
            assert process.image.live_broker_ids == {1, 2}
        finally:
            await process.stop()
            for session in brokers.values():
                await session.stop()
            await controller.stop()

    asyncio.run(main())
