"""The active controller: what it does on each event (docs/CONTROLLER.md).

Events — taking over, a change of the live brokers, CreateTopics,
AlterPartition — run one at a time through the `EventQueue`. Each one decides
with the pure functions of `decisions`, persists the new partition states in
ZooKeeper (every write fenced by the controller epoch), updates the view in
`ControllerContext`, and only then queues requests to the brokers: persist,
then send. A fenced write means another controller won: this one stops acting
at once.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import logging
import random
import uuid
from collections.abc import Awaitable, Callable, Collection, Iterable
from typing import TypeVar

from replog.api.broker.v1 import broker_pb2
from replog.controller.metrics import controller_metrics
from replog.controller.channels import (
    BrokerChannel,
    endpoint,
    leader_and_isr_state,
    update_metadata_state,
)
from replog.controller.context import ControllerContext
from replog.controller.decisions import (
    IsrProposal,
    NewTopic,
    PartitionChange,
    Rejection,
    TopicDefaults,
    judge_isr_proposal,
    new_partition_state,
    plan_topic,
    reconcile_partition,
)
from replog.controller.events import ControllerBusy, EventQueue
from replog.core.errors import ErrorCode
from replog.rpc.coalesce import CoalescingJob
from replog.zk.records import PartitionState, TopicAssignment, TopicPartition
from replog.zk.store import (
    ControllerFencedError,
    ControllerLease,
    MetadataStore,
    StateWrite,
    TopicExistsError,
    TopicSnapshot,
    VersionedState,
    WriteOutcomeUnknown,
)

log = logging.getLogger("replog.controller")

T = TypeVar("T")

# Conditional writes that keep conflicting are given up after this many rounds of re-reading.
PERSIST_ROUNDS_MAX = 5
LOAD_BACKOFF_S_MIN = 0.1
LOAD_BACKOFF_S_MAX = 5.0


@dataclasses.dataclass(frozen=True)
class ControllerSettings:
    controller_id: int
    defaults: TopicDefaults
    request_timeout_s: float  # controller.socket.timeout.ms
    message_bytes_max: int


@dataclasses.dataclass(frozen=True)
class TopicOutcome:
    name: str
    error: ErrorCode
    message: str = ""
    topic_id: str = ""
    num_partitions: int = -1
    replication_factor: int = -1


@dataclasses.dataclass(frozen=True)
class ProposalOutcome:
    partition: TopicPartition
    error: ErrorCode
    message: str = ""
    state: PartitionState | None = None


class NotActive(Exception):
    """This controller is not the active one, or stopped being it during the request."""


Recompute = Callable[[TopicPartition], PartitionChange | None]


class Controller:
    def __init__(
        self,
        store: MetadataStore,
        settings: ControllerSettings,
        *,
        on_fenced: Callable[[ControllerLease], None],
        rng: random.Random | None = None,
    ) -> None:
        self._store = store
        self._settings = settings
        self._on_fenced = on_fenced
        self._rng = rng or random.Random()
        self._events = EventQueue()
        self._lease: ControllerLease | None = None  # held, whether or not the view is loaded
        self._context: ControllerContext | None = None  # the view, once loaded under _lease
        self._channels: dict[int, BrokerChannel] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self._broker_change = CoalescingJob(self._queue_broker_change)

    @property
    def controller_id(self) -> int:
        return self._settings.controller_id

    def start(self) -> None:
        self._events.start()
        self._store.watch_broker_ids(self._on_broker_ids)

    async def stop(self) -> None:
        self.deactivate()
        self._broker_change.cancel()
        await self._events.stop()
        await asyncio.gather(*self._closing, return_exceptions=True)

    # -- the lease ---------------------------------------------------------------------------

    def activate(self, lease: ControllerLease) -> None:
        """Won an election: load the cluster's state and tell every broker about it."""
        self._lease = lease
        self._submit_background("take over", lambda: self._load(lease))

    def deactivate(self) -> None:
        """Lost the lease: stop acting and sending at once."""
        self._lease = None
        self._context = None
        self._close_channels(list(self._channels))
        controller_metrics().offline_partitions.set(0)
        controller_metrics().partition_count.set(0)

    def _fenced(self, lease: ControllerLease, error: ControllerFencedError) -> None:
        if self._lease is not lease:
            return
        log.warning("controller %d was fenced at controller epoch %d: %s", self.controller_id, lease.epoch, error)
        self.deactivate()
        self._on_fenced(lease)

    # -- running events ------------------------------------------------------------------------

    def _submit_background(self, name: str, job: Callable[[], Awaitable[None]]) -> None:
        try:
            future = self._events.submit(name, job)
        except ControllerBusy as error:
            log.error("controller event %s dropped: %s", name, error)
            return

        def report(done: asyncio.Future[None]) -> None:
            if not done.cancelled() and done.exception() is not None:
                log.error("controller event %s failed: %r", name, done.exception())

        future.add_done_callback(report)

    async def _as_active(self, name: str, work: Callable[[ControllerContext], Awaitable[T]]) -> T:
        """Run work on the current view as one event; NotActive if this controller is not active."""

        async def job() -> T:
            context = self._context
            if context is None:
                raise NotActive(f"controller {self.controller_id} is not the active controller")
            try:
                return await work(context)
            except ControllerFencedError as error:
                self._fenced(context.lease, error)
                raise NotActive(f"controller {self.controller_id} was fenced by a newer controller") from None
            except Exception:
                log.exception("controller event %s failed; reloading the cluster state", name)
                self._reload(context.lease)
                raise

        return await self._events.run(name, job)

    def _reload(self, lease: ControllerLease) -> None:
        """After an unexpected failure the view may be wrong: read it again, resend everything."""
        if self._lease is lease:
            self._context = None
            self._submit_background("reload", lambda: self._load(lease))

    # -- taking over ---------------------------------------------------------------------------

    async def _load(self, lease: ControllerLease) -> None:
        backoff_s = LOAD_BACKOFF_S_MIN
        while self._lease is lease:
            try:
                await self._take_over(lease)
                return
            except ControllerFencedError as error:
                self._fenced(lease, error)
                return
            except Exception:
                log.exception("controller %d could not load the cluster state; retrying in %.1f s",
                              self.controller_id, backoff_s)
                self._context = None
                await asyncio.sleep(backoff_s)
                backoff_s = min(backoff_s * 2, LOAD_BACKOFF_S_MAX)

    async def _take_over(self, lease: ControllerLease) -> None:
        brokers = await self._store.live_brokers()
        topics = await self._store.read_topics()
        if self._lease is not lease:
            return
        context = ControllerContext(lease, brokers)
        for snapshot in topics.values():
            context.add_topic(snapshot)
        self._context = context
        self._close_channels(list(self._channels))
        self._open_channels(context, brokers)
        # Brokers may have died or come back while no controller was active.
        changes = await self._reconcile(context)
        self._send_changes(context, changes)
        for broker_id in context.brokers:
            self._send_full_state(context, broker_id)
        self._update_gauges(context)
        log.info("controller %d is acting with controller epoch %d: live brokers %s, %d topics, "
                 "%d partitions, %d offline", self.controller_id, lease.epoch, sorted(context.brokers),
                 len(context.assignments), len(context.states), context.offline_count())

    # -- brokers coming and going ---------------------------------------------------------------

    def _on_broker_ids(self, _ids: list[int]) -> None:
        if self._lease is not None:
            self._broker_change.request()

    async def _queue_broker_change(self) -> None:
        try:
            await self._as_active("broker change", self._handle_broker_change)
        except NotActive:
            pass  # a controller taking over reads the live brokers itself
        except ControllerBusy as error:
            log.error("broker change not handled: %s; reloading the cluster state", error)
            if self._lease is not None:
                self._reload(self._lease)
        except Exception:
            pass  # logged by _as_active, which reloads the cluster state

    async def _handle_broker_change(self, context: ControllerContext) -> None:
        current = await self._store.live_brokers()
        before = context.brokers
        # A broker that registered again (new broker epoch) lost its state: it counts as gone and back.
        gone = {b for b, r in before.items() if b not in current or current[b].broker_epoch != r.broker_epoch}
        born = {b for b in current if b not in before or b in gone}
        if not gone and not born:
            return
        log.info("live brokers %s -> %s (gone: %s, registered: %s)", sorted(before), sorted(current),
                 sorted(gone), sorted(born))
        changes: list[PartitionChange] = []
        if gone:
            context.brokers = {b: r for b, r in before.items() if b not in gone}
            self._close_channels(gone)
            changes += await self._reconcile(context)
        if born:
            context.brokers = dict(current)
            self._open_channels(context, born)
            changes += await self._reconcile(context)
        self._send_changes(context, changes)
        for broker_id in sorted(born):
            self._send_full_state(context, broker_id)
        self._update_gauges(context)

    async def _reconcile(self, context: ControllerContext) -> list[PartitionChange]:
        """One batched pass over every partition for the current live brokers."""

        def recompute(partition: TopicPartition) -> PartitionChange | None:
            return reconcile_partition(
                partition, context.states[partition].state, context.replicas(partition), context.brokers,
                unclean_allowed=context.unclean_allowed(partition.topic),
                controller_epoch=context.controller_epoch,
            )

        changes = [c for c in map(recompute, context.partitions()) if c is not None]
        applied = await self._persist(context, changes, recompute)
        for change in applied:
            _record_election(change)
        return applied

    # -- CreateTopics --------------------------------------------------------------------------

    async def create_topics(self, topics: list[NewTopic], *, validate_only: bool) -> list[TopicOutcome]:
        outcomes: dict[str, TopicOutcome] = {}
        try:
            await self._as_active("create topics",
                                  lambda context: self._create_topics(context, topics, validate_only, outcomes))
        except NotActive as error:
            for topic in topics:
                outcomes.setdefault(topic.name, TopicOutcome(topic.name, ErrorCode.NOT_CONTROLLER, str(error)))
        except ControllerBusy:
            raise
        except Exception as error:  # logged by _as_active; the topics created so far keep their answer
            for topic in topics:
                outcomes.setdefault(topic.name, TopicOutcome(
                    topic.name, ErrorCode.UNKNOWN_SERVER_ERROR, f"the controller failed ({error!r}); retry"))
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
            new = [TopicPartition(name, p) for name in created for p in sorted(context.assignments[name].partitions)]
            self._send_partitions(context, new, is_new=True)
            self._update_gauges(context)

    async def _create_topic(self, context: ControllerContext, topic: NewTopic, validate_only: bool) -> TopicOutcome:
        brokers = context.racks()
        plan = plan_topic(
            topic, brokers=brokers, existing_topics=context.assignments, defaults=self._settings.defaults,
            start_index=self._rng.randrange(max(1, len(brokers))),
            replica_shift=self._rng.randrange(max(1, len(brokers))),
        )
        if isinstance(plan, Rejection):
            log.info("topic %r not created: %s", topic.name, plan.message)
            return TopicOutcome(topic.name, plan.error, plan.message)
        placed = TopicOutcome(topic.name, ErrorCode.NONE, num_partitions=len(plan.replicas),
                              replication_factor=plan.replication_factor)
        if validate_only:
            return placed
        assignment = TopicAssignment(_new_topic_id(), dict(plan.replicas))
        states = {p: new_partition_state(replicas, context.controller_epoch) for p, replicas in plan.replicas.items()}
        try:
            await self._store.create_topic(context.lease, topic.name, assignment, dict(plan.configs), states)
        except TopicExistsError as error:
            # Not in the view, yet in ZooKeeper: the view is behind; take the topic in.
            existing = await self._store.read_topic(topic.name)
            if existing is not None:
                context.add_topic(existing)
            return TopicOutcome(topic.name, ErrorCode.TOPIC_ALREADY_EXISTS, str(error))
        except WriteOutcomeUnknown as error:
            written = await self._store.read_topic(topic.name)
            if written is None or written.assignment.topic_id != assignment.topic_id:
                return TopicOutcome(topic.name, ErrorCode.UNKNOWN_SERVER_ERROR, str(error))
        context.add_topic(TopicSnapshot(topic.name, assignment, dict(plan.configs),
                                        {p: VersionedState(s, 0) for p, s in states.items()}))
        log.info("created topic %r (id %s): %d partitions, replication factor %d, configs %s; %s",
                 topic.name, assignment.topic_id, len(plan.replicas), plan.replication_factor, dict(plan.configs),
                 ", ".join(f"{p}: replicas {list(plan.replicas[p])} leader {states[p].leader}"
                           for p in sorted(states)))
        return dataclasses.replace(placed, topic_id=assignment.topic_id)

    # -- AlterPartition ------------------------------------------------------------------------

    async def alter_partition(
        self, broker_id: int, broker_epoch: int, proposals: list[tuple[TopicPartition, IsrProposal]]
    ) -> tuple[Rejection | None, list[ProposalOutcome]]:
        try:
            return await self._as_active(
                "alter partition", lambda context: self._alter_partition(context, broker_id, broker_epoch, proposals))
        except NotActive as error:
            return Rejection(ErrorCode.NOT_CONTROLLER, str(error)), []

    async def _alter_partition(
        self, context: ControllerContext, broker_id: int, broker_epoch: int,
        proposals: list[tuple[TopicPartition, IsrProposal]],
    ) -> tuple[Rejection | None, list[ProposalOutcome]]:
        registration = context.brokers.get(broker_id)
        if registration is None or broker_epoch < registration.broker_epoch:
            known = registration.broker_epoch if registration else "none: not registered"
            return Rejection(ErrorCode.STALE_BROKER_EPOCH,
                             f"broker {broker_id}'s epoch {broker_epoch} is not its current one ({known})"), []
        outcomes: dict[TopicPartition, ProposalOutcome] = {}
        changes: list[PartitionChange] = []
        proposed: dict[TopicPartition, IsrProposal] = {}
        for partition, proposal in proposals:
            outcome, change = self._judge_proposal(context, partition, proposal, proposed.keys())
            proposed.setdefault(partition, proposal)
            if change is not None:
                changes.append(change)
            elif outcome is not None:
                outcomes.setdefault(partition, outcome)

        def judge_again(partition: TopicPartition) -> PartitionChange | None:
            return self._judge_proposal(context, partition, proposed[partition], ())[1]

        # A multi refused for one stale partition is refused whole: the others are judged again.
        applied = {c.partition: c for c in await self._persist(context, changes, judge_again)}
        for change in changes:
            if change.partition in applied:
                written = applied[change.partition]
                log.info("ISR change proposed by broker %d: %s", broker_id, written.describe())
                outcomes[change.partition] = ProposalOutcome(change.partition, ErrorCode.NONE, "", written.after)
                continue
            outcome, _ = self._judge_proposal(context, change.partition, proposed[change.partition], ())
            current = context.states.get(change.partition)
            outcomes[change.partition] = outcome or ProposalOutcome(
                change.partition, ErrorCode.INVALID_UPDATE_VERSION,
                "the partition state kept changing while the proposal was written; retry with the new state",
                current.state if current else None)
        if applied:
            self._send_metadata(context, list(applied))
        return None, [outcomes[p] for p, _ in proposals if p in outcomes]

    def _judge_proposal(
        self, context: ControllerContext, partition: TopicPartition, proposal: IsrProposal,
        seen: Collection[TopicPartition],
    ) -> tuple[ProposalOutcome | None, PartitionChange | None]:
        if partition in seen:
            return ProposalOutcome(partition, ErrorCode.INVALID_REQUEST, "the partition is proposed twice"), None
        versioned = context.states.get(partition)
        if versioned is None:
            return ProposalOutcome(partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                   f"{partition} does not exist"), None
        state = versioned.state
        live_epochs = {b: r.broker_epoch for b, r in context.brokers.items()}
        rejection, after = judge_isr_proposal(proposal, state, context.replicas(partition), live_epochs,
                                              context.controller_epoch)
        if rejection is not None:
            log.info("ISR proposal for %s from broker %d rejected: %s %s", partition, proposal.broker_id,
                     rejection.error.name, rejection.message)
            return ProposalOutcome(partition, rejection.error, rejection.message, state), None
        if after is state:
            return ProposalOutcome(partition, ErrorCode.NONE, "", state), None
        return None, PartitionChange(partition, state, after)

    # -- persisting ----------------------------------------------------------------------------

    async def _persist(
        self, context: ControllerContext, changes: list[PartitionChange], recompute: Recompute | None
    ) -> list[PartitionChange]:
        """Write the changes conditionally; on conflicts re-read and, with recompute, decide again.

        Returns the changes that are now in ZooKeeper, and the view matches them.
        """
        applied: list[PartitionChange] = []
        pending = changes
        for _ in range(PERSIST_ROUNDS_MAX):
            if not pending:
                break
            writes = [StateWrite(c.partition, c.after, context.states[c.partition].zk_version) for c in pending]
            try:
                committed = (await self._store.write_partition_states(context.lease, writes)).committed
            except WriteOutcomeUnknown as error:
                log.warning("%s; re-reading %d partition states", error, len(pending))
                committed = {}
            for change in pending:
                if change.partition in committed:
                    context.states[change.partition] = VersionedState(change.after, committed[change.partition])
                    applied.append(change)
            pending = await self._reread([c for c in pending if c.partition not in committed], context,
                                         applied, recompute)
        if pending:
            log.error("gave up writing %d partition states after %d rounds of conflicts: %s", len(pending),
                      PERSIST_ROUNDS_MAX, ", ".join(str(c.partition) for c in pending))
        return applied

    async def _reread(
        self, unwritten: list[PartitionChange], context: ControllerContext, applied: list[PartitionChange],
        recompute: Recompute | None,
    ) -> list[PartitionChange]:
        again: list[PartitionChange] = []
        for change in unwritten:
            fresh = await self._store.read_partition_state(change.partition)
            if fresh is None:
                log.warning("the state of %s is gone from ZooKeeper", change.partition)
                context.states.pop(change.partition, None)
                continue
            context.states[change.partition] = fresh
            if fresh.state == change.after:
                applied.append(change)  # the write whose outcome was unknown did happen
            elif recompute is not None and (decided := recompute(change.partition)) is not None:
                again.append(decided)
        return again

    # -- telling the brokers -------------------------------------------------------------------

    def _open_channels(self, context: ControllerContext, brokers: Iterable[int]) -> None:
        for broker_id in brokers:
            self._channels[broker_id] = BrokerChannel(
                context.brokers[broker_id], controller_id=self.controller_id,
                controller_epoch=context.controller_epoch, timeout_s=self._settings.request_timeout_s,
                message_bytes_max=self._settings.message_bytes_max,
            )

    def _close_channels(self, broker_ids: Iterable[int]) -> None:
        for broker_id in list(broker_ids):
            channel = self._channels.pop(broker_id, None)
            if channel is not None:
                task = asyncio.get_running_loop().create_task(channel.close())
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)

    def _send_changes(self, context: ControllerContext, changes: list[PartitionChange]) -> None:
        """One LeaderAndIsr to each live replica of a changed partition, one UpdateMetadata to all."""
        latest = {c.partition: c for c in changes}
        for change in latest.values():
            log.log(logging.WARNING if not change.after.has_leader or change.unclean else logging.INFO,
                    "%s", change.describe())
        self._send_partitions(context, sorted(latest), is_new=False)

    def _send_partitions(self, context: ControllerContext, partitions: list[TopicPartition], *, is_new: bool) -> None:
        if context is not self._context:
            return  # the event outlived its view: the channels belong to a newer one
        leaders = [endpoint(r) for r in context.brokers.values()]
        for broker_id, channel in self._channels.items():
            states = [self._leader_and_isr(context, tp, is_new) for tp in partitions
                      if broker_id in context.replicas(tp)]
            if states:
                channel.queue_leader_and_isr(states, leaders)
        self._send_metadata(context, partitions)

    def _send_metadata(self, context: ControllerContext, partitions: list[TopicPartition]) -> None:
        if context is not self._context:
            return
        states = [self._update_metadata(context, tp) for tp in partitions]
        live = [endpoint(context.brokers[b]) for b in sorted(context.brokers)]
        for channel in self._channels.values():
            channel.queue_update_metadata(states, live)

    def _send_full_state(self, context: ControllerContext, broker_id: int) -> None:
        """Everything a broker needs after it (or this controller) starts: its partitions, all metadata."""
        channel = self._channels.get(broker_id)
        if channel is None or context is not self._context:
            return
        hosted = [self._leader_and_isr(context, tp, False) for tp in context.hosted_by(broker_id)]
        channel.queue_leader_and_isr(hosted, [endpoint(r) for r in context.brokers.values()])
        live = [endpoint(context.brokers[b]) for b in sorted(context.brokers)]
        channel.queue_update_metadata([self._update_metadata(context, tp) for tp in context.partitions()], live)

    @staticmethod
    def _leader_and_isr(
        context: ControllerContext, partition: TopicPartition, is_new: bool
    ) -> broker_pb2.LeaderAndIsrPartitionState:
        return leader_and_isr_state(partition, context.topic_id(partition.topic), context.states[partition].state,
                                    context.replicas(partition), is_new=is_new)

    @staticmethod
    def _update_metadata(
        context: ControllerContext, partition: TopicPartition
    ) -> broker_pb2.UpdateMetadataPartitionState:
        return update_metadata_state(partition, context.topic_id(partition.topic), context.states[partition].state,
                                     context.replicas(partition), context.brokers)

    def _update_gauges(self, context: ControllerContext) -> None:
        if context is not self._context:
            return
        controller_metrics().offline_partitions.set(context.offline_count())
        controller_metrics().partition_count.set(len(context.states))


def _record_election(change: PartitionChange) -> None:
    if change.leader_changed and change.after.has_leader:
        controller_metrics().leader_elections.inc()
        if change.unclean:
            controller_metrics().unclean_leader_elections.inc()


def _new_topic_id() -> str:
    """22 characters of URL-safe base64 over a random UUID, as Kafka prints topic ids."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
