"""The broker's line to the active controller: AlterPartition proposals, batched.

Where the controller is comes from the /controller znode (watched). Proposals
from all partitions that arrive while a request is in flight go out together
in the next one, so an ISR change affecting many partitions costs one RPC.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import grpc

from replog.api.controller.v1 import controller_pb2, controller_pb2_grpc
from replog.core.errors import ErrorCode
from replog.core.messages import AlterPartitionRequest, AlterPartitionResponse
from replog.core.topic_partition import TopicPartition
from replog.core.topic_plan import NewTopic, TopicOutcome
from replog.rpc import channels, controller_convert
from replog.rpc.server import channel_options
from replog.zk.store import ControllerInfo

log = logging.getLogger("replog.broker")

ALTER_PARTITION_TIMEOUT_S = 10.0
RETRY_BACKOFF_S = 0.5
# What a controlled shutdown reports as still led when the controller never answered.
UNKNOWN_REMAINING = TopicPartition("?", -1)

# A proposal's identity: (topic, partition, proposal id the core gave it).
ProposalKey = tuple[str, int, int]
AnswerHandler = Callable[[ProposalKey, AlterPartitionResponse], None]


class ControllerChannel:
    def __init__(self, broker_id: int, max_message_bytes: int, on_answer: AnswerHandler) -> None:
        self._broker_id = broker_id
        self._options = channel_options(max_message_bytes)
        self._on_answer = on_answer
        self.broker_epoch = -1
        self._controller: ControllerInfo | None = None
        self._channel: grpc.aio.Channel | None = None
        self._pending: dict[tuple[str, int], tuple[int, AlterPartitionRequest]] = {}
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
        if self._channel is not None:
            await self._channel.close()

    def controller_changed(self, controller: ControllerInfo | None) -> None:
        if controller != self._controller and self._channel is not None:
            asyncio.get_running_loop().create_task(self._channel.close())
            self._channel = None
        self._controller = controller
        self._wakeup.set()

    async def controlled_shutdown(self, attempts: int, backoff_s: float) -> list[TopicPartition]:
        """Ask the controller to move this broker's leaderships away; returns what it still leads.

        Kafka's controlled shutdown: with the leaderships moved first, stopping
        the broker makes no partition unavailable, so a rolling restart is
        invisible to producers and consumers.
        """
        remaining = [UNKNOWN_REMAINING]
        for attempt in range(1, attempts + 1):
            controller = self._controller
            if controller is None:
                log.warning("controlled shutdown: no active controller known (attempt %d of %d)", attempt, attempts)
            else:
                try:
                    remaining = await self._ask_to_shut_down(controller)
                except grpc.aio.AioRpcError as error:
                    log.warning("controlled shutdown attempt %d of %d failed: %s", attempt, attempts,
                                error.code().name)
                else:
                    if not remaining:
                        return []
                    log.warning("controlled shutdown attempt %d of %d: still leading %d partitions",
                                attempt, attempts, len(remaining))
            if attempt < attempts:
                await asyncio.sleep(backoff_s)
        return remaining

    async def _ask_to_shut_down(self, controller: ControllerInfo) -> list[TopicPartition]:
        stub = controller_pb2_grpc.ControllerServiceStub(self._channel_to(controller))
        response = await stub.ControlledShutdown(
            controller_convert.controlled_shutdown_request(self._broker_id, self.broker_epoch),
            timeout=ALTER_PARTITION_TIMEOUT_S,
        )
        error = ErrorCode.of(response.error_code)
        if error != ErrorCode.NONE:
            log.warning("controlled shutdown refused: %s %s", error.name, response.error_message)
            return [UNKNOWN_REMAINING]
        return controller_convert.remaining_partitions(response)

    async def create_topic(self, topic: NewTopic) -> TopicOutcome:
        """Ask the active controller to create a topic (the internal ones, on first use)."""
        controller = self._controller
        if controller is None:
            return TopicOutcome(topic.name, ErrorCode.NOT_CONTROLLER, "no active controller is known")
        stub = controller_pb2_grpc.ControllerServiceStub(self._channel_to(controller))
        try:
            response = await stub.CreateTopics(controller_convert.create_topics_request([topic], 0),
                                               timeout=ALTER_PARTITION_TIMEOUT_S)
        except grpc.aio.AioRpcError as error:
            return TopicOutcome(topic.name, ErrorCode.NOT_CONTROLLER, f"the controller answered {error.code().name}")
        [outcome] = controller_convert.topic_outcomes(response)
        return outcome

    def _channel_to(self, controller: ControllerInfo) -> grpc.aio.Channel:
        """The channel to the active controller (the one /controller named last)."""
        if self._channel is None:
            self._channel = channels.aio_channel(f"{controller.host}:{controller.port}", self._options)
        return self._channel

    def propose(self, topic: str, partition: int, proposal_id: int, request: AlterPartitionRequest) -> None:
        """Queue a proposal; a newer one for the same partition replaces an unsent older one."""
        self._pending[(topic, partition)] = (proposal_id, request)
        self._wakeup.set()

    async def _run(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            controller = self._controller
            if not self._pending or controller is None:
                continue
            batch, self._pending = self._pending, {}
            try:
                response = await self._send(controller, batch)
            except grpc.aio.AioRpcError as error:
                log.warning("AlterPartition to controller %d failed (%s); retrying",
                            controller.controller_id, error.code().name)
                self._requeue(batch)
                await asyncio.sleep(RETRY_BACKOFF_S)
                continue
            self._deliver(batch, response)

    def _requeue(self, batch: dict[tuple[str, int], tuple[int, AlterPartitionRequest]]) -> None:
        for key, value in batch.items():
            self._pending.setdefault(key, value)
        self._wakeup.set()

    async def _send(
        self, controller: ControllerInfo, batch: dict[tuple[str, int], tuple[int, AlterPartitionRequest]]
    ) -> controller_pb2.AlterPartitionResponse:
        request = controller_convert.alter_partition_request(
            self._broker_id, self.broker_epoch,
            ((TopicPartition(topic, partition), proposal) for (topic, partition), (_, proposal) in batch.items()))
        stub = controller_pb2_grpc.ControllerServiceStub(self._channel_to(controller))
        return await stub.AlterPartition(request, timeout=ALTER_PARTITION_TIMEOUT_S)

    def _deliver(self, batch: dict[tuple[str, int], tuple[int, AlterPartitionRequest]],
                 response: controller_pb2.AlterPartitionResponse) -> None:
        whole = ErrorCode.of(response.error_code)
        if whole in (ErrorCode.NOT_CONTROLLER, ErrorCode.STALE_CONTROLLER_EPOCH):
            # The controller moved; the watch on /controller will point us at the new one.
            self._requeue(batch)
            return
        results = {(r.topic, r.partition): r for r in response.partitions}
        for key, (proposal_id, _) in batch.items():
            result = results.get(key)
            if whole != ErrorCode.NONE or result is None:
                answer = AlterPartitionResponse(whole if whole != ErrorCode.NONE else ErrorCode.UNKNOWN_SERVER_ERROR)
            else:
                answer = controller_convert.alter_partition_response(result)
            self._on_answer((key[0], key[1], proposal_id), answer)
