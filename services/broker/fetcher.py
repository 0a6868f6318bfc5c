"""Followers pull: one fetch session per leader covers every partition this broker follows there.

Each follower core asks for its next fetch (SendFetch); the fetcher of that
leader gathers the asks of all its partitions into one long-polling fetch and
hands each partition its part of the answer. The fetches travel on one
FetchStream to the leader, kept open from fetch to fetch: a stream message
costs a fraction of a call, and this round trip is on every acks=all write's path.

The fetches form a KIP-227 session (replog.core.fetch_session has both halves):
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
from replog.broker.partitions import Partitions, now_ms
from replog.core.errors import ErrorCode
from replog.core.fetch_session import SESSION_NONE, FollowerSession
from replog.core.messages import SendFetch
from replog.core.partition_driver import PartitionDriver
from replog.core.topic_partition import TopicPartition
from replog.rpc import channels
from replog.rpc.broker_convert import fetch_response_of, fill_follower_fetch, partition_fetch_from
from replog.rpc.request_stream import RequestStream, StreamError
from replog.rpc.server import channel_options

log = logging.getLogger("replog.broker")

# The whole response's size bound (Kafka's replica.fetch.response.max.bytes).
FETCH_RESPONSE_BYTES_MAX = 10 * 1024 * 1024
# Added to the long-poll wait for the RPC deadline.
FETCH_DEADLINE_SLACK_S = 5.0
FAILURE_BACKOFF_S = 0.2


Asks = dict[TopicPartition, tuple[PartitionDriver, SendFetch]]


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
        self._pending[driver.topic_partition] = (driver, message)
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
            self._session.failed()  # the leader may or may not have taken the request
            self._fail(asks, str(error))
            await asyncio.sleep(FAILURE_BACKOFF_S)
            return
        response = answer.response
        if response.error_code != ErrorCode.NONE:
            # The leader lost or refused the session: start over with a full fetch at once.
            log.info("fetch session with broker %d ended (%s); starting a new one", self.leader_id,
                     response.error_message)
            self._session.failed()
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
            channel = self._channel = channels.aio_channel(address, self._options)
            self._channel_address = address
            self._stream = RequestStream(lambda: broker_pb2_grpc.BrokerServiceStub(channel).FetchStream())
        return self._stream

    def _close_stream(self) -> None:
        self._session.failed()
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
        wanted = {key: partition_fetch_from(message.request) for key, (_, message) in asks.items()}
        fill_follower_fetch(request, self._session.next_request(wanted), wanted)
        return request

    def _fail(self, asks: Asks, why: str) -> None:
        log.debug("fetch from broker %d failed: %s", self.leader_id, why)
        now = now_ms()
        for driver, message in asks.values():
            driver.fetch_failed(message.fetch_id, now)

    def _deliver(self, asks: Asks, response: broker_pb2.FetchResponse) -> Asks:
        """Hand each partition its part of the answer; returns the asks the answer left out."""
        now = now_ms()
        unanswered = dict(asks)
        for topic_response in response.topics:
            for result in topic_response.partitions:
                key = TopicPartition(topic_response.topic, result.partition)
                entry = unanswered.pop(key, None)
                if entry is None or self._partitions.by_name.get(key) is not entry[0]:
                    continue
                driver, message = entry
                driver.fetch_response(message.fetch_id, fetch_response_of(result), now)
        return unanswered
