"""The controller driver in-process against a real ZooKeeper: a stale view, and fencing.

The brokers here are only registrations (nothing listens at their addresses):
what is checked is what the controller writes to ZooKeeper and answers.
"""

import asyncio
import uuid

import pytest

from replog.controller.driver import Controller, ControllerSettings
from replog.core.errors import ErrorCode
from replog.core.messages import AlterPartitionRequest, IsrMember
from replog.core.topic_partition import TopicPartition
from replog.core.topic_plan import NewTopic, TopicDefaults
from replog.dev.processes import free_port
from replog.zk.records import LeaderAndIsr
from replog.zk.store import BrokerRegistration, MetadataStore, StateWrite

pytestmark = pytest.mark.slow

ACTIVE_WAIT_S = 10


def run(zookeeper: str, scenario) -> None:
    """scenario(controller, lease, other, fenced): an active controller on a fresh chroot with
    three registered brokers; `other` is a second session that plays the rest of the world, and
    `fenced` collects the leases the controller reports fenced."""
    connect = f"{zookeeper}/driver-{uuid.uuid4().hex[:8]}"

    async def main() -> None:
        own = MetadataStore(connect, session_timeout_ms=6000, connection_timeout_ms=5000)
        other = MetadataStore(connect, session_timeout_ms=6000, connection_timeout_ms=5000)
        await own.start()
        await other.start()
        for broker_id in (1, 2, 3):
            registration = BrokerRegistration(broker_id, "127.0.0.1", free_port("127.0.0.1"), None, 0, 0)
            await other.register_broker(registration, wait_s=1)
        fenced = []
        controller = Controller(own, ControllerSettings(7, TopicDefaults(1, 1), 1.0, 1 << 20),
                                on_fenced=fenced.append)
        controller.start()
        lease = await own.elect_controller(7, "127.0.0.1", 1)
        controller.activate(lease)
        try:
            await asyncio.wait_for(until_active(controller), ACTIVE_WAIT_S)
            await scenario(controller, lease, other, fenced)
        finally:
            await controller.stop()
            await own.stop()
            await other.stop()

    asyncio.run(main())


def proposal(leader_epoch, partition_epoch, isr):
    """Broker 1's proposal; members already in the ISR may come without a broker epoch (-1)."""
    return AlterPartitionRequest(1, leader_epoch, partition_epoch, tuple(IsrMember(b, -1) for b in isr))


async def until_active(controller: Controller) -> None:
    while (await controller.topics.create_topics([NewTopic("probe", 1, 1)], validate_only=True))[0].error \
            == ErrorCode.NOT_CONTROLLER:
        await asyncio.sleep(0.05)


def test_a_stale_view_is_read_again_and_the_proposals_judged_again(zookeeper):
    async def scenario(controller, lease, other, _fenced):
        (created,) = await controller.topics.create_topics(
            [NewTopic("t", assignments=((0, (1, 2, 3)), (1, (1, 2, 3))))], validate_only=False)
        assert created.error == ErrorCode.NONE
        p0, p1 = TopicPartition("t", 0), TopicPartition("t", 1)
        # Someone else changes p0 behind the controller's back (its view keeps version 0).
        changed = LeaderAndIsr(1, 0, (1, 2), lease.epoch, 1)
        assert (await other.write_partition_states(lease, [StateWrite(p0, changed, 0)])).complete
        epoch = (await other.live_brokers())[1].broker_epoch

        # Both proposals go in one multi, which p0's stale version makes ZooKeeper refuse whole.
        rejection, outcomes = await controller.isr_changes.alter_partition(1, epoch, [
            (p0, proposal(0, 0, (1, 2))), (p1, proposal(0, 0, (1, 2)))])
        assert rejection is None
        by_partition = {o.partition: o for o in outcomes}
        # p0 already has that ISR (a resend, as far as anyone can tell): success, nothing written.
        assert by_partition[p0].error == ErrorCode.NONE and by_partition[p0].state == changed.to_core((1, 2, 3))
        # p1 was judged again and written in a second round.
        assert by_partition[p1].error == ErrorCode.NONE
        written = LeaderAndIsr(1, 0, (1, 2), lease.epoch, 1)
        assert by_partition[p1].state == written.to_core((1, 2, 3))
        assert (await other.read_partition_state(p1)).state == written

        rejection, (stale,) = await controller.isr_changes.alter_partition(1, epoch, [(p0, proposal(0, 0, (1,)))])
        assert stale.error == ErrorCode.INVALID_UPDATE_VERSION and stale.state == changed.to_core((1, 2, 3))

        rejection, _ = await controller.isr_changes.alter_partition(1, epoch - 1, [(p0, proposal(0, 1, (1,)))])
        assert rejection.error == ErrorCode.STALE_BROKER_EPOCH

    run(zookeeper, scenario)


def test_a_fenced_controller_stops_acting_and_answers_not_controller(zookeeper):
    async def scenario(controller, lease, other, fenced):
        # Another controller wins (as after this one's session expired).
        await other.resign_controller(lease)
        assert await other.elect_controller(8, "127.0.0.1", 2) is not None

        (outcome,) = await controller.topics.create_topics([NewTopic("late", 1, 1)], validate_only=False)
        assert outcome.error == ErrorCode.NOT_CONTROLLER and "fenced" in outcome.message
        assert fenced == [lease]
        assert await other.read_topic("late") is None
        rejection, _ = await controller.isr_changes.alter_partition(1, 0, [])
        assert rejection.error == ErrorCode.NOT_CONTROLLER

    run(zookeeper, scenario)
