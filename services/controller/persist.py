"""Writing the partition states the controller decided: conditional multis, re-read and decide again.

Every write names the version of each state znode this view read, so a state
changed behind the controller's back is refused, read again and, when the
caller says how, decided again: at most PERSIST_ROUNDS_MAX rounds. Leadership
changes go first: when a pass takes more than one multi (a broker's death
leaves a thousand ISRs as well), the new leaders, which clients wait for, land
with the first.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from replog.controller.context import ControllerContext
from replog.controller.metrics import count_elections
from replog.core.partition_change import PartitionChange
from replog.core.topic_partition import TopicPartition
from replog.zk.store import MetadataStore, WriteOutcomeUnknown

log = logging.getLogger("replog.controller")

# Conditional writes that keep conflicting are given up after this many rounds of re-reading.
PERSIST_ROUNDS_MAX = 5

# Decide a partition again on its fresh state (None: nothing to change any more).
Recompute = Callable[[TopicPartition], PartitionChange | None]


class StateWriter:
    def __init__(self, store: MetadataStore, event_started_s: Callable[[], float] = time.monotonic) -> None:
        self._store = store
        self._event_started_s = event_started_s

    async def write(
        self, context: ControllerContext, changes: list[PartitionChange], recompute: Recompute | None
    ) -> list[PartitionChange]:
        """Write the changes conditionally; on conflicts re-read and, with recompute, decide again.

        Returns the changes that are now in ZooKeeper, and the view matches them.
        """
        applied: list[PartitionChange] = []
        pending = sorted(changes, key=lambda change: not change.leader_changed)
        for _ in range(PERSIST_ROUNDS_MAX):
            if not pending:
                break
            writes = [context.state_write(c) for c in pending]
            try:
                committed = (await self._store.write_partition_states(context.lease, writes)).committed
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

    async def elect(
        self, context: ControllerContext, changes: list[PartitionChange], recompute: Recompute | None
    ) -> list[PartitionChange]:
        """Write leadership changes and count the elections among them."""
        applied = await self.write(context, changes, recompute)
        count_elections(applied, time.monotonic() - self._event_started_s())
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
            if context.partition_state(change.partition) == change.after:
                applied.append(change)  # the write whose outcome was unknown did happen
            elif recompute is not None and (decided := recompute(change.partition)) is not None:
                again.append(decided)
        return again
