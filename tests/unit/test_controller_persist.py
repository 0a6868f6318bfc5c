"""How the controller orders the partition states it writes."""

import asyncio

from replog.controller.context import ControllerContext
from replog.controller.persist import StateWriter
from replog.core.partition_change import PartitionChange
from replog.core.topic_partition import TopicPartition
from replog.zk.records import LeaderAndIsr
from replog.zk.store import ControllerLease, StateWriteResult, VersionedState


class Store:
    """Takes every write, and keeps the order of each call's states."""

    def __init__(self) -> None:
        self.written: list[list[TopicPartition]] = []

    async def write_partition_states(self, lease, writes) -> StateWriteResult:
        self.written.append([write.partition for write in writes])
        return StateWriteResult({write.partition: write.expected_zk_version + 1 for write in writes}, frozenset())


def test_new_leaders_are_written_before_isr_changes_so_they_land_with_the_first_multi():
    store = Store()
    context = ControllerContext(ControllerLease(1, 1, 0), {})
    # Broker 3 died: partitions 0..2 (led by 1) only lose it from their ISR, 3..5 (led by 3) move to 1.
    changes = []
    for partition in range(6):
        tp = TopicPartition("orders", partition)
        leader, leader_epoch = (1, 0) if partition < 3 else (3, 0)
        before = LeaderAndIsr(leader, leader_epoch, (leader, 1, 2) if leader == 3 else (1, 2, 3), 1, 0)
        after = LeaderAndIsr(1, 0 if leader == 1 else 1, (1, 2), 1, 1)
        context.states[tp] = VersionedState(before, 0)
        changes.append(PartitionChange(tp, before.to_core((1, 2, 3)), after.to_core((1, 2, 3))))
    applied = asyncio.run(StateWriter(store).write(context, changes, None))
    assert [tp.partition for tp in store.written[0]] == [3, 4, 5, 0, 1, 2]
    assert {change.partition for change in applied} == {change.partition for change in changes}
