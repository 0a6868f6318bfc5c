"""Requests from the active controller to the brokers: StopReplica, LeaderAndIsr and UpdateMetadata.

The requests are built by `replog.rpc.broker_convert`; this module delivers them.

One `BrokerChannel` per live broker registration (a broker id at one broker
epoch), in the manner of Kafka's RequestSendThread: requests to one broker go
out in order, one at a time, each with a deadline, so a dead or paused broker
delays nobody else. What waits to be sent is kept per partition, newest state
winning, so a slow broker gets one request with the latest state of everything
rather than a backlog; the pending work is bounded by the partition count.

Pending StopReplicas go out before pending LeaderAndIsrs: a partition stopped
and then given to the broker again (a reassignment that comes back) must be
stopped first. Stopping a partition drops a LeaderAndIsr for it still waiting.
Whoever queues a StopReplica gets a future that tells when the broker answered.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import grpc

from replog.api.broker.v1 import broker_pb2, broker_pb2_grpc
from replog.api.common.v1 import common_pb2
from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition
from replog.rpc import broker_convert
from replog.rpc import channels as rpc_channels
from replog.rpc.server import channel_options
from replog.zk.store import BrokerRegistration

log = logging.getLogger("replog.controller")

RETRY_BACKOFF_S_MIN = 0.1
RETRY_BACKOFF_S_MAX = 5.0
# Transport failures worth another attempt; anything else is logged and dropped.
RETRIABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
             grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.CANCELLED)


class BrokerChannel:
    """The active controller's requests to one broker incarnation."""

    def __init__(
        self,
        registration: BrokerRegistration,
        *,
        controller_id: int,
        controller_epoch: int,
        timeout_s: float,
        message_bytes_max: int,
    ) -> None:
        self.registration = registration
        self._header = broker_convert.ControllerHeader(controller_id, controller_epoch, registration.broker_epoch)
        self._timeout_s = timeout_s
        self._channel = rpc_channels.aio_channel(
            f"{registration.host}:{registration.port}", channel_options(message_bytes_max))
        self._stub = broker_pb2_grpc.BrokerServiceStub(self._channel)
        self._leader_and_isr: dict[TopicPartition, broker_pb2.LeaderAndIsrPartitionState] = {}
        self._live_leaders: dict[int, common_pb2.BrokerEndpoint] = {}
        self._update_metadata: dict[TopicPartition, broker_pb2.UpdateMetadataPartitionState] = {}
        self._live_brokers: list[common_pb2.BrokerEndpoint] | None = None  # set: an UpdateMetadata is due
        self._stop_replica: dict[TopicPartition, broker_pb2.StopReplicaPartition] = {}
        # Each waiter: the partitions not yet answered, and the future to complete when none is left.
        self._stop_waiters: list[tuple[set[TopicPartition], asyncio.Future[bool]]] = []
        self._unimplemented_reported: set[str] = set()
        self._wake = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run())

    @property
    def broker_id(self) -> int:
        return self.registration.broker_id

    def queue_leader_and_isr(
        self, states: Iterable[broker_pb2.LeaderAndIsrPartitionState], leaders: Iterable[common_pb2.BrokerEndpoint]
    ) -> None:
        for state in states:
            self._leader_and_isr[TopicPartition(state.topic, state.partition)] = state
        for leader in leaders:
            self._live_leaders[leader.broker_id] = leader
        self._wake.set()

    def queue_stop_replica(
        self, partitions: Iterable[TopicPartition], *, delete: bool
    ) -> asyncio.Future[bool]:
        """Stop (and with delete, remove the logs of) these replicas. The future is True once the
        broker answered for every one of them, False if it refused the request or this channel
        closed first."""
        waiting: set[TopicPartition] = set()
        for partition in partitions:
            self._leader_and_isr.pop(partition, None)
            self._stop_replica[partition] = broker_convert.stop_replica_partition(partition, delete=delete)
            waiting.add(partition)
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        if not waiting:
            future.set_result(True)
            return future
        self._stop_waiters.append((waiting, future))
        self._wake.set()
        return future

    def queue_update_metadata(
        self, states: Iterable[broker_pb2.UpdateMetadataPartitionState], live_brokers: list[common_pb2.BrokerEndpoint]
    ) -> None:
        for state in states:
            self._update_metadata[TopicPartition(state.topic, state.partition)] = state
        self._live_brokers = live_brokers
        self._wake.set()

    async def close(self) -> None:
        self._task.cancel()
        self._finish_stop_waiters(False)
        await self._channel.close()

    async def _run(self) -> None:
        backoff_s = RETRY_BACKOFF_S_MIN
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._stop_replica or self._leader_and_isr or self._live_brokers is not None:
                try:
                    delivered = (await self._send_stop_replica() and await self._send_leader_and_isr()
                                 and await self._send_update_metadata())
                except Exception:
                    log.exception("broker %d: sending failed", self.broker_id)
                    delivered = False
                if delivered:
                    backoff_s = RETRY_BACKOFF_S_MIN
                    continue
                await asyncio.sleep(backoff_s)
                backoff_s = min(backoff_s * 2, RETRY_BACKOFF_S_MAX)

    async def _send_stop_replica(self) -> bool:
        if not self._stop_replica:
            return True
        partitions, self._stop_replica = self._stop_replica, {}
        request = broker_convert.stop_replica_request(self._header, partitions.values())
        response = await self._call("StopReplica", self._stub.StopReplica, request)
        if response is False:
            for key, partition in partitions.items():
                self._stop_replica.setdefault(key, partition)
            return False
        if response is None or ErrorCode.of(response.error_code) != ErrorCode.NONE:
            if response is not None:
                self._report(response.error_code, response.error_message, "StopReplica", len(partitions))
            self._finish_stop_waiters(False, partitions.keys())
            return True
        for result in response.partition_results:
            error = ErrorCode.of(result.error_code)
            if error != ErrorCode.NONE:
                log.warning("broker %d: StopReplica for %s-%d: %s %s", self.broker_id, result.topic,
                            result.partition, error.name, result.error_message)
        self._answered(partitions.keys())
        return True

    def _answered(self, partitions: Iterable[TopicPartition]) -> None:
        answered = set(partitions)
        remaining = []
        for waiting, future in self._stop_waiters:
            waiting -= answered
            if waiting:
                remaining.append((waiting, future))
            elif not future.done():
                future.set_result(True)
        self._stop_waiters = remaining

    def _finish_stop_waiters(self, result: bool, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Complete the waiters on these partitions (all when None) with result."""
        refused = None if partitions is None else set(partitions)
        remaining = []
        for waiting, future in self._stop_waiters:
            if refused is None or waiting & refused:
                if not future.done():
                    future.set_result(result)
            else:
                remaining.append((waiting, future))
        self._stop_waiters = remaining

    async def _send_leader_and_isr(self) -> bool:
        """Send what is pending; False when it must be retried (it is back in the pending set)."""
        if not self._leader_and_isr:
            return True
        states, self._leader_and_isr = self._leader_and_isr, {}
        leaders = [self._live_leaders[s.leader] for s in states.values() if s.leader in self._live_leaders]
        request = broker_convert.leader_and_isr_request(
            self._header, states.values(), {leader.broker_id: leader for leader in leaders}.values())
        response = await self._call("LeaderAndIsr", self._stub.LeaderAndIsr, request)
        if response is False:
            for key, state in states.items():
                self._leader_and_isr.setdefault(key, state)  # newer states queued meanwhile win
            return False
        if response is not None:
            self._report(response.error_code, response.error_message, "LeaderAndIsr", len(states))
            failed = [r for r in response.partition_results if ErrorCode.of(r.error_code) != ErrorCode.NONE]
            for result in failed[:10]:
                log.warning("broker %d: LeaderAndIsr for %s-%d failed: %s %s", self.broker_id, result.topic,
                            result.partition, ErrorCode.of(result.error_code).name, result.error_message)
        return True

    async def _send_update_metadata(self) -> bool:
        if self._live_brokers is None:
            return True
        states, self._update_metadata = self._update_metadata, {}
        live_brokers, self._live_brokers = self._live_brokers, None
        request = broker_convert.update_metadata_request(self._header, states.values(), live_brokers)
        response = await self._call("UpdateMetadata", self._stub.UpdateMetadata, request)
        if response is False:
            for key, state in states.items():
                self._update_metadata.setdefault(key, state)
            if self._live_brokers is None:
                self._live_brokers = live_brokers
            return False
        if response is not None:
            self._report(response.error_code, response.error_message, "UpdateMetadata", len(states))
        return True

    async def _call(self, rpc: str, method: Callable[..., Awaitable[Any]], request: Any) -> Any:
        """The response; None when the call failed in a way not worth retrying; False to retry."""
        try:
            return await method(request, timeout=self._timeout_s)
        except grpc.aio.AioRpcError as error:
            code = error.code()
        if code in RETRIABLE:
            log.info("broker %d: %s not delivered (%s); will retry", self.broker_id, rpc, code.name)
            return False
        if code == grpc.StatusCode.UNIMPLEMENTED:
            # A broker without this RPC yet: the state stays in ZooKeeper and reaches it
            # in full when it registers again.
            if rpc not in self._unimplemented_reported:
                self._unimplemented_reported.add(rpc)
                log.warning("broker %d does not implement %s; carrying on without it", self.broker_id, rpc)
            return None
        log.error("broker %d: %s failed with %s; dropped", self.broker_id, rpc, code.name)
        return None

    def _report(self, error_code: int, message: str, rpc: str, partitions: int) -> None:
        error = ErrorCode.of(error_code)
        if error == ErrorCode.NONE:
            log.debug("broker %d: %s with %d partitions applied", self.broker_id, rpc, partitions)
            return
        log.warning("broker %d refused %s (controller epoch %d, broker epoch %d): %s %s", self.broker_id, rpc,
                    self._header.controller_epoch, self.registration.broker_epoch, error.name, message)
