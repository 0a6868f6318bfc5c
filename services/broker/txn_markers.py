"""Sending the transaction coordinators' markers (WriteTxnMarkers) to the partitions' leaders.

Each marker goes to the leader of its partition as this broker's metadata cache
knows it now; the markers waiting for the same broker, of any transaction, go
out together in one request, and those that arrive meanwhile go in the next
one. Every partition's answer goes back to whoever asked (`answered`), whose
core decides what it means: written, fenced, or to be sent again. A marker sent
again waits first, a backoff that doubles up to MARKER_BACKOFF_MAX_S, and is
routed anew (a leader that moved is found through the refreshed metadata). A
partition without a known leader, or a broker that does not answer, is
answered NOT_LEADER_OR_FOLLOWER or NETWORK_EXCEPTION to the asker, which asks
again. A partition this broker has not heard of for MARKER_UNKNOWN_PARTITION_S
belongs to a deleted topic: its marker counts as written, as in Kafka.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import grpc

from replog.api.broker.v1 import broker_pb2, broker_pb2_grpc
from replog.broker.broker_channels import BrokerChannels
from replog.broker.partitions import Partitions
from replog.broker.produce import MARKER_TIMEOUT_MS, handle_write_txn_markers
from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition
from replog.core.txn.requests import WriteMarkers
from replog.rpc.coordinator_convert import grouped

log = logging.getLogger("replog.broker")

MARKER_BACKOFF_S = 0.05
MARKER_BACKOFF_MAX_S = 1.0
# A leader appends a marker with acks=all and answers within MARKER_TIMEOUT_MS; the call may take a little longer.
MARKER_RPC_TIMEOUT_S = MARKER_TIMEOUT_MS / 1000 + 5
MARKER_UNKNOWN_PARTITION_S = 60.0


@dataclass
class MarkerItem:
    """One partition's marker on its way; `owner` (the coordinator shard that asked) hears the answer."""

    owner: object
    marker: WriteMarkers
    partition: TopicPartition
    attempts: int = 0
    since: float = field(default_factory=time.monotonic)


Answered = Callable[[MarkerItem, ErrorCode], None]


def backoff_s(attempts: int) -> float:
    return min(MARKER_BACKOFF_S * 2 ** max(attempts - 1, 0), MARKER_BACKOFF_MAX_S)


class _BrokerQueue:
    def __init__(self) -> None:
        self.items: list[MarkerItem] = []
        self.wake = asyncio.Event()
        self.task: asyncio.Task[None] | None = None


class MarkerSender:
    def __init__(self, broker_id: int, partitions: Partitions, channels: BrokerChannels) -> None:
        self._broker_id = broker_id
        self._partitions = partitions
        self._channels = channels
        self._queues: dict[int, _BrokerQueue] = {}
        self._timers: set[asyncio.TimerHandle] = set()
        self.answered: Answered = lambda item, error: None

    def send(self, owner: object, markers: Iterable[WriteMarkers], attempts: int = 0,
             since: float | None = None) -> None:
        """Send each partition's marker; after a first attempt, once the backoff has passed."""
        for marker in markers:
            for partition in sorted(marker.partitions):
                item = MarkerItem(owner, marker, partition, attempts, time.monotonic() if since is None else since)
                if attempts == 0:
                    self._route(item)
                else:
                    self._later(backoff_s(attempts), item)

    async def stop(self) -> None:
        for timer in self._timers:
            timer.cancel()
        for queue in self._queues.values():
            if queue.task is not None:
                queue.task.cancel()

    def _later(self, delay_s: float, item: MarkerItem) -> None:
        def fire() -> None:
            self._timers.discard(handle)
            self._route(item)
        handle = asyncio.get_running_loop().call_later(delay_s, fire)
        self._timers.add(handle)

    def _route(self, item: MarkerItem) -> None:
        metadata = self._partitions.metadata
        if item.partition not in metadata:
            if time.monotonic() - item.since >= MARKER_UNKNOWN_PARTITION_S:
                log.warning("%s is unknown (its topic was deleted): its %s marker for producer %d counts as written",
                            item.partition, "COMMIT" if item.marker.commit else "ABORT", item.marker.producer_id)
                self.answered(item, ErrorCode.NONE)
            else:
                self.answered(item, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            return
        leader = metadata.leader_of(item.partition)
        if leader is None:
            self.answered(item, ErrorCode.NOT_LEADER_OR_FOLLOWER)
            return
        queue = self._queues.get(leader.broker_id)
        if queue is None:
            queue = self._queues[leader.broker_id] = _BrokerQueue()
            queue.task = asyncio.get_running_loop().create_task(self._drain(leader.broker_id, queue))
        queue.items.append(item)
        queue.wake.set()

    async def _drain(self, broker_id: int, queue: _BrokerQueue) -> None:
        """Send what waits for the broker, one request at a time; what arrives meanwhile goes in the next."""
        while True:
            await queue.wake.wait()
            queue.wake.clear()
            items, queue.items = queue.items, []
            if items:
                await self._deliver(broker_id, items)

    async def _deliver(self, broker_id: int, items: list[MarkerItem]) -> None:
        request, places = _request(items)
        try:
            if broker_id == self._broker_id:
                response = await handle_write_txn_markers(self._partitions, request)
            else:
                address = self._partitions.metadata.address_of(broker_id)
                if address is None:
                    raise ConnectionError(f"broker {broker_id} has no known address")
                response = await broker_pb2_grpc.BrokerServiceStub(self._channels.get(address)).WriteTxnMarkers(
                    request, timeout=MARKER_RPC_TIMEOUT_S)
        except (grpc.aio.AioRpcError, ConnectionError) as error:
            reason = error.code().name if isinstance(error, grpc.aio.AioRpcError) else str(error)
            log.info("WriteTxnMarkers to broker %d failed (%s); %d markers go again", broker_id, reason, len(items))
            for item in items:
                self.answered(item, ErrorCode.NETWORK_EXCEPTION)
            return
        errors = {(index, TopicPartition(r.topic, r.partition)): ErrorCode.of(r.error_code)
                  for index, marker in enumerate(response.markers) for r in marker.results}
        for item, place in zip(items, places):
            self.answered(item, errors.get(place, ErrorCode.UNKNOWN_SERVER_ERROR))


def _request(items: list[MarkerItem]) -> tuple[broker_pb2.WriteTxnMarkersRequest, list[tuple[int, TopicPartition]]]:
    """One request for the items: one marker entry per transaction end, its partitions by topic; and where
    each item's answer is (the entry's index, the partition)."""
    request = broker_pb2.WriteTxnMarkersRequest()
    entries: dict[tuple[int, int, int, bool], tuple[int, list[TopicPartition]]] = {}
    places = []
    for item in items:
        marker = item.marker
        key = (marker.producer_id, marker.producer_epoch, marker.coordinator_epoch, marker.commit)
        if key not in entries:
            entries[key] = (len(entries), [])
        index, partitions = entries[key]
        partitions.append(item.partition)
        places.append((index, item.partition))
    for (producer_id, producer_epoch, coordinator_epoch, commit), (_, partitions) in entries.items():
        request.markers.add(producer_id=producer_id, producer_epoch=producer_epoch, committed=commit,
                            coordinator_epoch=coordinator_epoch, topics=grouped(partitions))
    return request, places
