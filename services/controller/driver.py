"""The active controller: the lease, the view, and the events that run on it (docs/CONTROLLER.md).

Events — taking over, a change of the live brokers, AlterPartition, and the
admin requests of `topics`, `configs`, `leadership` and `reassignment` — run
one at a time through the `EventQueue`. Each one decides with the core's pure
rules (`replog.core.partition_change`, `isr_judgement`, `topic_plan`,
`reassignment`, `topic_configs`) over the view's image, persists the result in
ZooKeeper (`persist`; every write fenced by the controller epoch), updates the
view in `ControllerContext`, and only then queues requests to the brokers
(`broker_requests`): persist, then send. A fenced write means another
controller won: this one stops acting at once.

`Controller` owns the lease, the view and the event queue, and wires the parts
with one job each: `writer` persists, `requests` tells the brokers,
`broker_changes` follows the live brokers, `isr_changes` answers AlterPartition,
and the admin features use its `run` and `answer`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from replog.controller.broker_changes import BrokerChanges
from replog.controller.broker_requests import BrokerRequests
from replog.controller.configs import ConfigAdmin
from replog.controller.context import ControllerContext
from replog.controller.events import ControllerBusy, EventQueue, NotActive
from replog.controller.isr_changes import IsrChanges
from replog.controller.leadership import Leadership, RebalanceSettings
from replog.controller.metrics import controller_metrics, set_offline_replicas
from replog.controller.persist import StateWriter
from replog.controller.reassignment import Reassignments
from replog.controller.topics import TopicAdmin
from replog.core.errors import ErrorCode
from replog.core.topic_plan import TopicDefaults
from replog.zk.store import ControllerFencedError, ControllerLease, MetadataStore

log = logging.getLogger("replog.controller")

T = TypeVar("T")

LOAD_BACKOFF_S_MIN = 0.1
LOAD_BACKOFF_S_MAX = 5.0


@dataclasses.dataclass(frozen=True)
class ControllerSettings:
    controller_id: int
    defaults: TopicDefaults
    request_timeout_s: float  # controller.socket.timeout.ms
    message_bytes_max: int
    rebalance: RebalanceSettings = RebalanceSettings()


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
        self.writer = StateWriter(store, self.event_started_s)
        self.requests = BrokerRequests(lambda: self._context, controller_id=settings.controller_id,
                                       timeout_s=settings.request_timeout_s,
                                       message_bytes_max=settings.message_bytes_max)
        self.broker_changes = BrokerChanges(self)
        self.isr_changes = IsrChanges(self)
        self.topics = TopicAdmin(self, rng or random.Random())
        self.configs = ConfigAdmin(self)
        self.leadership = Leadership(self, settings.rebalance)
        self.reassignments = Reassignments(self)

    @property
    def controller_id(self) -> int:
        return self.settings.controller_id

    def event_started_s(self) -> float:
        """time.monotonic() when the running controller event started (now, between events)."""
        started_s = self._events.running_since_s
        return time.monotonic() if started_s is None else started_s

    @property
    def lease(self) -> ControllerLease | None:
        """The lease this controller holds, whether or not its view is loaded yet."""
        return self._lease

    def start(self) -> None:
        self._events.start()
        self.store.watch_broker_ids(self.broker_changes.on_broker_ids)

    async def stop(self) -> None:
        self.deactivate()
        self.broker_changes.cancel()
        await self._events.stop()
        await self.requests.closed()

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
        self.requests.close()
        metrics = controller_metrics()
        for gauge in (metrics.offline_partitions, metrics.global_partition_count, metrics.global_topic_count,
                      metrics.active_broker_count):
            gauge.set(0)
        set_offline_replicas({})

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

    def reload(self) -> None:
        """The view may be wrong (an event was lost): read it again, resend everything."""
        if self._lease is not None:
            self._reload(self._lease)

    def _reload(self, lease: ControllerLease) -> None:
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
        self.requests.close()
        self.topics.forget_deletions()
        self.requests.open(context, brokers)
        # Brokers may have died or come back while no controller was active.
        changes = await self.broker_changes.reconcile(context)
        self.requests.send_changes(context, changes)
        for broker_id in context.brokers:
            self.requests.send_full_state(context, broker_id)
        self.update_gauges(context)
        log.info("controller %d is acting with controller epoch %d: live brokers %s, %d topics, "
                 "%d partitions, %d offline, %d topics being deleted, %d partitions being reassigned",
                 self.controller_id, lease.epoch, sorted(context.brokers), len(context.assignments),
                 len(context.states), context.offline_count(), len(context.deleting), len(context.reassigning()))
        # A deletion or reassignment the last controller left unfinished goes on.
        await self.topics.resume_deletions(context, marked)
        await self.reassignments.advance(context, context.reassigning())

    def update_gauges(self, context: ControllerContext) -> None:
        if context is not self._context:
            return
        metrics = controller_metrics()
        metrics.offline_partitions.set(context.offline_count())
        metrics.global_partition_count.set(len(context.states))
        metrics.global_topic_count.set(len(context.assignments))
        metrics.active_broker_count.set(len(context.brokers))
        set_offline_replicas(context.offline_replicas())

