"""AlterPartitionReassignments and ListPartitionReassignments at the active controller (KIP-455).

The steps and the replica sets are `replog.core.reassignment`'s. Each step of a
topic's partitions is one ZooKeeper multi: the topic znode (replicas,
adding_replicas, removing_replicas) together with the partition states it
changes, so the replica sets and the leadership never disagree, and a
controller that takes over reads where the reassignment stands. After each
write: LeaderAndIsr to every replica that remains, StopReplica with
delete_partition=true to every replica that left, UpdateMetadata to all.

A reassignment advances when a leader reports an ISR change (AlterPartition),
when brokers come or go, and when a controller takes over.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from replog.controller.context import ControllerContext
from replog.controller.metrics import count_elections
from replog.core.errors import ErrorCode
from replog.core.outcome import SUCCESS, Outcome, Rejection
from replog.core.partition_change import PartitionChange, change_replicas
from replog.core.reassignment import (
    OngoingReassignment,
    ReplicaSets,
    is_complete,
    plan_cancel,
    plan_reassignment,
)
from replog.core.topic_partition import TopicPartition
from replog.zk.records import TopicAssignment
from replog.zk.store import MULTI_OPS_MAX

if TYPE_CHECKING:
    from replog.controller.driver import Controller

log = logging.getLogger("replog.controller")

# Partitions of one topic changed in one multi (with the epoch check, the topic znode and the
# partition state notification).
PARTITIONS_PER_STEP_MAX = MULTI_OPS_MAX - 3


class Reassignments:
    def __init__(self, controller: Controller) -> None:
        self._controller = controller

    async def alter(
        self, requests: Sequence[tuple[TopicPartition, tuple[int, ...]]]
    ) -> tuple[Rejection | None, list[tuple[TopicPartition, Outcome]]]:
        """Start, redirect or (with no replicas) cancel reassignments; one outcome per partition."""

        def failed(error: ErrorCode, message: str) -> tuple[Rejection | None, list[tuple[TopicPartition, Outcome]]]:
            return Rejection(error, message), []

        async def alter(context: ControllerContext) -> tuple[Rejection | None, list[tuple[TopicPartition, Outcome]]]:
            return None, await self._alter(context, requests)

        return await self._controller.answer("alter partition reassignments", alter, failed)

    async def _alter(self, context: ControllerContext,
                     requests: Sequence[tuple[TopicPartition, tuple[int, ...]]]) -> list[tuple[TopicPartition, Outcome]]:
        outcomes: dict[TopicPartition, Outcome] = {}
        planned: dict[TopicPartition, ReplicaSets] = {}
        seen = [partition for partition, _ in requests]
        for partition, target in requests:
            if seen.count(partition) > 1:
                outcomes[partition] = Outcome(ErrorCode.INVALID_REQUEST, f"{partition} appears more than once")
                continue
            if partition not in context.states:
                outcomes[partition] = Outcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{partition} does not exist")
                continue
            current = self._sets(context, partition)
            sets = plan_reassignment(current, target, context.brokers) if target else plan_cancel(current)
            if isinstance(sets, Rejection):
                outcomes[partition] = sets
                continue
            planned[partition] = sets
            log.info("%s: reassignment %s: replicas %s -> %s (adding %s, removing %s)", partition,
                     "to " + str(list(target)) if target else "cancelled", list(current.replicas),
                     list(sets.replicas), list(sets.adding), list(sets.removing))
        outcomes.update(await self._apply(context, planned))
        return [(partition, outcomes[partition]) for partition in dict.fromkeys(seen)]

    async def list(
        self, partitions: Sequence[TopicPartition] | None
    ) -> tuple[Rejection | None, list[OngoingReassignment]]:
        """The reassignments in progress (of these partitions, or of all)."""

        def failed(error: ErrorCode, message: str) -> tuple[Rejection | None, list[OngoingReassignment]]:
            return Rejection(error, message), []

        async def ongoing(context: ControllerContext) -> tuple[Rejection | None, list[OngoingReassignment]]:
            wanted = None if partitions is None else set(partitions)
            return None, [OngoingReassignment(tp, context.replicas(tp), context.adding(tp), context.removing(tp))
                          for tp in context.reassigning() if wanted is None or tp in wanted]

        return await self._controller.answer("list partition reassignments", ongoing, failed)

    async def advance(self, context: ControllerContext, partitions: Sequence[TopicPartition]) -> None:
        """Finish the reassignments of these partitions whose target replicas are all in the ISR."""
        finishing = {}
        for partition in partitions:
            sets = self._sets(context, partition)
            if sets.in_progress and is_complete(sets, context.states[partition].state.isr):
                finishing[partition] = ReplicaSets(sets.target)
        if finishing:
            await self._apply(context, finishing)

    @staticmethod
    def _sets(context: ControllerContext, partition: TopicPartition) -> ReplicaSets:
        return ReplicaSets(context.replicas(partition), context.adding(partition), context.removing(partition))

    async def _apply(self, context: ControllerContext,
                     planned: Mapping[TopicPartition, ReplicaSets]) -> dict[TopicPartition, Outcome]:
        """Write the planned replica sets, topic by topic, and tell the brokers."""
        outcomes: dict[TopicPartition, Outcome] = {}
        by_topic: dict[str, dict[TopicPartition, ReplicaSets]] = {}
        for partition, sets in planned.items():
            # Target replicas all in the ISR already (a reordering, a removal): finish at once.
            if sets.in_progress and is_complete(sets, context.states[partition].state.isr):
                sets = ReplicaSets(sets.target)
            by_topic.setdefault(partition.topic, {})[partition] = sets
        for topic, sets_by_partition in by_topic.items():
            items = sorted(sets_by_partition.items())
            for start in range(0, len(items), PARTITIONS_PER_STEP_MAX):
                outcomes.update(await self._step(context, topic, dict(items[start:start + PARTITIONS_PER_STEP_MAX])))
        return outcomes

    async def _step(self, context: ControllerContext, topic: str,
                    planned: Mapping[TopicPartition, ReplicaSets]) -> dict[TopicPartition, Outcome]:
        outcomes: dict[TopicPartition, Outcome] = {}
        changes: list[PartitionChange] = []
        image = context.image()
        for partition, sets in planned.items():
            change = change_replicas(partition, context.partition_state(partition), sets.replicas, image)
            if change is None:
                outcomes[partition] = Outcome(
                    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                    f"no replica of {list(sets.replicas)} is a live ISR member to lead; retry later")
            else:
                changes.append(change)
        if not changes:
            return outcomes
        before = context.assignments[topic]
        after = _with_sets(before, {c.partition.partition: planned[c.partition] for c in changes})
        writes = [context.state_write(c) for c in changes]
        version, committed = await self._controller.store.write_assignment(
            context.lease, topic, after, context.assignment_versions[topic], writes)
        context.assignments[topic] = after
        context.assignment_versions[topic] = version
        dropped: dict[int, list[TopicPartition]] = {}
        for change, write in zip(changes, writes):
            context.written(write, committed[change.partition])
            for broker in set(before.replicas(change.partition.partition)) - set(after.replicas(change.partition.partition)):
                dropped.setdefault(broker, []).append(change.partition)
            outcomes[change.partition] = SUCCESS
            log.info("%s: replicas %s (adding %s, removing %s); %s", change.partition,
                     list(after.replicas(change.partition.partition)), list(context.adding(change.partition)),
                     list(context.removing(change.partition)), change.describe())
        count_elections(changes, time.monotonic() - self._controller.event_started_s())
        self._controller.requests.send_changes(context, changes)
        for broker, partitions in sorted(dropped.items()):
            self._controller.requests.stop_replicas(context, broker, partitions, delete=True)
        self._controller.update_gauges(context)
        return outcomes


def _with_sets(assignment: TopicAssignment, sets: Mapping[int, ReplicaSets]) -> TopicAssignment:
    partitions = dict(assignment.partitions)
    adding = dict(assignment.adding_replicas)
    removing = dict(assignment.removing_replicas)
    for partition, replica_sets in sets.items():
        partitions[partition] = replica_sets.replicas
        adding.pop(partition, None)
        removing.pop(partition, None)
        if replica_sets.adding:
            adding[partition] = replica_sets.adding
        if replica_sets.removing:
            removing[partition] = replica_sets.removing
    return dataclasses.replace(assignment, partitions=partitions, adding_replicas=adding, removing_replicas=removing)
