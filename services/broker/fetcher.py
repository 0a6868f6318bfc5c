"""Followers pull: one fetch session per leader covers every partition this broker follows there.

Each follower core asks for its next fetch (SendFetch); the fetcher of that
leader gathers the asks of all its partitions into one long-polling fetch and
hands each partition its part of the answer. The fetches travel on one
FetchStream to the leader, kept open from fetch to fetch: a stream message
costs a fraction of a call, and this round trip is on every acks=all write's path.

The fetches form a KIP-227 session (fetch_sessions.py has the leader's half):
after the first, full fetch, a request names only the partitions whose fetch
position changed and forgets those no longer asked for, and the answer leaves
out partitions with nothing new. A partition left out keeps its ask for the
next fetch. When the stream breaks or the leader refuses the session, the
next fetch is a full one that opens a new session.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import grpc

from replog.api.broker.v1 import broker_pb2, broker_pb2_grpc
from replog.broker.fetch_sessions import EPOCH_OPEN, SESSION_NONE, next_epoch
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


Asks = dict[tuple[str, int], tuple[PartitionDriver, SendFetch]]


class LeaderFetcher:
    def __init__(self, partitions: Partitions, leader_id: int, address: Callable[[], str | None],
                 broker_epoch: Callable[[], int], max_message_bytes: int) -> None:
        self._partitions = partitions
        self.leader_id = leader_id
        self._address = address
        self._broker_epoch = broker_epoch
        self._options = channel_options(max_message_bytes)
        self._pending: Asks = {}
        self._session = FollowerSession()
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
            asks, self._pending = self._pending, {}
            asks = {k: v for k, v in asks.items() if self._partitions.by_name.get(k) is v[0]}
            if asks:
                await self._fetch(asks)

    async def _fetch(self, asks: Asks) -> None:
        stream = self._stream_to_leader()
        if stream is None:
            self._fail(asks, "no address known")
            await asyncio.sleep(FAILURE_BACKOFF_S)
            return
        message = broker_pb2.FetchStreamRequest()
        request = self._request(asks, message.request)
        incremental = request.session_id != SESSION_NONE
        try:
            answer = await stream.request(message, request.max_wait_ms / 1000 + FETCH_DEADLINE_SLACK_S)
        except StreamError as error:
            self._session.reset()  # the leader may or may not have taken the request
            self._fail(asks, str(error))
            await asyncio.sleep(FAILURE_BACKOFF_S)
            return
        response = answer.response
        if response.error_code != ErrorCode.NONE:
            # The leader lost or refused the session: start over with a full fetch at once.
            log.info("fetch session with broker %d ended (%s); starting a new one", self.leader_id,
                     response.error_message)
            self._session.reset()
            self._carry_over(asks)
            return
        self._session.answered(response.session_id)
        unanswered = self._deliver(asks, response)
        if not unanswered:
            return
        if incremental:
            self._carry_over(unanswered)  # nothing new for them: they stay in the session as they are
        else:
            self._fail(unanswered, "partition missing from the response")

    def _carry_over(self, asks: Asks) -> None:
        """Ask again in the next fetch, unless a partition has asked anew meanwhile."""
        for key, ask in asks.items():
            self._pending.setdefault(key, ask)
        self._wakeup.set()

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
        self._session.reset()
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def _request(self, asks: Asks, request: broker_pb2.FetchRequest) -> broker_pb2.FetchRequest:
        """Fill `request` (a stream message's): in a session, only the partitions that changed."""
        messages = [message for _, message in asks.values()]
        request.replica_id = self._partitions.broker_id
        request.replica_epoch = self._broker_epoch()
        request.max_wait_ms = min(m.request.max_wait_ms for m in messages)
        request.min_bytes = 1
        request.max_bytes = FETCH_RESPONSE_BYTES_MAX
        wanted = {key: _wire(message.request) for key, (_, message) in asks.items()}
        changed, forgotten = self._session.next_request(request, wanted)
        topics: dict[str, broker_pb2.FetchTopic] = {}
        for topic, partition in changed:
            fetch_topic = topics.get(topic)
            if fetch_topic is None:
                fetch_topic = topics[topic] = request.topics.add(topic=topic)
            current_leader_epoch, fetch_offset, last_fetched_epoch, max_bytes = wanted[(topic, partition)]
            fetch_topic.partitions.add(
                partition=partition, current_leader_epoch=current_leader_epoch, fetch_offset=fetch_offset,
                last_fetched_epoch=last_fetched_epoch, partition_max_bytes=max_bytes,
            )
        forgotten_topics: dict[str, list[int]] = {}
        for topic, partition in forgotten:
            forgotten_topics.setdefault(topic, []).append(partition)
        for topic, indexes in forgotten_topics.items():
            request.forgotten_topics.add(topic=topic, partitions=indexes)
        return request

    def _fail(self, asks: Asks, why: str) -> None:
        log.debug("fetch from broker %d failed: %s", self.leader_id, why)
        now = now_ms()
        for driver, message in asks.values():
            driver.replica.handle_fetch_failure(message.fetch_id, now)
            self._partitions.apply(driver, now)

    def _deliver(self, asks: Asks, response: broker_pb2.FetchResponse) -> Asks:
        """Hand each partition its part of the answer; returns the asks the answer left out."""
        now = now_ms()
        unanswered = dict(asks)
        for topic_response in response.topics:
            for result in topic_response.partitions:
                key = (topic_response.topic, result.partition)
                entry = unanswered.pop(key, None)
                if entry is None or self._partitions.by_name.get(key) is not entry[0]:
                    continue
                driver, message = entry
                driver.replica.handle_fetch_response(message.fetch_id, _fetch_response(result), now)
                self._partitions.apply(driver, now)
        return unanswered


# What a session holds of one partition: (current_leader_epoch, fetch_offset, last_fetched_epoch, max_bytes).
Wire = tuple[int, int, int, int]


def _wire(request) -> Wire:
    return (request.current_leader_epoch, request.fetch_offset, request.last_fetched_epoch, request.max_bytes)


class FollowerSession:
    """The follower's half of a fetch session (KIP-227): what the leader holds, and the next epoch."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.session_id = SESSION_NONE
        self._epoch = EPOCH_OPEN
        self._held: dict[tuple[str, int], Wire] = {}

    def next_request(self, request: broker_pb2.FetchRequest,
                     wanted: dict[tuple[str, int], Wire]) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
        """Stamp the session on `request`; returns the partitions to name in it and those to forget."""
        request.session_id = self.session_id
        request.session_epoch = self._epoch
        if self.session_id == SESSION_NONE:
            changed, forgotten = list(wanted), []
        else:
            changed = [key for key, wire in wanted.items() if self._held.get(key) != wire]
            forgotten = [key for key in self._held if key not in wanted]
            self._epoch = next_epoch(self._epoch)
        self._held = dict(wanted)
        return changed, forgotten

    def answered(self, session_id: int) -> None:
        """A full fetch's answer names the session the leader opened (0: it opened none)."""
        if self.session_id == SESSION_NONE:
            self.session_id = session_id
            self._epoch = EPOCH_OPEN if session_id == SESSION_NONE else 1  # the first incremental epoch


def _fetch_response(result: broker_pb2.FetchPartitionResponse) -> FetchResponse:
    error = ErrorCode.of(result.error_code)
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
