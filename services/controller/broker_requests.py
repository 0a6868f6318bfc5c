"""Telling the brokers: one channel per live broker registration, and what goes out on them.

Requests go out only for the controller's current view: an event that
outlived its view (the controller lost its lease, or read everything again)
sends nothing, since the channels belong to a newer view. Every send comes
after the ZooKeeper write it reports (persist, then send).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from replog.api.broker.v1 import broker_pb2
from replog.api.common.v1 import common_pb2
from replog.controller.channels import BrokerChannel
from replog.controller.context import ControllerContext, partitions_of
from replog.core.messages import NO_LEADER
from replog.core.partition_change import PartitionChange
from replog.core.topic_partition import TopicPartition
from replog.rpc.broker_convert import (
    broker_endpoint,
    deleted_partition_state,
    leader_and_isr_state,
    update_metadata_state,
)

log = logging.getLogger("replog.controller")


class BrokerRequests:
    def __init__(self, current_view: Callable[[], ControllerContext | None], *, controller_id: int,
                 timeout_s: float, message_bytes_max: int) -> None:
        self._current_view = current_view
        self._controller_id = controller_id
        self._timeout_s = timeout_s
        self._message_bytes_max = message_bytes_max
        self._channels: dict[int, BrokerChannel] = {}
        self._closing: set[asyncio.Task[None]] = set()

    # -- channels ------------------------------------------------------------------------------

    def open(self, context: ControllerContext, brokers: Iterable[int]) -> None:
        """Channels to these live brokers of the view, at its controller epoch."""
        for broker_id in brokers:
            self._channels[broker_id] = BrokerChannel(
                context.brokers[broker_id], controller_id=self._controller_id,
                controller_epoch=context.controller_epoch, timeout_s=self._timeout_s,
                message_bytes_max=self._message_bytes_max,
            )

    def close(self, broker_ids: Iterable[int] | None = None) -> None:
        """Close the channels to these brokers (to all when None); what they still hold is dropped."""
        for broker_id in list(self._channels if broker_ids is None else broker_ids):
            channel = self._channels.pop(broker_id, None)
            if channel is not None:
                task = asyncio.get_running_loop().create_task(channel.close())
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)

    async def closed(self) -> None:
        """Wait until every channel closed so far has finished closing."""
        await asyncio.gather(*self._closing, return_exceptions=True)

    # -- requests ------------------------------------------------------------------------------

    def send_changes(self, context: ControllerContext, changes: list[PartitionChange]) -> None:
        """One LeaderAndIsr to each live replica of a changed partition, one UpdateMetadata to all."""
        latest = {c.partition: c for c in changes}
        for change in latest.values():
            log.log(logging.WARNING if change.after.leader == NO_LEADER or change.unclean else logging.INFO,
                    "%s", change.describe())
        self.send_partitions(context, sorted(latest), is_new=False)

    def send_partitions(self, context: ControllerContext, partitions: list[TopicPartition], *, is_new: bool) -> None:
        if context is not self._current_view():
            return
        live = _live_endpoints(context)
        for broker_id, channel in self._channels.items():
            states = [_leader_and_isr(context, tp, is_new) for tp in partitions if broker_id in context.replicas(tp)]
            if states:
                channel.queue_leader_and_isr(states, live)
        self.send_metadata(context, partitions)

    def send_metadata(self, context: ControllerContext, partitions: list[TopicPartition]) -> None:
        if context is not self._current_view():
            return
        states = [_update_metadata(context, tp) for tp in partitions]
        live = _live_endpoints(context)
        for channel in self._channels.values():
            channel.queue_update_metadata(states, live)

    def send_deletion(self, context: ControllerContext, topic: str) -> None:
        """Tell every broker the topic is being deleted: from now on it is unknown to them."""
        if context is not self._current_view():
            return
        assignment = context.deleting[topic]
        states = [deleted_partition_state(tp, assignment.topic_id, assignment.replicas(tp.partition))
                  for tp in partitions_of(topic, assignment)]
        live = _live_endpoints(context)
        for channel in self._channels.values():
            channel.queue_update_metadata(states, live)

    def send_full_state(self, context: ControllerContext, broker_id: int) -> None:
        """Everything a broker needs after it (or this controller) starts: its partitions, all metadata."""
        channel = self._channels.get(broker_id)
        if channel is None or context is not self._current_view():
            return
        live = _live_endpoints(context)
        channel.queue_leader_and_isr([_leader_and_isr(context, tp, False) for tp in context.hosted_by(broker_id)],
                                     live)
        channel.queue_update_metadata([_update_metadata(context, tp) for tp in context.partitions()], live)

    def stop_replicas(
        self, context: ControllerContext, broker_id: int, partitions: list[TopicPartition], *, delete: bool
    ) -> asyncio.Future[bool] | None:
        """StopReplica to one live broker; None when it has no channel (it is not live)."""
        channel = self._channels.get(broker_id)
        if channel is None or context is not self._current_view():
            return None
        return channel.queue_stop_replica(partitions, delete=delete)


def _live_endpoints(context: ControllerContext) -> list[common_pb2.BrokerEndpoint]:
    return [broker_endpoint(context.brokers[b]) for b in sorted(context.brokers)]


def _leader_and_isr(
    context: ControllerContext, partition: TopicPartition, is_new: bool
) -> broker_pb2.LeaderAndIsrPartitionState:
    return leader_and_isr_state(partition, context.topic_id(partition.topic), context.states[partition].state,
                                context.replicas(partition), is_new=is_new, adding=context.adding(partition),
                                removing=context.removing(partition))


def _update_metadata(context: ControllerContext, partition: TopicPartition) -> broker_pb2.UpdateMetadataPartitionState:
    return update_metadata_state(partition, context.topic_id(partition.topic), context.states[partition].state,
                                 context.replicas(partition), context.brokers)
