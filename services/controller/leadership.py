"""Moving leadership on purpose: ElectLeaders, the periodic leader rebalance, controlled shutdown.

- ElectLeaders (`replog leader-election`): preferred — the first replica leads
  again when it is alive and in the ISR; unclean — a partition without a live
  leader takes any live replica, whatever the topic's
  unclean.leader.election.enable says (counted in
  replog_unclean_leader_elections_total when it came from outside the ISR).
- auto.leader.rebalance.enable: every leader.imbalance.check.interval.seconds,
  the brokers whose share of not-led preferred partitions is above
  leader.imbalance.per.broker.percentage get them back (Kafka's check).
- ControlledShutdown: a broker about to stop asks; each partition it leads goes
  to another live ISR member, it leaves every ISR (unless it is the last
  member), all in one batched write, one LeaderAndIsr per affected broker; the
  answer lists what it still leads. Until it is gone it is never elected nor
  let back into an ISR.

The rules are the core's (`replog.core.partition_change` over `replog.core.election`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from replog.controller.context import ControllerContext
from replog.controller.events import ControllerBusy
from replog.core import election
from replog.core.errors import ErrorCode
from replog.core.outcome import Outcome, Rejection
from replog.core.partition_change import PartitionChange, elect_on_request, shut_down_replica
from replog.core.topic_partition import TopicPartition
from replog.zk.store import ControllerLease

if TYPE_CHECKING:
    from replog.controller.driver import Controller

log = logging.getLogger("replog.controller")


@dataclasses.dataclass(frozen=True)
class RebalanceSettings:
    enabled: bool = True  # auto.leader.rebalance.enable
    check_interval_s: float = 300.0  # leader.imbalance.check.interval.seconds
    imbalance_percentage_max: int = 10  # leader.imbalance.per.broker.percentage


class Leadership:
    def __init__(self, controller: Controller, rebalance: RebalanceSettings) -> None:
        self._controller = controller
        self._rebalance = rebalance
        self._rebalancer: asyncio.Task[None] | None = None

    # -- ElectLeaders --------------------------------------------------------------------------

    async def elect_leaders(
        self, partitions: Sequence[TopicPartition] | None, *, unclean: bool
    ) -> tuple[Rejection | None, list[tuple[TopicPartition, Outcome]]]:
        """Elect for these partitions (None: every partition); one outcome per partition."""

        def failed(error: ErrorCode, message: str) -> tuple[Rejection | None, list[tuple[TopicPartition, Outcome]]]:
            return Rejection(error, message), []

        async def elect(context: ControllerContext) -> tuple[Rejection | None, list[tuple[TopicPartition, Outcome]]]:
            return None, await self._elect(context, partitions, unclean)

        return await self._controller.answer("elect leaders", elect, failed)

    async def _elect(self, context: ControllerContext, requested: Sequence[TopicPartition] | None,
                     unclean: bool) -> list[tuple[TopicPartition, Outcome]]:
        targets = list(context.partitions()) if requested is None else list(dict.fromkeys(requested))
        outcomes: dict[TopicPartition, Outcome] = {}
        changes: list[PartitionChange] = []
        image = context.image()

        def decide(partition: TopicPartition) -> PartitionChange | None:
            outcome, change = elect_on_request(partition, context.partition_state(partition), image, unclean=unclean)
            if change is None:
                outcomes[partition] = outcome
            return change

        for partition in targets:
            if partition not in context.states:
                outcomes[partition] = Outcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{partition} does not exist")
            elif (change := decide(partition)) is not None:
                changes.append(change)
        applied = await self._controller.writer.elect(context, changes, decide)
        for change in applied:
            outcomes[change.partition] = Outcome(ErrorCode.NONE)
        for change in changes:
            outcomes.setdefault(change.partition, Outcome(
                ErrorCode.UNKNOWN_SERVER_ERROR, "the partition state kept changing; retry"))
        self._controller.requests.send_changes(context, applied)
        self._controller.update_gauges(context)
        return [(p, outcomes[p]) for p in targets]

    # -- auto.leader.rebalance.enable ----------------------------------------------------------

    def start(self, lease: ControllerLease) -> None:
        self.stop()
        if self._rebalance.enabled:
            self._rebalancer = asyncio.get_running_loop().create_task(self._rebalance_forever(lease))

    def stop(self) -> None:
        if self._rebalancer is not None:
            self._rebalancer.cancel()
            self._rebalancer = None

    async def _rebalance_forever(self, lease: ControllerLease) -> None:
        while self._controller.holds(lease):
            await asyncio.sleep(self._rebalance.check_interval_s)
            try:
                await self._controller.run("leader rebalance", self._rebalance_leaders)
            except ControllerBusy as error:
                log.warning("leader rebalance skipped: %s", error)
            except Exception:
                pass  # not active (yet), or logged by run()

    async def _rebalance_leaders(self, context: ControllerContext) -> None:
        # Partitions being reassigned are left alone: their leader moves with the reassignment.
        moving = set(context.reassigning())
        states = {tp: context.partition_state(tp) for tp in context.states if tp not in moving}
        due = election.preferred_elections_due(states, context.image().electable,
                                               self._rebalance.imbalance_percentage_max)
        if due:
            log.info("leader imbalance above %d%%: moving %d leaderships back to their preferred replicas",
                     self._rebalance.imbalance_percentage_max, len(due))
            await self._elect(context, due, unclean=False)

    # -- ControlledShutdown --------------------------------------------------------------------

    async def controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> tuple[Rejection | None, list[TopicPartition]]:
        """Move the broker's leaderships and ISR places away; the partitions it still leads."""

        def failed(error: ErrorCode, message: str) -> tuple[Rejection | None, list[TopicPartition]]:
            return Rejection(error, message), []

        return await self._controller.answer(
            "controlled shutdown", lambda context: self._shut_down(context, broker_id, broker_epoch), failed)

    async def _shut_down(self, context: ControllerContext, broker_id: int,
                         broker_epoch: int) -> tuple[Rejection | None, list[TopicPartition]]:
        stale = context.stale_broker_epoch(broker_id, broker_epoch)
        if stale is not None:
            return stale, []
        registration = context.brokers[broker_id]
        if broker_id not in context.shutting_down:
            log.info("broker %d (broker epoch %d) is shutting down", broker_id, registration.broker_epoch)
        context.shutting_down[broker_id] = registration.broker_epoch
        image = context.image()

        def decide(partition: TopicPartition) -> PartitionChange | None:
            return shut_down_replica(partition, context.partition_state(partition), broker_id, image)

        hosted = context.hosted_by(broker_id)
        changes = [c for c in map(decide, hosted) if c is not None]
        applied = await self._controller.writer.elect(context, changes, decide)
        self._controller.requests.send_changes(context, applied)
        self._controller.update_gauges(context)
        remaining = [tp for tp in hosted if context.states[tp].state.leader == broker_id]
        log.info("controlled shutdown of broker %d: %d partitions changed, %d still led by it%s", broker_id,
                 len(applied), len(remaining), f" ({', '.join(map(str, remaining[:10]))})" if remaining else "")
        return None, remaining

