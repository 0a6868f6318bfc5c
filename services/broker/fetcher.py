"""Followers pull: one fetch session per leader covers every partition this broker follows there.

Each follower core asks for its next fetch (SendFetch); the fetcher of that
leader gathers the asks of all its partitions into one long-polling fetch and
hands each partition its part of the answer. The fetches travel on one
FetchStream to the leader, kept open from fetch to fetch: a stream message
costs a fraction of a call, and this round trip is on every acks=all write's path.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import grpc

from replog.api.broker.v1 import broker_pb2, broker_pb2_grpc
from replog.broker.partition import PartitionDriver
from replog.broker.partitions import Partitions, now_ms
from replog.core.epoch_cache import EpochEndOffset
from replog.core.errors import ErrorCode
from replog.core.messages import FetchResponse, SendFetch
from replog.core.records import BatchInfo
from replog.protocol.batch import read_header
from replog.protocol.layout import HEADER_SIZE
from replog.rpc.request_stream import RequestStream, StreamError
from replog.rpc.server import channel_options

log = logging.getLogger("replog.broker")

# The whole response's size bound (Kafka's replica.fetch.response.max.bytes).
FETCH_RESPONSE_BYTES_MAX = 10 * 1024 * 1024
# Added to the long-poll wait for the RPC deadline.
FETCH_DEADLINE_SLACK_S = 5.0
FAILURE_BACKOFF_S = 0.2


class LeaderFetcher:
    def __init__(self, partitions: Partitions, leader_id: int, address: Callable[[], str | None],
                 broker_epoch: Callable[[], int], max_message_bytes: int) -> None:
        self._partitions = partitions
        self.leader_id = leader_id
        self._address = address
        self._broker_epoch = broker_epoch
        self._options = channel_options(max_message_bytes)
        self._pending: dict[tuple[str, int], tuple[PartitionDriver, SendFetch]] = {}
        self._wakeup = asyncio.Event()
        self._channel: grpc.aio.Channel | None = None
        self._channel_address: str | None = None
        self._stream: RequestStream | None = None
        self._task = asyncio.get_running_loop().create_task(self._run())

    def add(self, driver: PartitionDriver, message: SendFetch) -> None:
        self._pending[(driver.topic, driver.partition)] = (driver, message)
        self._wakeup.set()

    async def stop(self) -> None:
        self._task.cancel()
        self._close_stream()
        if self._channel is not None:
            await self._channel.close()

    async def _run(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            if not self._pending:
                continue
            batch, self._pending = self._pending, {}
            batch = {k: v for k, v in batch.items() if self._partitions.by_name.get(k) is v[0]}
            if batch:
                await self._fetch(batch)

    async def _fetch(self, batch: dict[tuple[str, int], tuple[PartitionDriver, SendFetch]]) -> None:
        stream = self._stream_to_leader()
        if stream is None:
            self._fail(batch, "no address known")
            await asyncio.sleep(FAILURE_BACKOFF_S)
            return
        message = broker_pb2.FetchStreamRequest()
        request = self._request(batch, message.request)
        try:
            answer = await stream.request(message, request.max_wait_ms / 1000 + FETCH_DEADLINE_SLACK_S)
        except StreamError as error:
            self._fail(batch, str(error))
            await asyncio.sleep(FAILURE_BACKOFF_S)
            return
        self._deliver(batch, answer.response)

    def _stream_to_leader(self) -> RequestStream | None:
        """The FetchStream to the leader's current address (a new one when the address changed)."""
        address = self._address()
        if address is None:
            return None
        if address != self._channel_address:
            self._close_stream()
            if self._channel is not None:
                asyncio.get_running_loop().create_task(self._channel.close())
            channel = self._channel = grpc.aio.insecure_channel(address, options=self._options)
            self._channel_address = address
            self._stream = RequestStream(lambda: broker_pb2_grpc.BrokerServiceStub(channel).FetchStream())
        return self._stream

    def _close_stream(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def _request(self, batch: dict[tuple[str, int], tuple[PartitionDriver, SendFetch]],
                 request: broker_pb2.FetchRequest) -> broker_pb2.FetchRequest:
        """Fill `request` (a stream message's) with the fetch of every partition in the batch."""
        messages = [message for _, message in batch.values()]
        request.replica_id = self._partitions.broker_id
        request.replica_epoch = self._broker_epoch()
        request.max_wait_ms = min(m.request.max_wait_ms for m in messages)
        request.min_bytes = 1
        request.max_bytes = FETCH_RESPONSE_BYTES_MAX
        topics: dict[str, broker_pb2.FetchTopic] = {}
        for (topic, partition), (_, message) in batch.items():
            fetch_topic = topics.get(topic)
            if fetch_topic is None:
                fetch_topic = topics[topic] = request.topics.add(topic=topic)
            asked = message.request
            fetch_topic.partitions.add(
                partition=partition, current_leader_epoch=asked.current_leader_epoch,
                fetch_offset=asked.fetch_offset, last_fetched_epoch=asked.last_fetched_epoch,
                partition_max_bytes=asked.max_bytes,
            )
        return request

    def _fail(self, batch: dict[tuple[str, int], tuple[PartitionDriver, SendFetch]], why: str) -> None:
        log.debug("fetch from broker %d failed: %s", self.leader_id, why)
        now = now_ms()
        for driver, message in batch.values():
            driver.replica.handle_fetch_failure(message.fetch_id, now)
            self._partitions.apply(driver, now)

    def _deliver(self, batch: dict[tuple[str, int], tuple[PartitionDriver, SendFetch]],
                 response: broker_pb2.FetchResponse) -> None:
        now = now_ms()
        answered = set()
        for topic_response in response.topics:
            for result in topic_response.partitions:
                key = (topic_response.topic, result.partition)
                entry = batch.get(key)
                if entry is None or self._partitions.by_name.get(key) is not entry[0]:
                    continue
                driver, message = entry
                answered.add(key)
                driver.replica.handle_fetch_response(message.fetch_id, _fetch_response(result), now)
                self._partitions.apply(driver, now)
        unanswered = {k: v for k, v in batch.items() if k not in answered}
        if unanswered:
            self._fail(unanswered, "partition missing from the response")


def _fetch_response(result: broker_pb2.FetchPartitionResponse) -> FetchResponse:
    error = ErrorCode(result.error_code) if result.error_code else ErrorCode.UNKNOWN_SERVER_ERROR
    diverging = None
    if result.HasField("diverging_epoch"):
        diverging = EpochEndOffset(result.diverging_epoch.epoch, result.diverging_epoch.end_offset)
    batches = batch_infos(result.records)
    whole_bytes = sum(batch.size_bytes for batch in batches)
    # A response cut at its size bound may end inside a batch: keep whole batches only.
    records = result.records if whole_bytes == len(result.records) else result.records[:whole_bytes]
    return FetchResponse(
        error=error,
        high_watermark=result.high_watermark,
        log_start_offset=result.log_start_offset,
        diverging_epoch=diverging,
        batches=batches,
        records=records,
    )


def batch_infos(records: bytes) -> tuple[BatchInfo, ...]:
    """Offsets, epoch and size of each whole batch, from the headers only."""
    infos = []
    position = 0
    while position + HEADER_SIZE <= len(records):
        header = read_header(records, position)
        if position + header.size > len(records):
            break
        infos.append(BatchInfo(header.base_offset, header.last_offset, header.partition_leader_epoch, header.size))
        position += header.size
    return tuple(infos)
