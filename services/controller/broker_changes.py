"""Brokers coming and going, and the election pass they trigger.

A change of `/brokers/ids` (coalesced: a burst of changes is handled once)
runs as one event: the brokers gone leave the live set and the election pass
runs over every partition, then the brokers registered join it and the pass
runs again (a broker that registered again under a new broker epoch counts as
gone and back: it may have lost unflushed records). One LeaderAndIsr to each
affected broker and one UpdateMetadata round follow; each new broker gets its
full state. The same pass runs when a controller takes over and when a topic
starts to allow unclean elections.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from replog.controller.context import ControllerContext
from replog.controller.events import ControllerBusy, NotActive
from replog.core.partition_change import PartitionChange, reconcile_partition
from replog.core.topic_partition import TopicPartition
from replog.rpc.coalesce import CoalescingJob

if TYPE_CHECKING:
    from replog.controller.driver import Controller

log = logging.getLogger("replog.controller")


class BrokerChanges:
    def __init__(self, controller: Controller) -> None:
        self._controller = controller
        self._job = CoalescingJob(self._queue)

    def on_broker_ids(self, _ids: list[int]) -> None:
        """The /brokers/ids watch fired."""
        if self._controller.lease is not None:
            self._job.request()

    def cancel(self) -> None:
        self._job.cancel()

    async def _queue(self) -> None:
        try:
            await self._controller.run("broker change", self._handle)
        except NotActive:
            pass  # a controller taking over reads the live brokers itself
        except ControllerBusy as error:
            log.error("broker change not handled: %s; reloading the cluster state", error)
            self._controller.reload()
        except Exception:
            pass  # logged by run(), which reloads the cluster state

    async def _handle(self, context: ControllerContext) -> None:
        controller = self._controller
        current = await controller.store.live_brokers()
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
            controller.requests.close(gone)
            changes += await self.reconcile(context)
        if born:
            context.brokers = dict(current)
            controller.requests.open(context, born)
            changes += await self.reconcile(context)
        controller.requests.send_changes(context, changes)
        for broker_id in sorted(born):
            controller.requests.send_full_state(context, broker_id)
        controller.update_gauges(context)
        controller.topics.on_brokers_registered(context, born)
        await controller.reassignments.advance(context, context.reassigning())

    async def reconcile(self, context: ControllerContext,
                        partitions: Iterable[TopicPartition] | None = None) -> list[PartitionChange]:
        """One batched election pass over these partitions (all when None) for the current live brokers;
        the changes written. Telling the brokers is the caller's."""
        image = context.image()

        def recompute(partition: TopicPartition) -> PartitionChange | None:
            return reconcile_partition(partition, context.partition_state(partition), image,
                                       unclean_allowed=context.unclean_allowed(partition.topic))

        chosen = context.partitions() if partitions is None else partitions
        changes = [c for c in map(recompute, chosen) if c is not None]
        return await self._controller.writer.elect(context, changes, recompute)

    async def reconcile_topic(self, context: ControllerContext, topic: str) -> list[PartitionChange]:
        """The election pass for one topic (after its unclean.leader.election.enable changed)."""
        applied = await self.reconcile(context, context.topic_partitions(topic))
        self._controller.requests.send_changes(context, applied)
        self._controller.update_gauges(context)
        return applied
