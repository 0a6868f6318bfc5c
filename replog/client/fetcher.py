"""The consumer's I/O side: resets, validations and fetches, one request per leader at a time.

Runs on the consumer's I/O loop. Each step looks at every assigned partition:
one without a position gets a ListOffsets, one whose leader epoch changed an
OffsetsForLeaderEpoch (KIP-320), and the rest are fetched, one Fetch per
leader covering its partitions. An answer goes into the FetchBuffer and the
next fetch leaves at once, so records arrive while the caller works through
the last ones (at most MAX_BUFFERED_FETCHES answers per partition wait).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Iterable

import grpc

from replog.client.broker_requests import (
    READ_COMMITTED,
    fetch_request,
    offsets_for_leader_epoch_request,
    partition_results,
)
from replog.client.cluster import ClusterMetadata
from replog.client.configs import ConsumerConfig
from replog.client.errors import FetchError
from replog.client.fetch_buffer import CompletedFetch, FetchBuffer, next_fetch_offset
from replog.client.fetch_state import LIST_OFFSETS_TIMESTAMP, State
from replog.client.io import Channels
from replog.client.loop_worker import LoopWorker
from replog.client.metadata import MetadataManager
from replog.client.offsets_lookup import ask_leader, list_offsets
from replog.client.retry import STALE_METADATA, error_code_for_status
from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition
from replog.core.txn.read_committed import AbortedFilter
from replog.rpc.request_stream import StreamError

log = logging.getLogger("replog.client")

MAX_BUFFERED_FETCHES = 2  # per partition: the one poll() works on, and the next
FETCHER_IDLE_WAIT_MS = 250


class Fetcher(LoopWorker):
    """The I/O thread's side: resets, validations and fetches, one request per leader at a time."""

    def __init__(self, config: ConsumerConfig, buffer: FetchBuffer, metadata: MetadataManager,
                 channels: Channels) -> None:
        super().__init__(buffer)
        self._config = config
        self._read_committed = config.isolation_level == READ_COMMITTED
        self._assignment = buffer.assignment
        self._metadata = metadata
        self._channels = channels
        self._busy_leaders: set[int] = set()  # leaders with a Fetch in flight
        self._backoff_until: dict[TopicPartition, float] = {}
        self._rng = random.Random()
        self._metadata.on_update(lambda _metadata: self.wakeup())

    def follow(self, topics: list[str]) -> None:
        self._metadata.add_topics(topics)
        self._metadata.request_update()
        self.wakeup()

    def _step(self) -> float:
        metadata = self._metadata.current
        now = time.monotonic()
        resets: dict[int, list[tuple[TopicPartition, int, int, str]]] = {}
        validations: dict[int, list[tuple[TopicPartition, int, int, int]]] = {}
        fetches: dict[int, list[tuple[TopicPartition, int, int, int]]] = {}
        held_back: set[int] = set()  # leaders with a partition whose answers fill its buffer
        leaderless = False
        with self._lock:
            buffered = self._buffer.buffered()
            for tp, part in self._assignment.partitions.items():
                leader = metadata.leader_of(tp)
                if leader < 0:
                    leaderless = True
                    continue
                if self._assignment.on_leader_epoch(tp, metadata.leader_epoch_of(tp)):
                    self._buffer.drop_stale()
                if part.request_in_flight or self._backoff_until.get(tp, 0) > now:
                    continue
                if part.state is State.AWAIT_RESET:
                    part.request_in_flight = True
                    resets.setdefault(leader, []).append((tp, part.generation, part.leader_epoch, part.reset_strategy))
                elif part.state is State.AWAIT_VALIDATION:
                    part.request_in_flight = True
                    validations.setdefault(leader, []).append((tp, part.generation, part.leader_epoch, part.last_epoch))
                elif part.state is State.FETCHING and not part.paused and leader not in self._busy_leaders:
                    if buffered[tp] < MAX_BUFFERED_FETCHES:
                        fetches.setdefault(leader, []).append(
                            (tp, part.generation, part.leader_epoch, part.fetch_offset))
                    else:
                        held_back.add(leader)
        if leaderless or self._metadata.is_stale:
            self._metadata.request_update()
        for leader, items in resets.items():
            self._spawn(self._reset(leader, metadata, items))
        for leader, items in validations.items():
            self._spawn(self._validate(leader, metadata, items))
        for leader, items in fetches.items():
            if leader in held_back:
                # A fetch for the leader's other partitions alone would long-poll up to
                # fetch_max_wait_ms, and the held-back partition could not be fetched again
                # before it returns: wait for poll() to take the buffered answers, then
                # fetch them all together.
                continue
            self._busy_leaders.add(leader)
            self._spawn(self._fetch(leader, metadata, items))
        return FETCHER_IDLE_WAIT_MS

    # -- fetch ---------------------------------------------------------------------------------

    async def _fetch(self, leader: int, metadata: ClusterMetadata, items: list) -> None:
        config = self._config
        message = fetch_request(
            ((tp, leader_epoch, fetch_offset) for tp, _generation, leader_epoch, fetch_offset in items),
            max_wait_ms=config.fetch_max_wait_ms, min_bytes=config.fetch_min_bytes, max_bytes=config.fetch_max_bytes,
            partition_max_bytes=config.max_partition_fetch_bytes, isolation_level=config.isolation_level,
        )
        address = metadata.brokers[leader]
        timeout_s = (config.request_timeout_ms + config.fetch_max_wait_ms) / 1000
        try:
            response = (await self._channels.broker_stream(address, "FetchStream").request(message, timeout_s)).response
        except StreamError as error:
            self._request_failed(leader, address, error, [item[0] for item in items])
            return
        finally:
            self._busy_leaders.discard(leader)
            self.wakeup()
        if ErrorCode.of(response.error_code) is not ErrorCode.NONE:
            # A session error; this consumer uses no sessions, so the leader is confused: back off.
            log.warning("fetch from broker %d refused: %s", leader, response.error_message)
            self._back_off([item[0] for item in items])
            return
        generations = {item[0]: item[1] for item in items}
        offsets = {item[0]: item[3] for item in items}
        with self._lock:
            for tp, part in partition_results(response).items():
                if tp in generations:
                    self._take_partition(tp, generations[tp], offsets[tp], part, response.node_endpoints)
            self._buffer.changed.notify_all()

    def _take_partition(self, tp, generation, fetch_offset, result, endpoints) -> None:
        state = self._assignment.partitions.get(tp)
        if state is None or state.generation != generation or state.state is not State.FETCHING:
            return
        code = ErrorCode.of(result.error_code)
        if code is ErrorCode.NONE:
            records = result.records  # each read of a bytes field copies it out of the message
            if records:
                next_offset = next_fetch_offset(records, fetch_offset)
                if next_offset > fetch_offset:
                    # Without aborted transactions, read_committed hides only the control batches, as
                    # read_uncommitted does: no filter to build and no marker to decode.
                    aborted = AbortedFilter((txn.producer_id, txn.first_offset) for txn in result.aborted_transactions
                                            ) if self._read_committed and result.aborted_transactions else None
                    self._buffer.completed.append(CompletedFetch(tp, generation, records, aborted))
                    state.fetch_offset = next_offset
            return
        if code is ErrorCode.OFFSET_OUT_OF_RANGE:
            self._assignment.on_out_of_range(tp, generation)
            return
        self._partition_error(tp, generation, code, result.error_message, result, endpoints)

    def _partition_error(self, tp, generation, code: ErrorCode, detail: str, result=None, endpoints=()) -> None:
        if code in STALE_METADATA:
            if result is not None and result.HasField("current_leader"):
                hint = result.current_leader
                self._metadata.set_current(self._metadata.current.with_leader_hint(
                    tp, hint.leader_id, hint.leader_epoch, endpoints))
            self._metadata.request_update()
            self._back_off([tp])
        elif code.retriable:
            self._back_off([tp])
        else:
            self._assignment.on_fatal(tp, generation, FetchError(tp.topic, tp.partition, code, detail))

    def _request_failed(self, leader: int, address: str, error: grpc.aio.AioRpcError | StreamError,
                        tps: list) -> None:
        code = error_code_for_status(error.code())
        detail = f"broker {leader} at {address} answered {error.code().name}: {error.details()}"
        if code.retriable:
            log.info("%s; retrying", detail)
            self._metadata.request_update()
            self._back_off(tps)
            return
        with self._lock:
            for tp in tps:
                part = self._assignment.partitions.get(tp)
                if part is not None:
                    self._assignment.on_fatal(tp, part.generation, FetchError(tp.topic, tp.partition, code, detail))
            self._buffer.changed.notify_all()

    def _back_off(self, tps: Iterable[TopicPartition]) -> None:
        until = time.monotonic() + self._config.retry_backoff_ms / 1000 * (0.8 + 0.4 * self._rng.random())
        for tp in tps:
            self._backoff_until[tp] = until
        asyncio.get_running_loop().call_later(max(until - time.monotonic(), 0), self.wakeup)

    # -- reset (ListOffsets) and validation (OffsetsForLeaderEpoch) -----------------------------

    async def _reset(self, leader: int, metadata: ClusterMetadata, items: list) -> None:
        answers = await ask_leader(self._channels, metadata, leader, [
            (tp, leader_epoch, LIST_OFFSETS_TIMESTAMP[strategy]) for tp, _g, leader_epoch, strategy in items
        ], isolation_level=self._config.isolation_level, timeout_s=self._config.request_timeout_ms / 1000)
        with self._lock:
            for tp, generation, leader_epoch, _strategy in items:
                part = self._assignment.partitions.get(tp)
                if part is not None and part.generation == generation:
                    part.request_in_flight = False
                code, detail, offset, epoch, _timestamp = answers[tp]
                if code is ErrorCode.NONE:
                    self._assignment.on_reset(tp, generation, offset, epoch, leader_epoch)
                else:
                    self._partition_error(tp, generation, code, detail)
            self._buffer.changed.notify_all()
        self.wakeup()

    async def list_offsets_until_done(self, timestamps: dict[TopicPartition, int], timeout_s: float) -> dict:
        """{tp: (offset, leader_epoch, timestamp)} for each partition's time (-2 earliest, -1 latest), retrying
        stale leaders."""
        self.follow(sorted({tp.topic for tp in timestamps}))
        return await list_offsets(self._metadata, self._channels, timestamps,
                                  isolation_level=self._config.isolation_level,
                                  request_timeout_s=self._config.request_timeout_ms / 1000,
                                  retry_backoff_s=self._config.retry_backoff_ms / 1000, timeout_s=timeout_s)

    async def _validate(self, leader: int, metadata: ClusterMetadata, items: list) -> None:
        request = offsets_for_leader_epoch_request(
            (tp, leader_epoch, last_epoch) for tp, _generation, leader_epoch, last_epoch in items)
        address = metadata.brokers[leader]
        try:
            response = await self._channels.broker(address).OffsetsForLeaderEpoch(
                request, timeout=self._config.request_timeout_ms / 1000)
        except grpc.aio.AioRpcError as error:
            with self._lock:
                for tp, generation, _e, _l in items:
                    self._clear_in_flight(tp, generation)
            self._request_failed(leader, address, error, [item[0] for item in items])
            return
        answers = partition_results(response)
        with self._lock:
            for tp, generation, _leader_epoch, _last_epoch in items:
                self._clear_in_flight(tp, generation)
                answer = answers.get(tp)
                if answer is None:
                    self._back_off([tp])
                    continue
                code = ErrorCode.of(answer.error_code)
                if code is ErrorCode.NONE:
                    self._assignment.on_validation(tp, generation, answer.leader_epoch, answer.end_offset)
                else:
                    self._partition_error(tp, generation, code, answer.error_message)
            self._buffer.changed.notify_all()
        self.wakeup()

    def _clear_in_flight(self, tp: TopicPartition, generation: int) -> None:
        part = self._assignment.partitions.get(tp)
        if part is not None and part.generation == generation:
            part.request_in_flight = False
