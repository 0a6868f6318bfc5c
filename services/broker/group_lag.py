"""`replog_consumergroup_lag`: how far each group's committed offsets are behind, served by the broker
that coordinates the group.

Every few seconds the committed offsets of the groups coordinated here are set
against each partition's high watermark (what a consumer can read): from the
partition's driver when this broker leads it, else from its leader with one
ListOffsets per leader. A partition whose leader does not answer is left out
of that round.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

import grpc

from replog.api.broker.v1 import broker_pb2_grpc
from replog.broker import metrics
from replog.broker.group_coordinator import GroupCoordinators
from replog.broker.partitions import Partitions
from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition
from replog.rpc import channels
from replog.rpc.broker_convert import latest_offsets_request
from replog.rpc.server import channel_options

log = logging.getLogger("replog.broker")

LAG_INTERVAL_S = 5.0
LIST_OFFSETS_TIMEOUT_S = 5.0


class GroupLagReporter:
    def __init__(self, coordinators: GroupCoordinators, partitions: Partitions, message_bytes_max: int) -> None:
        self._coordinators = coordinators
        self._partitions = partitions
        self._options = channel_options(message_bytes_max)
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._reported: set[tuple[str, str, str]] = set()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        for channel in self._channels.values():
            await channel.close()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(LAG_INTERVAL_S)
            try:
                await self.report()
            except Exception:  # a round that fails is logged; the next one tries again
                log.exception("consumer group lag not reported this round")

    async def report(self) -> None:
        committed: dict[TopicPartition, list[tuple[str, int]]] = {}
        for shard in self._coordinators.all_shards():
            for group_id in shard.offsets.group_ids():
                for tp, value in shard.offsets.of(group_id).items():
                    committed.setdefault(tp, []).append((group_id, value.offset))
        ends = await self._high_watermarks(committed)
        series = set()
        for tp, entries in committed.items():
            end = ends.get(tp)
            if end is None:
                continue
            for group_id, offset in entries:
                labels = (group_id, tp.topic, str(tp.partition))
                metrics.CONSUMERGROUP_LAG.labels(*labels).set(max(end - offset, 0))
                series.add(labels)
        for labels in self._reported - series:
            metrics.CONSUMERGROUP_LAG.remove(*labels)
        self._reported = series

    async def _high_watermarks(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        ends: dict[TopicPartition, int] = {}
        elsewhere: dict[str, list[TopicPartition]] = {}
        metadata = self._partitions.metadata
        for tp in partitions:
            driver = self._partitions.by_name.get(tp)
            if driver is not None and driver.is_leader:
                ends[tp] = driver.replica.high_watermark
                continue
            leader = metadata.leader_of(tp)
            if leader is not None:
                elsewhere.setdefault(leader.address, []).append(tp)
        answers = await asyncio.gather(*(self._ask(address, tps) for address, tps in elsewhere.items()))
        for answer in answers:
            ends.update(answer)
        return ends

    async def _ask(self, address: str, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        channel = self._channels.get(address)
        if channel is None:
            channel = self._channels[address] = channels.aio_channel(address, self._options)
        try:
            response = await broker_pb2_grpc.BrokerServiceStub(channel).ListOffsets(
                latest_offsets_request(partitions), timeout=LIST_OFFSETS_TIMEOUT_S)
        except grpc.aio.AioRpcError as error:
            log.debug("lag: ListOffsets at %s failed: %s", address, error.code().name)
            return {}
        return {TopicPartition(topic.topic, p.partition): p.offset for topic in response.topics
                for p in topic.partitions if ErrorCode.of(p.error_code) == ErrorCode.NONE}

