"""The active controller: what it does on each event (docs/CONTROLLER.md).

Events — taking over, a change of the live brokers, AlterPartition, and the
admin requests of `topics`, `configs`, `leadership` and `reassignment` — run
one at a time through the `EventQueue`. Each one decides with the core's pure
rules (`replog.core.partition_change`, `isr_judgement`, `topic_plan`,
`reassignment`, `topic_configs`) over the view's image, persists the result in ZooKeeper (every
write fenced by the controller epoch), updates the view in `ControllerContext`,
and only then queues requests to the brokers: persist, then send. A fenced
write means another controller won: this one stops acting at once.

`Controller` owns the lease, the view, the event queue and the channels to the
brokers; the admin features use its `run`, `persist` and `send_*` and are
told when the controller takes over and when brokers come and go.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections.abc import Awaitable, Callable, Collection, Iterable
from typing import TypeVar

from replog.api.broker.v1 import broker_pb2
from replog.controller.channels import (
    BrokerChannel,
    endpoint,
    leader_and_isr_state,
    update_metadata_state,
)
from replog.controller.configs import ConfigAdmin
from replog.controller.context import ControllerContext
from replog.controller.events import ControllerBusy, EventQueue
from replog.controller.leadership import Leadership, RebalanceSettings
from replog.controller.metrics import controller_metrics
from replog.controller.reassignment import Reassignments
from replog.controller.topics import TopicAdmin
from replog.core.errors import ErrorCode
from replog.core.isr_judgement import ProposalOutcome, judge_isr_proposal
from replog.core.messages import NO_LEADER, AlterPartitionRequest
from replog.core.outcome import Rejection
from replog.core.partition_change import PartitionChange, reconcile_partition
from replog.core.topic_partition import TopicPartition
from replog.core.topic_plan import TopicDefaults
from replog.rpc.coalesce import CoalescingJob
from replog.zk.store import ControllerFencedError, ControllerLease, MetadataStore, WriteOutcomeUnknown

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
    rebalance: RebalanceSettings = RebalanceSettings()


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
        self.store = store
        self.settings = settings
        self._on_fenced = on_fenced
        self._events = EventQueue()
        self._lease: ControllerLease | None = None  # held, whether or not the view is loaded
        self._context: ControllerContext | None = None  # the view, once loaded under _lease
        self._channels: dict[int, BrokerChannel] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self._broker_change = CoalescingJob(self._queue_broker_change)
        self.topics = TopicAdmin(self, rng or random.Random())
        self.configs = ConfigAdmin(self)
        self.leadership = Leadership(self, settings.rebalance)
        self.reassignments = Reassignments(self)

    @property
    def controller_id(self) -> int:
        return self.settings.controller_id

    def start(self) -> None:
        self._events.start()
        self.store.watch_broker_ids(self._on_broker_ids)

    async def stop(self) -> None:
        self.deactivate()
        self._broker_change.cancel()
        await self._events.stop()
        await asyncio.gather(*self._closing, return_exceptions=True)

    # -- the lease ---------------------------------------------------------------------------

    def activate(self, lease: ControllerLease) -> None:
        """Won an election: load the cluster's state and tell every broker about it."""
        self._lease = lease
        self.submit("take over", lambda: self._load(lease))
        self.leadership.start(lease)

    def deactivate(self) -> None:
        """Lost the lease: stop acting and sending at once."""
        self._lease = None
        self._context = None
        self.leadership.stop()
        self.topics.forget_deletions()
        self._close_channels(list(self._channels))
        controller_metrics().offline_partitions.set(0)
        controller_metrics().partition_count.set(0)

    def holds(self, lease: ControllerLease) -> bool:
        return self._lease is lease

    def _fenced(self, lease: ControllerLease, error: ControllerFencedError) -> None:
        if self._lease is not lease:
            return
        log.warning("controller %d was fenced at controller epoch %d: %s", self.controller_id, lease.epoch, error)
        self.deactivate()
        self._on_fenced(lease)

    # -- running events ------------------------------------------------------------------------

    def submit(self, name: str, job: Callable[[], Awaitable[None]]) -> None:
        """Queue a job that nobody waits for; its failure is logged."""
        try:
            future = self._events.submit(name, job)
        except ControllerBusy as error:
            log.error("controller event %s dropped: %s", name, error)
            return

        def report(done: asyncio.Future[None]) -> None:
            if not done.cancelled() and done.exception() is not None:
                log.error("controller event %s failed: %r", name, done.exception())

        future.add_done_callback(report)

    async def run(self, name: str, work: Callable[[ControllerContext], Awaitable[T]]) -> T:
        """Run work on the current view as one event; NotActive if this controller is not active.

        Raises ControllerBusy when too many events wait. Any other failure is
        logged, makes the controller read its view again, and is raised.
        """
        return await self._events.run(name, self._on_view(name, work))

    def submit_work(self, name: str, work: Callable[[ControllerContext], Awaitable[None]],
                    view: ControllerContext) -> None:
        """Queue work that nobody waits for, to run only if `view` is still the current view."""

        async def if_current(context: ControllerContext) -> None:
            if context is view:
                await work(context)

        job = self._on_view(name, if_current)

        async def quiet() -> None:
            try:
                await job()
            except NotActive:
                pass

        self.submit(name, quiet)

    def _on_view(self, name: str, work: Callable[[ControllerContext], Awaitable[T]]) -> Callable[[], Awaitable[T]]:
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

        return job

    async def answer(self, name: str, work: Callable[[ControllerContext], Awaitable[T]],
                     failed: Callable[[ErrorCode, str], T]) -> T:
        """run(), with the failures a request answers as an error code: NOT_CONTROLLER, or
        UNKNOWN_SERVER_ERROR for an unexpected one. ControllerBusy is raised (gRPC UNAVAILABLE)."""
        try:
            return await self.run(name, work)
        except NotActive as error:
            return failed(ErrorCode.NOT_CONTROLLER, str(error))
        except ControllerBusy:
            raise
        except Exception as error:  # logged by run()
            return failed(ErrorCode.UNKNOWN_SERVER_ERROR, f"the controller failed ({error!r}); retry")

    def _reload(self, lease: ControllerLease) -> None:
        """After an unexpected failure the view may be wrong: read it again, resend everything."""
        if self._lease is lease:
            self._context = None
            self.submit("reload", lambda: self._load(lease))

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
        brokers = await self.store.live_brokers()
        topics = await self.store.read_topics()
        marked = await self.store.topics_marked_for_deletion()
        if self._lease is not lease:
            return
        context = ControllerContext(lease, brokers)
        for snapshot in topics.values():
            context.add_topic(snapshot)
        for name in marked:
            if name in context.assignments:
                context.mark_deleting(name)
        self._context = context
        self._close_channels(list(self._channels))
        self.topics.forget_deletions()
        self._open_channels(context, brokers)
        # Brokers may have died or come back while no controller was active.
        changes = await self._reconcile(context)
        self.send_changes(context, changes)
        for broker_id in context.brokers:
            self._send_full_state(context, broker_id)
        self.update_gauges(context)
        log.info("controller %d is acting with controller epoch %d: live brokers %s, %d topics, "
                 "%d partitions, %d offline, %d topics being deleted, %d partitions being reassigned",
                 self.controller_id, lease.epoch, sorted(context.brokers), len(context.assignments),
                 len(context.states), context.offline_count(), len(context.deleting), len(context.reassigning()))
        # A deletion or reassignment the last controller left unfinished goes on.
        await self.topics.resume_deletions(context, marked)
        await self.reassignments.advance(context, context.reassigning())

    # -- brokers coming and going ---------------------------------------------------------------

    def _on_broker_ids(self, _ids: list[int]) -> None:
        if self._lease is not None:
            self._broker_change.request()

    async def _queue_broker_change(self) -> None:
        try:
            await self.run("broker change", self._handle_broker_change)
        except NotActive:
            pass  # a controller taking over reads the live brokers itself
        except ControllerBusy as error:
            log.error("broker change not handled: %s; reloading the cluster state", error)
            if self._lease is not None:
                self._reload(self._lease)
        except Exception:
            pass  # logged by run(), which reloads the cluster state

    async def _handle_broker_change(self, context: ControllerContext) -> None:
        current = await self.store.live_brokers()
        before = context.brokers
        # A broker that registered again (new broker epoch) lost its state: it counts as gone and back.
        gone = {b for b, r in before.items() if b not in current or current[b].broker_epoch != r.broker_epoch}
        born = {b for b in current if b not in before or b in gone}
        if not gone and not born:
            return
        log.info("live brokers %s -> %s (gone: %s, registered: %s)", sorted(before), sorted(current),
                 sorted(gone), sorted(born))
        for broker_id in gone:
            context.shutting_down.pop(broker_id, None)  # its shutdown is over
        changes: list[PartitionChange] = []
        if gone:
            context.brokers = {b: r for b, r in before.items() if b not in gone}
            self._close_channels(gone)
            changes += await self._reconcile(context)
        if born:
            context.brokers = dict(current)
            self._open_channels(context, born)
            changes += await self._reconcile(context)
        self.send_changes(context, changes)
        for broker_id in sorted(born):
            self._send_full_state(context, broker_id)
        self.update_gauges(context)
        self.topics.on_brokers_registered(context, born)
        await self.reassignments.advance(context, context.reassigning())

    async def _reconcile(self, context: ControllerContext,
                         partitions: Iterable[TopicPartition] | None = None) -> list[PartitionChange]:
        """One batched election pass over these partitions (all when None) for the current live brokers."""
        image = context.image()

        def recompute(partition: TopicPartition) -> PartitionChange | None:
            return reconcile_partition(partition, context.partition_state(partition), image,
                                       unclean_allowed=context.unclean_allowed(partition.topic))

        chosen = context.partitions() if partitions is None else partitions
        return await self.elect(context, [c for c in map(recompute, chosen) if c is not None], recompute)

    async def reconcile_topic(self, context: ControllerContext, topic: str) -> list[PartitionChange]:
        """The election pass for one topic (after its unclean.leader.election.enable changed)."""
        applied = await self._reconcile(context, context.topic_partitions(topic))
        self.send_changes(context, applied)
        self.update_gauges(context)
        return applied

    async def elect(self, context: ControllerContext, changes: list[PartitionChange],
                    recompute: Recompute | None) -> list[PartitionChange]:
        """Persist leadership changes and count the elections among them."""
        applied = await self.persist(context, changes, recompute)
        self.count_elections(applied)
        return applied

    @staticmethod
    def count_elections(changes: Iterable[PartitionChange]) -> None:
        """replog_leader_elections_total and replog_unclean_leader_elections_total for written changes."""
        for change in changes:
            if change.elected:
                controller_metrics().leader_elections.inc()
                if change.unclean:
                    controller_metrics().unclean_leader_elections.inc()

    # -- AlterPartition ------------------------------------------------------------------------

    async def alter_partition(
        self, broker_id: int, broker_epoch: int, proposals: list[tuple[TopicPartition, AlterPartitionRequest]]
    ) -> tuple[Rejection | None, list[ProposalOutcome]]:
        try:
            return await self.run(
                "alter partition", lambda context: self._alter_partition(context, broker_id, broker_epoch, proposals))
        except NotActive as error:
            return Rejection(ErrorCode.NOT_CONTROLLER, str(error)), []

    async def _alter_partition(
        self, context: ControllerContext, broker_id: int, broker_epoch: int,
        proposals: list[tuple[TopicPartition, AlterPartitionRequest]],
    ) -> tuple[Rejection | None, list[ProposalOutcome]]:
        registration = context.brokers.get(broker_id)
        if registration is None or broker_epoch < registration.broker_epoch:
            known = registration.broker_epoch if registration else "none: not registered"
            return Rejection(ErrorCode.STALE_BROKER_EPOCH,
                             f"broker {broker_id}'s epoch {broker_epoch} is not its current one ({known})"), []
        outcomes: dict[TopicPartition, ProposalOutcome] = {}
        changes: list[PartitionChange] = []
        proposed: dict[TopicPartition, AlterPartitionRequest] = {}
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
        applied = {c.partition: c for c in await self.persist(context, changes, judge_again)}
        for change in changes:
            if change.partition in applied:
                written = applied[change.partition]
                log.info("ISR change proposed by broker %d: %s", broker_id, written.describe())
                outcomes[change.partition] = ProposalOutcome(change.partition, ErrorCode.NONE, "", written.after)
                continue
            outcome, _ = self._judge_proposal(context, change.partition, proposed[change.partition], ())
            current = context.partition_state(change.partition) if change.partition in context.states else None
            outcomes[change.partition] = outcome or ProposalOutcome(
                change.partition, ErrorCode.INVALID_UPDATE_VERSION,
                "the partition state kept changing while the proposal was written; retry with the new state",
                current)
        if applied:
            self.send_metadata(context, list(applied))
            # A replica being added may just have joined the ISR: its reassignment may finish.
            reassigning = set(context.reassigning())
            await self.reassignments.advance(context, [p for p in applied if p in reassigning])
        return None, [outcomes[p] for p, _ in proposals if p in outcomes]

    def _judge_proposal(
        self, context: ControllerContext, partition: TopicPartition, proposal: AlterPartitionRequest,
        seen: Collection[TopicPartition],
    ) -> tuple[ProposalOutcome | None, PartitionChange | None]:
        if partition in seen:
            return ProposalOutcome(partition, ErrorCode.INVALID_REQUEST, "the partition is proposed twice"), None
        if partition not in context.states:
            return ProposalOutcome(partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                   f"{partition} does not exist"), None
        state = context.partition_state(partition)
        outcome, change = judge_isr_proposal(partition, state, proposal, context.image())
        if outcome.error != ErrorCode.NONE:
            log.info("ISR proposal for %s from broker %d rejected: %s %s", partition, proposal.leader_id,
                     outcome.error.name, outcome.message)
        if change is None:
            return ProposalOutcome(partition, outcome.error, outcome.message, state), None
        return None, change

    # -- persisting ----------------------------------------------------------------------------

    async def persist(
        self, context: ControllerContext, changes: list[PartitionChange], recompute: Recompute | None
    ) -> list[PartitionChange]:
        """Write the changes conditionally; on conflicts re-read and, with recompute, decide again.

        Returns the changes that are now in ZooKeeper, and the view matches them.
        """
        applied: list[PartitionChange] = []
        # Leadership changes first: when a pass takes more than one multi (a broker's death leaves
        # a thousand ISRs as well), the new leaders, which clients wait for, land with the first.
        pending = sorted(changes, key=lambda change: not change.leader_changed)
        for _ in range(PERSIST_ROUNDS_MAX):
            if not pending:
                break
            writes = [context.state_write(c) for c in pending]
            try:
                committed = (await self.store.write_partition_states(context.lease, writes)).committed
            except WriteOutcomeUnknown as error:
                log.warning("%s; re-reading %d partition states", error, len(pending))
                committed = {}
            for change, write in zip(pending, writes):
                if change.partition in committed:
                    context.written(write, committed[change.partition])
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
            fresh = await self.store.read_partition_state(change.partition)
            if fresh is None:
                log.warning("the state of %s is gone from ZooKeeper", change.partition)
                context.states.pop(change.partition, None)
                continue
            context.states[change.partition] = fresh
            if context.partition_state(change.partition) == change.after:
                applied.append(change)  # the write whose outcome was unknown did happen
            elif recompute is not None and (decided := recompute(change.partition)) is not None:
                again.append(decided)
        return again

    # -- telling the brokers -------------------------------------------------------------------

    def _open_channels(self, context: ControllerContext, brokers: Iterable[int]) -> None:
        for broker_id in brokers:
            self._channels[broker_id] = BrokerChannel(
                context.brokers[broker_id], controller_id=self.controller_id,
                controller_epoch=context.controller_epoch, timeout_s=self.settings.request_timeout_s,
                message_bytes_max=self.settings.message_bytes_max,
            )

    def _close_channels(self, broker_ids: Iterable[int]) -> None:
        for broker_id in list(broker_ids):
            channel = self._channels.pop(broker_id, None)
            if channel is not None:
                task = asyncio.get_running_loop().create_task(channel.close())
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)

    def send_changes(self, context: ControllerContext, changes: list[PartitionChange]) -> None:
        """One LeaderAndIsr to each live replica of a changed partition, one UpdateMetadata to all."""
        latest = {c.partition: c for c in changes}
        for change in latest.values():
            log.log(logging.WARNING if change.after.leader == NO_LEADER or change.unclean else logging.INFO,
                    "%s", change.describe())
        self.send_partitions(context, sorted(latest), is_new=False)

    def send_partitions(self, context: ControllerContext, partitions: list[TopicPartition], *, is_new: bool) -> None:
        if context is not self._context:
            return  # the event outlived its view: the channels belong to a newer one
        leaders = [endpoint(r) for r in context.brokers.values()]
        for broker_id, channel in self._channels.items():
            states = [self._leader_and_isr(context, tp, is_new) for tp in partitions
                      if broker_id in context.replicas(tp)]
            if states:
                channel.queue_leader_and_isr(states, leaders)
        self.send_metadata(context, partitions)

    def send_metadata(self, context: ControllerContext, partitions: list[TopicPartition]) -> None:
        if context is not self._context:
            return
        states = [self._update_metadata(context, tp) for tp in partitions]
        live = [endpoint(context.brokers[b]) for b in sorted(context.brokers)]
        for channel in self._channels.values():
            channel.queue_update_metadata(states, live)

    def stop_replicas(
        self, context: ControllerContext, broker_id: int, partitions: list[TopicPartition], *, delete: bool
    ) -> asyncio.Future[bool] | None:
        """StopReplica to one live broker; None when it has no channel (it is not live)."""
        channel = self._channels.get(broker_id)
        if channel is None or context is not self._context:
            return None
        return channel.queue_stop_replica(partitions, delete=delete)

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
                                    context.replicas(partition), is_new=is_new, adding=context.adding(partition),
                                    removing=context.removing(partition))

    @staticmethod
    def _update_metadata(
        context: ControllerContext, partition: TopicPartition
    ) -> broker_pb2.UpdateMetadataPartitionState:
        return update_metadata_state(partition, context.topic_id(partition.topic), context.states[partition].state,
                                     context.replicas(partition), context.brokers)

    def update_gauges(self, context: ControllerContext) -> None:
        if context is not self._context:
            return
        controller_metrics().offline_partitions.set(context.offline_count())
        controller_metrics().partition_count.set(len(context.states))

