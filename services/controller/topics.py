"""Topic administration at the active controller: CreateTopics, CreatePartitions, DeleteTopics.

Creation and growth are one ZooKeeper multi each, leaders included, so a
controller killed half-way leaves a topic complete or absent. Deletion takes
several steps and survives a controller's failure (Kafka's TopicDeletionManager):

1. `/admin/delete_topics/<topic>` is created: the topic leaves the controller's
   view and the metadata service's image; nothing elects leaders for it;
2. every replica gets StopReplica with delete_partition=true (the broker closes
   the partition and removes its log); replicas on brokers that are down get it
   when they register again;
3. once every replica answered, the partition states, the topic znode, its
   config and the mark are removed.

A controller that takes over finds the marks and carries on from step 2.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import logging
import random
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from replog.controller.context import ControllerContext, partitions_of
from replog.core.election import initial_state
from replog.core.errors import ErrorCode
from replog.core.outcome import SUCCESS, Outcome, Rejection
from replog.core.topic_partition import TopicPartition
from replog.core.topic_plan import NewPartitions, NewTopic, TopicOutcome, plan_new_partitions, plan_topic
from replog.zk.records import LeaderAndIsr, TopicAssignment
from replog.zk.store import TopicExistsError, TopicSnapshot, VersionedState, WriteOutcomeUnknown

if TYPE_CHECKING:
    from replog.controller.driver import Controller

log = logging.getLogger("replog.controller")


@dataclasses.dataclass
class _Deletion:
    topic: str
    waiting: dict[int, list[TopicPartition]]  # broker -> replicas it has not confirmed stopping yet
    done: asyncio.Future[None]


class TopicAdmin:
    def __init__(self, controller: Controller, rng: random.Random) -> None:
        self._controller = controller
        self._rng = rng
        self._deletions: dict[str, _Deletion] = {}  # of the current view

    # -- CreateTopics --------------------------------------------------------------------------

    async def create_topics(self, topics: list[NewTopic], *, validate_only: bool) -> list[TopicOutcome]:
        outcomes: dict[str, TopicOutcome] = {}

        def failed(error: ErrorCode, message: str) -> None:
            for topic in topics:  # the topics created so far keep their answer
                outcomes.setdefault(topic.name, TopicOutcome(topic.name, error, message))

        await self._controller.answer(
            "create topics", lambda context: self._create_topics(context, topics, validate_only, outcomes), failed)
        return [outcomes[topic.name] for topic in topics]

    async def _create_topics(
        self, context: ControllerContext, topics: list[NewTopic], validate_only: bool,
        outcomes: dict[str, TopicOutcome],
    ) -> None:
        names = [t.name for t in topics]
        created: list[str] = []
        for topic in topics:
            if names.count(topic.name) > 1:
                outcomes[topic.name] = TopicOutcome(topic.name, ErrorCode.INVALID_REQUEST,
                                                    f"topic {topic.name!r} appears more than once in the request")
                continue
            outcome = await self._create_topic(context, topic, validate_only)
            outcomes[topic.name] = outcome
            if outcome.error == ErrorCode.NONE and not validate_only:
                created.append(topic.name)
        if created:
            new = [tp for name in created for tp in partitions_of(name, context.assignments[name])]
            self._controller.requests.send_partitions(context, new, is_new=True)
            self._controller.update_gauges(context)

    async def _create_topic(self, context: ControllerContext, topic: NewTopic, validate_only: bool) -> TopicOutcome:
        brokers = context.image().live_racks()
        plan = plan_topic(
            topic, brokers=brokers, existing_topics=context.topic_names(),
            defaults=self._controller.settings.defaults,
            start_index=self._rng.randrange(max(1, len(brokers))),
            replica_shift=self._rng.randrange(max(1, len(brokers))),
        )
        if isinstance(plan, Rejection):
            if topic.name in context.deleting:
                plan = Outcome(ErrorCode.TOPIC_ALREADY_EXISTS,
                                 f"topic {topic.name!r} is being deleted; create it again once it is gone")
            log.info("topic %r not created: %s", topic.name, plan.message)
            return TopicOutcome(topic.name, plan.error, plan.message)
        placed = TopicOutcome(topic.name, ErrorCode.NONE, num_partitions=len(plan.replicas),
                              replication_factor=plan.replication_factor)
        if validate_only:
            return placed
        assignment = TopicAssignment(_new_topic_id(), dict(plan.replicas))
        states = {p: _new_partition_state(replicas, context.controller_epoch) for p, replicas in plan.replicas.items()}
        store = self._controller.store
        try:
            await store.create_topic(context.lease, topic.name, assignment, dict(plan.configs), states)
        except TopicExistsError as error:
            # Not in the view, yet in ZooKeeper: the view is behind; take the topic in.
            existing = await store.read_topic(topic.name)
            if existing is not None:
                context.add_topic(existing)
            return TopicOutcome(topic.name, ErrorCode.TOPIC_ALREADY_EXISTS, str(error))
        except WriteOutcomeUnknown as error:
            written = await store.read_topic(topic.name)
            if written is None or written.assignment.topic_id != assignment.topic_id:
                return TopicOutcome(topic.name, ErrorCode.UNKNOWN_SERVER_ERROR, str(error))
        context.add_topic(TopicSnapshot(topic.name, assignment, dict(plan.configs),
                                        {p: VersionedState(s, 0) for p, s in states.items()}, 0))
        log.info("created topic %r (id %s): %d partitions, replication factor %d, configs %s; %s",
                 topic.name, assignment.topic_id, len(plan.replicas), plan.replication_factor, dict(plan.configs),
                 ", ".join(f"{p}: replicas {list(plan.replicas[p])} leader {states[p].leader}"
                           for p in sorted(states)))
        return dataclasses.replace(placed, topic_id=assignment.topic_id)

    # -- CreatePartitions ----------------------------------------------------------------------

    async def create_partitions(self, topics: list[NewPartitions], *, validate_only: bool) -> list[Outcome]:
        """One answer per topic, in request order (ErrorCode.NONE when grown)."""
        outcomes: dict[str, Outcome] = {}

        def failed(error: ErrorCode, message: str) -> None:
            for topic in topics:
                outcomes.setdefault(topic.name, Outcome(error, message))

        await self._controller.answer(
            "create partitions", lambda context: self._create_partitions(context, topics, validate_only, outcomes),
            failed)
        return [outcomes[topic.name] for topic in topics]

    async def _create_partitions(
        self, context: ControllerContext, topics: list[NewPartitions], validate_only: bool,
        outcomes: dict[str, Outcome],
    ) -> None:
        names = [t.name for t in topics]
        for topic in topics:
            if names.count(topic.name) > 1:
                outcomes[topic.name] = Outcome(ErrorCode.INVALID_REQUEST,
                                                 f"topic {topic.name!r} appears more than once in the request")
            elif topic.name not in context.assignments:
                outcomes[topic.name] = Outcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                 f"topic {topic.name!r} does not exist")
            else:
                outcomes[topic.name] = await self._grow(context, topic, validate_only)

    async def _grow(self, context: ControllerContext, topic: NewPartitions, validate_only: bool) -> Outcome:
        brokers = context.image().live_racks()
        before = context.assignments[topic.name]
        placed = plan_new_partitions(topic, before.partitions,
                                     reassigning=bool(before.adding_replicas or before.removing_replicas),
                                     brokers=brokers, replica_shift=self._rng.randrange(max(1, len(brokers))))
        if isinstance(placed, Rejection):
            log.info("topic %r not grown: %s", topic.name, placed.message)
            return placed
        if validate_only:
            return SUCCESS
        after = dataclasses.replace(before, partitions={**before.partitions, **placed})
        states = {p: _new_partition_state(replicas, context.controller_epoch) for p, replicas in placed.items()}
        store = self._controller.store
        try:
            version = await store.add_partitions(context.lease, topic.name, after,
                                                 context.assignment_versions[topic.name], states)
        except WriteOutcomeUnknown as error:
            written = await store.read_topic(topic.name)
            if written is None or written.assignment != after:
                return Outcome(ErrorCode.UNKNOWN_SERVER_ERROR, str(error))
            version = written.assignment_zk_version
        context.assignments[topic.name] = after
        context.assignment_versions[topic.name] = version
        for partition, state in states.items():
            context.states[TopicPartition(topic.name, partition)] = VersionedState(state, 0)
        log.info("topic %r grown from %d to %d partitions: %s", topic.name, len(before.partitions), topic.count,
                 ", ".join(f"{p}: replicas {list(r)}" for p, r in sorted(placed.items())))
        self._controller.requests.send_partitions(context, [TopicPartition(topic.name, p) for p in sorted(placed)],
                                         is_new=True)
        self._controller.update_gauges(context)
        return SUCCESS

    # -- DeleteTopics --------------------------------------------------------------------------

    async def delete_topics(self, names: list[str], *, timeout_ms: int) -> list[Outcome]:
        """Mark the topics for deletion, then wait up to timeout_ms for the deletions to finish.

        One answer per name: NONE when the topic is gone (or with timeout_ms 0,
        once it is marked), REQUEST_TIMED_OUT while replicas are still being deleted.
        """
        outcomes: dict[str, Outcome] = {}
        started: dict[str, asyncio.Future[None]] = {}

        def failed(error: ErrorCode, message: str) -> None:
            for name in names:
                outcomes.setdefault(name, Outcome(error, message))

        await self._controller.answer(
            "delete topics", lambda context: self._mark_for_deletion(context, names, outcomes, started), failed)
        if started and timeout_ms > 0:
            await asyncio.wait([asyncio.ensure_future(f) for f in started.values()], timeout=timeout_ms / 1000)
        for name, done in started.items():
            if not done.done() or done.cancelled():
                outcomes[name] = Outcome(ErrorCode.REQUEST_TIMED_OUT if timeout_ms > 0 else ErrorCode.NONE,
                                           self._still_deleting(name))
        return [outcomes[name] for name in names]

    def _still_deleting(self, name: str) -> str:
        deletion = self._deletions.get(name)
        waiting = sorted(b for b, parts in deletion.waiting.items() if parts) if deletion else []
        if waiting:
            return (f"topic {name!r} is marked for deletion; brokers {waiting} have not deleted their replicas "
                    "yet (a broker that is down deletes them when it returns)")
        return f"topic {name!r} is marked for deletion and being deleted"

    async def _mark_for_deletion(
        self, context: ControllerContext, names: list[str], outcomes: dict[str, Outcome],
        started: dict[str, asyncio.Future[None]],
    ) -> None:
        marked: list[str] = []
        for name in names:
            if names.count(name) > 1:
                outcomes[name] = Outcome(ErrorCode.INVALID_REQUEST,
                                           f"topic {name!r} appears more than once in the request")
            elif name in context.deleting:
                marked.append(name)  # already under way: wait for it like the others
            elif name not in context.assignments:
                outcomes[name] = Outcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
            else:
                marked.append(name)
        if not marked:
            return
        await self._controller.store.mark_topics_for_deletion(context.lease, marked)
        for name in marked:
            outcomes[name] = SUCCESS
            if name not in context.deleting:
                context.mark_deleting(name)
                log.info("topic %r marked for deletion", name)
                self._controller.requests.send_deletion(context, name)
                self._start_deletion(context, name)
            started[name] = self._deletions[name].done
        self._controller.update_gauges(context)

    def _start_deletion(self, context: ControllerContext, name: str) -> None:
        assignment = context.deleting[name]
        waiting: dict[int, list[TopicPartition]] = {}
        for partition in partitions_of(name, assignment):
            for broker in assignment.replicas(partition.partition):
                waiting.setdefault(broker, []).append(partition)
        deletion = _Deletion(name, waiting, asyncio.get_running_loop().create_future())
        self._deletions[name] = deletion
        for broker in sorted(waiting):
            self._stop_replicas(context, deletion, broker)

    def _stop_replicas(self, context: ControllerContext, deletion: _Deletion, broker: int) -> None:
        future = self._controller.requests.stop_replicas(context, broker, deletion.waiting[broker], delete=True)
        if future is None:
            log.info("topic %r: broker %d is down; it deletes its replicas when it returns", deletion.topic, broker)
            return

        def stopped(answer: asyncio.Future[bool]) -> None:
            if not answer.cancelled() and answer.result():
                self._controller.submit_work(f"deletion of {deletion.topic}",
                                             lambda view: self._replicas_stopped(view, deletion, broker), context)

        future.add_done_callback(stopped)

    async def _replicas_stopped(self, context: ControllerContext, deletion: _Deletion, broker: int) -> None:
        if self._deletions.get(deletion.topic) is not deletion:
            return
        deletion.waiting.pop(broker, None)
        if not deletion.waiting:
            await self._finish_deletion(context, deletion.topic)

    async def _finish_deletion(self, context: ControllerContext, name: str) -> None:
        await self._controller.store.delete_topic(context.lease, name)
        context.deleting.pop(name, None)
        deletion = self._deletions.pop(name, None)
        if deletion is not None and not deletion.done.done():
            deletion.done.set_result(None)
        log.info("topic %r deleted: its replicas, partition states, znode and config are gone", name)

    def on_brokers_registered(self, context: ControllerContext, brokers: set[int]) -> None:
        """Brokers that were down delete the replicas of topics deleted meanwhile."""
        for deletion in list(self._deletions.values()):
            for broker in sorted(brokers & deletion.waiting.keys()):
                self._stop_replicas(context, deletion, broker)

    async def resume_deletions(self, context: ControllerContext, marked: Sequence[str]) -> None:
        """Taking over: carry on with every deletion the previous controller left unfinished."""
        for name in marked:
            if name in context.deleting:
                log.info("topic %r: resuming its deletion", name)
                self._controller.requests.send_deletion(context, name)
                self._start_deletion(context, name)
            else:
                await self._finish_deletion(context, name)  # only the mark (or part of the znodes) is left

    def forget_deletions(self) -> None:
        """The view is gone: whoever waits for a deletion learns that it is still under way."""
        for deletion in self._deletions.values():
            deletion.done.cancel()
        self._deletions.clear()


def _new_partition_state(replicas: tuple[int, ...], controller_epoch: int) -> LeaderAndIsr:
    """A new partition: its first replica leads, every replica (all live, as placement sees to) in sync."""
    return LeaderAndIsr.from_core(initial_state(replicas), controller_epoch)


def _new_topic_id() -> str:
    """22 characters of URL-safe base64 over a random UUID, as Kafka prints topic ids."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
