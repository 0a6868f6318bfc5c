"""Controller writes are fenced by the controller epoch, through replog.zk against a real ZooKeeper.

Each test works in its own chroot of the cluster's ZooKeeper, so it can elect
controllers of its own without disturbing the cluster's.
"""

import asyncio
import uuid

import pytest

from replog.core.topic_partition import TopicPartition
from replog.zk.records import LeaderAndIsr, TopicAssignment
from replog.zk.store import MULTI_OPS_MAX, ControllerFencedError, MetadataStore, StateWrite, TopicExistsError

pytestmark = pytest.mark.slow


def run(zookeeper: str, sessions: int, scenario) -> None:
    """Run scenario with this many ZooKeeper sessions on a fresh chroot of the cluster's ZooKeeper."""
    chroot = f"/fencing-{uuid.uuid4().hex[:8]}"

    async def main() -> None:
        stores = [MetadataStore(zookeeper + chroot, session_timeout_ms=6000, connection_timeout_ms=5000)
                  for _ in range(sessions)]
        for store in stores:
            await store.start()
        try:
            await scenario(*stores)
        finally:
            await asyncio.gather(*(store.stop() for store in stores))

    asyncio.run(main())


def new_topic(replicas=(1, 2)):
    """Arguments of create_topic after the lease and name: assignment, config, states."""
    assignment = TopicAssignment(uuid.uuid4().hex, {0: replicas, 1: replicas})
    states = {p: LeaderAndIsr(replicas[0], 0, replicas, 1, 0) for p in assignment.partitions}
    return assignment, {}, states


def test_a_controller_that_lost_its_lease_cannot_write(zookeeper):
    async def scenario(old: MetadataStore, new: MetadataStore) -> None:
        old_lease = await old.elect_controller(1, "127.0.0.1", 1)
        assert old_lease is not None
        assert await new.elect_controller(2, "127.0.0.1", 2) is None, "only one controller at a time"
        await old.create_topic(old_lease, "orders", *new_topic())

        # The old controller loses /controller (as when its session expires) and another wins.
        await old.resign_controller(old_lease)
        new_lease = await new.elect_controller(2, "127.0.0.1", 2)
        assert new_lease is not None and new_lease.epoch == old_lease.epoch + 1

        stale = StateWrite(TopicPartition("orders", 0), LeaderAndIsr(2, 1, (2,), old_lease.epoch, 1), 0)
        with pytest.raises(ControllerFencedError):
            await old.write_partition_states(old_lease, [stale])
        with pytest.raises(ControllerFencedError):
            await old.create_topic(old_lease, "late", *new_topic())
        assert (await new.read_partition_state(TopicPartition("orders", 0))).state.leader == 1
        assert await new.read_topic("late") is None

        # The new lease writes.
        fresh = StateWrite(TopicPartition("orders", 0), LeaderAndIsr(2, 1, (2,), new_lease.epoch, 1), 0)
        result = await new.write_partition_states(new_lease, [fresh])
        assert result.complete and result.committed == {TopicPartition("orders", 0): 1}
        with pytest.raises(TopicExistsError):
            await new.create_topic(new_lease, "orders", *new_topic())

    run(zookeeper, 2, scenario)


def test_a_state_write_from_a_stale_version_is_a_conflict_and_its_multi_is_not_applied(zookeeper):
    async def scenario(store: MetadataStore) -> None:
        lease = await store.elect_controller(1, "127.0.0.1", 1)
        await store.create_topic(lease, "orders", *new_topic((1, 2, 3)))
        p0, p1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
        shrunk = LeaderAndIsr(1, 0, (1, 2), lease.epoch, 1)
        result = await store.write_partition_states(lease, [StateWrite(p0, shrunk, 0), StateWrite(p1, shrunk, 5)])
        assert result.conflicts == {p1} and result.committed == {}
        assert (await store.read_partition_state(p0)).zk_version == 0, "the whole multi was refused"

        result = await store.write_partition_states(lease, [StateWrite(p0, shrunk, 0), StateWrite(p1, shrunk, 0)])
        assert result.committed == {p0: 1, p1: 1}
        snapshot = await store.read_topic("orders")
        assert {p: (v.state, v.zk_version) for p, v in snapshot.states.items()} == {0: (shrunk, 1), 1: (shrunk, 1)}

    run(zookeeper, 1, scenario)


def test_a_topic_is_written_whole(zookeeper):
    async def scenario(store: MetadataStore) -> None:
        lease = await store.elect_controller(1, "127.0.0.1", 1)
        assignment, _, states = new_topic()
        await store.create_topic(lease, "whole", assignment, {"retention.ms": "1000"}, states)
        snapshot = await store.read_topic("whole")
        assert snapshot.assignment == assignment
        assert snapshot.config == {"retention.ms": "1000"}
        assert {p: v.state for p, v in snapshot.states.items()} == states
        assert await store.topic_names() == ["whole"]

    run(zookeeper, 1, scenario)


def test_the_states_of_a_write_are_notified_together_and_a_refused_write_notifies_nothing(zookeeper):
    async def scenario(store: MetadataStore, reader: MetadataStore) -> None:
        lease = await store.elect_controller(1, "127.0.0.1", 1)
        await store.create_topic(lease, "orders", *new_topic((1, 2, 3)))
        notified: asyncio.Queue = asyncio.Queue()
        reader.watch_state_changes(notified.put_nowait)
        assert (await asyncio.wait_for(notified.get(), 5)).value.states == {}, "no state was changed yet"
        p0, p1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
        shrunk = LeaderAndIsr(1, 0, (1, 2), lease.epoch, 1)
        refused = await store.write_partition_states(lease, [StateWrite(p0, shrunk, 0), StateWrite(p1, shrunk, 5)])
        assert refused.conflicts == {p1}
        await store.write_partition_states(lease, [StateWrite(p0, shrunk, 0), StateWrite(p1, shrunk, 0)])
        changes = await asyncio.wait_for(notified.get(), 5)
        assert changes.value.states == {p0: shrunk, p1: shrunk}

    run(zookeeper, 2, scenario)


def test_the_last_notification_of_a_write_in_several_multis_holds_the_multi_before_it_too(zookeeper):
    async def scenario(store: MetadataStore, reader: MetadataStore) -> None:
        lease = await store.elect_controller(1, "127.0.0.1", 1)
        count = MULTI_OPS_MAX  # one multi holds fewer states than that
        assignment = TopicAssignment(uuid.uuid4().hex, {p: (1, 2) for p in range(count)})
        await store.create_topic(lease, "wide", assignment, {}, {p: LeaderAndIsr(1, 0, (1, 2), 1, 0)
                                                                 for p in range(count)})
        moved = LeaderAndIsr(2, 1, (2,), lease.epoch, 1)
        writes = [StateWrite(TopicPartition("wide", p), moved, 0) for p in range(count)]
        assert len((await store.write_partition_states(lease, writes)).committed) == count
        latest: asyncio.Queue = asyncio.Queue()
        reader.watch_state_changes(latest.put_nowait)
        changes = await asyncio.wait_for(latest.get(), 5)
        assert changes.value.states == {write.partition: moved for write in writes}

    run(zookeeper, 2, scenario)
