"""AlterPartition at the active controller: leaders' ISR proposals, judged, written, answered.

Each proposal is judged by the core's rule (`replog.core.isr_judgement`, which
applies KIP-903's broker epochs); the accepted ones are written conditionally
in one multi. When ZooKeeper refuses it because one partition changed
meanwhile, the others are read again and judged again. Every answer carries the
partition's state; UpdateMetadata for the changed partitions goes to every
broker, and a reassignment whose target replicas are all in the ISR now finishes.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import TYPE_CHECKING

from replog.controller.context import ControllerContext
from replog.controller.events import NotActive
from replog.core.errors import ErrorCode
from replog.core.isr_judgement import ProposalOutcome, judge_isr_proposal
from replog.core.messages import AlterPartitionRequest
from replog.core.outcome import Rejection
from replog.core.partition_change import PartitionChange
from replog.core.topic_partition import TopicPartition

if TYPE_CHECKING:
    from replog.controller.driver import Controller

log = logging.getLogger("replog.controller")


class IsrChanges:
    def __init__(self, controller: Controller) -> None:
        self._controller = controller

    async def alter_partition(
        self, broker_id: int, broker_epoch: int, proposals: list[tuple[TopicPartition, AlterPartitionRequest]]
    ) -> tuple[Rejection | None, list[ProposalOutcome]]:
        """(None, one answer per proposal in request order), or a refusal of the whole request."""
        try:
            return await self._controller.run(
                "alter partition", lambda context: self._alter(context, broker_id, broker_epoch, proposals))
        except NotActive as error:
            return Rejection(ErrorCode.NOT_CONTROLLER, str(error)), []

    async def _alter(
        self, context: ControllerContext, broker_id: int, broker_epoch: int,
        proposals: list[tuple[TopicPartition, AlterPartitionRequest]],
    ) -> tuple[Rejection | None, list[ProposalOutcome]]:
        stale = context.stale_broker_epoch(broker_id, broker_epoch)
        if stale is not None:
            return stale, []
        outcomes: dict[TopicPartition, ProposalOutcome] = {}
        changes: list[PartitionChange] = []
        proposed: dict[TopicPartition, AlterPartitionRequest] = {}
        for partition, proposal in proposals:
            outcome, change = _judge(context, partition, proposal, proposed.keys())
            proposed.setdefault(partition, proposal)
            if change is not None:
                changes.append(change)
            elif outcome is not None:
                outcomes.setdefault(partition, outcome)

        def judge_again(partition: TopicPartition) -> PartitionChange | None:
            return _judge(context, partition, proposed[partition], ())[1]

        # A multi refused for one stale partition is refused whole: the others are judged again.
        applied = {c.partition: c for c in await self._controller.writer.write(context, changes, judge_again)}
        for change in changes:
            if change.partition in applied:
                written = applied[change.partition]
                log.info("ISR change proposed by broker %d: %s", broker_id, written.describe())
                outcomes[change.partition] = ProposalOutcome(change.partition, ErrorCode.NONE, "", written.after)
                continue
            outcome, _ = _judge(context, change.partition, proposed[change.partition], ())
            current = context.partition_state(change.partition) if change.partition in context.states else None
            outcomes[change.partition] = outcome or ProposalOutcome(
                change.partition, ErrorCode.INVALID_UPDATE_VERSION,
                "the partition state kept changing while the proposal was written; retry with the new state",
                current)
        if applied:
            self._controller.requests.send_metadata(context, list(applied))
            # A replica being added may just have joined the ISR: its reassignment may finish.
            reassigning = set(context.reassigning())
            await self._controller.reassignments.advance(context, [p for p in applied if p in reassigning])
        return None, [outcomes[p] for p, _ in proposals if p in outcomes]


def _judge(
    context: ControllerContext, partition: TopicPartition, proposal: AlterPartitionRequest,
    seen: Collection[TopicPartition],
) -> tuple[ProposalOutcome | None, PartitionChange | None]:
    """(None, the change to write) or (the answer, None)."""
    if partition in seen:
        return ProposalOutcome(partition, ErrorCode.INVALID_REQUEST, "the partition is proposed twice"), None
    if partition not in context.states:
        return ProposalOutcome(partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{partition} does not exist"), None
    state = context.partition_state(partition)
    outcome, change = judge_isr_proposal(partition, state, proposal, context.image())
    if outcome.error != ErrorCode.NONE:
        log.info("ISR proposal for %s from broker %d rejected: %s %s", partition, proposal.leader_id,
                 outcome.error.name, outcome.message)
    if change is None:
        return ProposalOutcome(partition, outcome.error, outcome.message, state), None
    return None, change
