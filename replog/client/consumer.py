"""The consumer: assigned partitions, fetched from their leaders, returned by poll().

An I/O thread keeps one Fetch per leader in flight, covering that leader's
assigned partitions, and fetches the next records while the caller works
through the last ones (at most MAX_BUFFERED_FETCHES answers per partition wait
in memory). poll() decodes the buffered batches on the caller's thread.

Leader changes are followed through the metadata; after one, the position is
checked against the new leader's log (KIP-320) before fetching resumes, so a
truncated log is reported as LogTruncationError instead of being skipped over
or read twice.
"""

from __future__ import annotations

import asyncio
import bisect
import collections
import logging
import operator
import random
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import grpc

from replog.api.broker.v1 import broker_pb2
from replog.client.cluster import ClusterMetadata
from replog.client.errors import ClientError, FetchError, error_code_of
from replog.client.fetch_state import (
    EARLIEST,
    LATEST,
    LIST_OFFSETS_TIMESTAMP,
    Assignment,
    State,
)
from replog.client.io import Channels, IoThread, parse_bootstrap
from replog.client.metadata import MetadataManager
from replog.client.retry import STALE_METADATA, error_code_for_status
from replog.client.types import ConsumerRecord, TopicPartition
from replog.core.errors import ErrorCode
from replog.protocol import CorruptBatchError, iter_batches
from replog.protocol.layout import LOG_OVERHEAD
from replog.protocol.header import read_header

log = logging.getLogger("replog.client")

ISOLATION_LEVELS = {
    "read_uncommitted": broker_pb2.ISOLATION_LEVEL_READ_UNCOMMITTED,
    "read_committed": broker_pb2.ISOLATION_LEVEL_READ_COMMITTED,
}
MAX_BUFFERED_FETCHES = 2  # per partition: the one poll() works on, and the next
FETCHER_IDLE_WAIT_MS = 250
HEADER_BYTES = 61

_new_record = tuple.__new__
_offset_of = operator.attrgetter("offset")


@dataclass(frozen=True)
class ConsumerConfig:
    auto_offset_reset: str = LATEST
    fetch_min_bytes: int = 1
    fetch_max_wait_ms: int = 500
    fetch_max_bytes: int = 50 << 20
    max_partition_fetch_bytes: int = 1 << 20
    max_poll_records: int = 500
    isolation_level: str = "read_uncommitted"
    request_timeout_ms: int = 30_000
    retry_backoff_ms: int = 100

    def __post_init__(self) -> None:
        if self.isolation_level not in ISOLATION_LEVELS:
            raise ValueError(f"isolation_level must be read_uncommitted or read_committed, "
                             f"not {self.isolation_level!r}")
        for name in ("fetch_max_bytes", "max_partition_fetch_bytes", "max_poll_records", "request_timeout_ms"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, not {getattr(self, name)!r}")
        for name in ("fetch_min_bytes", "fetch_max_wait_ms", "retry_backoff_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, not {getattr(self, name)!r}")


class CompletedFetch:
    """One partition's records from one fetch answer, decoded batch by batch as poll() asks."""

    __slots__ = ("tp", "generation", "_batches", "_batch", "_index", "exhausted")

    def __init__(self, tp: TopicPartition, generation: int, records: bytes) -> None:
        self.tp = tp
        self.generation = generation
        self._batches = iter_batches(records)
        self._batch = None
        self._index = 0
        self.exhausted = False

    def take(self, out: list, limit: int, position: int) -> tuple[int, int]:
        """Append up to `limit` records at or after `position` to out; returns (next position, last epoch)."""
        topic, partition = self.tp
        last_epoch = -1
        while limit > 0:
            batch = self._batch
            if batch is None:
                batch = self._batch = next(self._batches, None)
                self._index = 0
                if batch is None:
                    self.exhausted = True
                    break
            if batch.is_control or batch.next_offset <= position:
                position = max(position, batch.next_offset)
                self._batch = None
                continue
            records = batch.records
            epoch = batch.partition_leader_epoch
            start = self._index
            if start < len(records) and records[start].offset < position:
                start = bisect.bisect_left(records, position, lo=start, key=_offset_of)
            end = min(len(records), start + limit)
            if start < end:
                out += [
                    _new_record(ConsumerRecord, (topic, partition, record.offset, record.timestamp, record.key,
                                                 record.value, record.headers, epoch))
                    for record in records[start:end]
                ]
                limit -= end - start
                position = records[end - 1].offset + 1
                last_epoch = epoch
            self._index = end
            if end >= len(records):
                position = max(position, batch.next_offset)
                self._batch = None
        return position, last_epoch


def next_fetch_offset(records: bytes, fetch_offset: int) -> int:
    """The offset after the last whole batch in `records` (a cut-off trailing batch is fetched again)."""
    view = memoryview(records)
    position = 0
    next_offset = fetch_offset
    while len(view) - position >= HEADER_BYTES:
        header = read_header(view, position)
        end = position + LOG_OVERHEAD + header.batch_length
        if header.batch_length <= 0 or end > len(view):
            break
        next_offset = max(next_offset, header.next_offset)
        position = end
    return next_offset


class Consumer:
    """Reads assigned partitions; not thread-safe (one thread calls poll(), as in Kafka)."""

    def __init__(
        self,
        bootstrap: str | Sequence[str],
        *,
        group_id: str | None = None,
        auto_offset_reset: str = LATEST,
        fetch_min_bytes: int = 1,
        fetch_max_wait_ms: int = 500,
        fetch_max_bytes: int = 50 << 20,
        max_partition_fetch_bytes: int = 1 << 20,
        max_poll_records: int = 500,
        isolation_level: str = "read_uncommitted",
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
    ) -> None:
        if group_id is not None:
            raise ClientError("consumer groups (group_id) are not supported yet; read partitions with assign()")
        self.config = ConsumerConfig(
            auto_offset_reset=auto_offset_reset,
            fetch_min_bytes=fetch_min_bytes,
            fetch_max_wait_ms=fetch_max_wait_ms,
            fetch_max_bytes=fetch_max_bytes,
            max_partition_fetch_bytes=max_partition_fetch_bytes,
            max_poll_records=max_poll_records,
            isolation_level=isolation_level,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
        )
        addresses = parse_bootstrap(bootstrap)
        self._assignment = Assignment(auto_offset_reset)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._completed: collections.deque[CompletedFetch] = collections.deque()
        self._closed = False
        self._io = IoThread("replog-consumer-io")
        self._channels = Channels()
        self._metadata = MetadataManager(
            addresses, self._channels, request_timeout_ms=request_timeout_ms, retry_backoff_ms=retry_backoff_ms,
        )
        self._fetcher = _Fetcher(self)
        self._fetcher_done = self._io.submit(self._fetcher.run())

    # -- assignment and positions --------------------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Read exactly these partitions (replacing any earlier assignment)."""
        tps = [TopicPartition(*tp) for tp in partitions]
        with self._lock:
            self._assignment.assign(tps)
            self._drop_completed()
        self._io.call_soon(self._fetcher.follow, sorted({tp.topic for tp in tps}))

    def assignment(self) -> set[TopicPartition]:
        with self._lock:
            return set(self._assignment.partitions)

    def subscribe(self, topics: Iterable[str]) -> None:
        raise ClientError("subscribe() needs consumer groups, which are not supported yet; use assign()")

    def seek(self, partition: TopicPartition, offset: int) -> None:
        with self._lock:
            self._assignment.seek(TopicPartition(*partition), offset)
            self._drop_completed()
        self._wake_fetcher()

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._seek_to(partitions, EARLIEST)

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._seek_to(partitions, LATEST)

    def _seek_to(self, partitions: Iterable[TopicPartition] | None, strategy: str) -> None:
        with self._lock:
            for tp in list(self._assignment.partitions) if partitions is None else partitions:
                self._assignment.seek_to(TopicPartition(*tp), strategy)
            self._drop_completed()
        self._wake_fetcher()

    def position(self, partition: TopicPartition, timeout: float | None = 60.0) -> int:
        """The offset of the next record poll() returns, looking it up first if needed."""
        tp = TopicPartition(*partition)
        self._wake_fetcher()
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while True:
                part = self._assignment.get(tp)
                if part.state is State.FAILED:
                    raise part.error or ClientError(f"{tp} stopped after an error; seek to continue")
                if part.state is not State.AWAIT_RESET:
                    return part.position
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise ClientError(f"the position of {tp} was not found within {timeout:g} s",
                                      ErrorCode.REQUEST_TIMED_OUT)
                self._changed.wait(remaining)

    def beginning_offsets(
        self, partitions: Iterable[TopicPartition], timeout: float = 60.0
    ) -> dict[TopicPartition, int]:
        return self._offsets([TopicPartition(*tp) for tp in partitions], EARLIEST, timeout)

    def end_offsets(
        self, partitions: Iterable[TopicPartition], timeout: float = 60.0
    ) -> dict[TopicPartition, int]:
        """The high watermark of each partition (the offset after the last committed record)."""
        return self._offsets([TopicPartition(*tp) for tp in partitions], LATEST, timeout)

    def _offsets(self, tps: list[TopicPartition], strategy: str, timeout: float) -> dict[TopicPartition, int]:
        found = self._io.run(self._fetcher.list_offsets_until_done(tps, strategy, timeout), timeout + 5,
                             what=f"looking up the {strategy} offsets")
        return {tp: offset for tp, (offset, _epoch) in found.items()}

    # -- polling --------------------------------------------------------------------------------

    def poll(self, timeout_ms: float = 0) -> list[ConsumerRecord]:
        """Records from the assigned partitions, waiting up to timeout_ms for some to arrive.

        Raises the errors of partitions that stopped (LogTruncationError,
        OffsetOutOfRangeError, FetchError), once each; the other partitions go on.
        """
        if self._closed:
            raise ClientError("the consumer is closed")
        deadline = time.monotonic() + timeout_ms / 1000
        with self._lock:
            while True:
                error = self._assignment.take_error()
                if error is not None:
                    raise error
                records = self._collect(self.config.max_poll_records)
                if records:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return []
                self._changed.wait(remaining)
        self._wake_fetcher()
        return records

    def _collect(self, limit: int) -> list[ConsumerRecord]:
        out: list[ConsumerRecord] = []
        assignment = self._assignment
        while self._completed and len(out) < limit:
            fetch = self._completed[0]
            part = assignment.partitions.get(fetch.tp)
            if part is None or part.generation != fetch.generation or part.state is not State.FETCHING:
                self._completed.popleft()
                continue
            try:
                position, last_epoch = fetch.take(out, limit - len(out), part.position)
            except CorruptBatchError as error:
                self._completed.popleft()
                assignment.on_fatal(fetch.tp, fetch.generation, FetchError(
                    fetch.tp.topic, fetch.tp.partition, ErrorCode.CORRUPT_MESSAGE,
                    f"{error}; seek past offset {part.position} to skip it",
                ))
                continue
            assignment.consumed(fetch.tp, position, last_epoch)
            if fetch.exhausted:
                self._completed.popleft()
        return out

    def _drop_completed(self) -> None:
        # Answers for an older generation are skipped by _collect; dropping them frees memory now.
        partitions = self._assignment.partitions
        self._completed = collections.deque(
            f for f in self._completed
            if f.tp in partitions and partitions[f.tp].generation == f.generation
        )

    def _wake_fetcher(self) -> None:
        if not self._closed:
            self._io.call_soon(self._fetcher.wakeup)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._io.call_soon(self._fetcher.stop)
        try:
            self._fetcher_done.result(10)
        finally:
            self._io.run(self._channels.close(), 10, what="closing the consumer's connections")
            self._io.stop()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _Fetcher:
    """The I/O thread's side: resets, validations and fetches, one request per leader at a time."""

    def __init__(self, consumer: Consumer) -> None:
        self._consumer = consumer
        self._config = consumer.config
        self._lock = consumer._lock
        self._assignment = consumer._assignment
        self._metadata = consumer._metadata
        self._channels = consumer._channels
        self._wake: asyncio.Event | None = None
        self._stopped = False
        self._busy_leaders: set[int] = set()  # leaders with a Fetch in flight
        self._backoff_until: dict[TopicPartition, float] = {}
        self._tasks: set[asyncio.Task] = set()
        self._rng = random.Random()
        self._metadata.on_update(lambda _metadata: self.wakeup())

    def wakeup(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def follow(self, topics: list[str]) -> None:
        self._metadata.add_topics(topics)
        self._metadata.request_update()
        self.wakeup()

    def stop(self) -> None:
        self._stopped = True
        self.wakeup()

    async def run(self) -> None:
        self._wake = asyncio.Event()
        while not self._stopped:
            self._wake.clear()
            self._step()
            try:
                await asyncio.wait_for(self._wake.wait(), FETCHER_IDLE_WAIT_MS / 1000)
            except TimeoutError:
                pass
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _spawn(self, coroutine) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _step(self) -> None:
        metadata = self._metadata.current
        now = time.monotonic()
        resets: dict[int, list[tuple[TopicPartition, int, int, str]]] = {}
        validations: dict[int, list[tuple[TopicPartition, int, int, int]]] = {}
        fetches: dict[int, list[tuple[TopicPartition, int, int, int]]] = {}
        leaderless = False
        with self._lock:
            buffered = collections.Counter(f.tp for f in self._consumer._completed)
            for tp, part in self._assignment.partitions.items():
                leader = metadata.leader_of(tp)
                if leader < 0:
                    leaderless = True
                    continue
                if self._assignment.on_leader_epoch(tp, metadata.leader_epoch_of(tp)):
                    self._consumer._drop_completed()
                if part.request_in_flight or self._backoff_until.get(tp, 0) > now:
                    continue
                if part.state is State.AWAIT_RESET:
                    part.request_in_flight = True
                    resets.setdefault(leader, []).append((tp, part.generation, part.leader_epoch, part.reset_strategy))
                elif part.state is State.AWAIT_VALIDATION:
                    part.request_in_flight = True
                    validations.setdefault(leader, []).append((tp, part.generation, part.leader_epoch, part.last_epoch))
                elif (part.state is State.FETCHING and leader not in self._busy_leaders
                      and buffered[tp] < MAX_BUFFERED_FETCHES):
                    fetches.setdefault(leader, []).append((tp, part.generation, part.leader_epoch, part.fetch_offset))
        if leaderless or self._metadata.is_stale:
            self._metadata.request_update()
        for leader, items in resets.items():
            self._spawn(self._reset(leader, metadata, items))
        for leader, items in validations.items():
            self._spawn(self._validate(leader, metadata, items))
        for leader, items in fetches.items():
            self._busy_leaders.add(leader)
            self._spawn(self._fetch(leader, metadata, items))

    # -- fetch ---------------------------------------------------------------------------------

    async def _fetch(self, leader: int, metadata: ClusterMetadata, items: list) -> None:
        config = self._config
        by_topic: dict[str, list[broker_pb2.FetchPartition]] = {}
        for tp, _generation, leader_epoch, fetch_offset in items:
            by_topic.setdefault(tp.topic, []).append(broker_pb2.FetchPartition(
                partition=tp.partition, current_leader_epoch=leader_epoch, fetch_offset=fetch_offset,
                last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=config.max_partition_fetch_bytes,
            ))
        request = broker_pb2.FetchRequest(
            replica_id=-1, replica_epoch=-1, max_wait_ms=config.fetch_max_wait_ms, min_bytes=config.fetch_min_bytes,
            max_bytes=config.fetch_max_bytes, isolation_level=ISOLATION_LEVELS[config.isolation_level],
            session_id=0, session_epoch=-1,
            topics=[broker_pb2.FetchTopic(topic=topic, partitions=parts) for topic, parts in by_topic.items()],
        )
        address = metadata.brokers[leader]
        timeout_s = (config.request_timeout_ms + config.fetch_max_wait_ms) / 1000
        try:
            response = await self._channels.broker(address).Fetch(request, timeout=timeout_s)
        except grpc.aio.AioRpcError as error:
            self._request_failed(leader, address, error, [item[0] for item in items])
            return
        finally:
            self._busy_leaders.discard(leader)
            self.wakeup()
        if error_code_of(response.error_code) is not ErrorCode.NONE:
            # A session error; this consumer uses no sessions, so the leader is confused: back off.
            log.warning("fetch from broker %d refused: %s", leader, response.error_message)
            self._back_off([item[0] for item in items])
            return
        generations = {item[0]: item[1] for item in items}
        offsets = {item[0]: item[3] for item in items}
        with self._lock:
            for topic in response.topics:
                for part in topic.partitions:
                    tp = TopicPartition(topic.topic, part.partition)
                    if tp in generations:
                        self._take_partition(tp, generations[tp], offsets[tp], part, response.node_endpoints)
            self._consumer._changed.notify_all()

    def _take_partition(self, tp, generation, fetch_offset, result, endpoints) -> None:
        state = self._assignment.partitions.get(tp)
        if state is None or state.generation != generation or state.state is not State.FETCHING:
            return
        code = error_code_of(result.error_code)
        if code is ErrorCode.NONE:
            if result.records:
                next_offset = next_fetch_offset(result.records, fetch_offset)
                if next_offset > fetch_offset:
                    self._consumer._completed.append(CompletedFetch(tp, generation, result.records))
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

    def _request_failed(self, leader: int, address: str, error: grpc.aio.AioRpcError, tps: list) -> None:
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
            self._consumer._changed.notify_all()

    def _back_off(self, tps: Iterable[TopicPartition]) -> None:
        until = time.monotonic() + self._config.retry_backoff_ms / 1000 * (0.8 + 0.4 * self._rng.random())
        for tp in tps:
            self._backoff_until[tp] = until
        asyncio.get_running_loop().call_later(max(until - time.monotonic(), 0), self.wakeup)

    # -- reset (ListOffsets) and validation (OffsetsForLeaderEpoch) -----------------------------

    async def _reset(self, leader: int, metadata: ClusterMetadata, items: list) -> None:
        answers = await self._list_offsets(leader, metadata, [
            (tp, leader_epoch, LIST_OFFSETS_TIMESTAMP[strategy]) for tp, _g, leader_epoch, strategy in items
        ])
        with self._lock:
            for tp, generation, leader_epoch, _strategy in items:
                part = self._assignment.partitions.get(tp)
                if part is not None and part.generation == generation:
                    part.request_in_flight = False
                code, detail, offset, epoch = answers[tp]
                if code is ErrorCode.NONE:
                    self._assignment.on_reset(tp, generation, offset, epoch, leader_epoch)
                else:
                    self._partition_error(tp, generation, code, detail)
            self._consumer._changed.notify_all()
        self.wakeup()

    async def _list_offsets(self, leader: int, metadata: ClusterMetadata, items: list) -> dict:
        """ListOffsets at one leader: {tp: (code, detail, offset, leader_epoch)} for every item."""
        by_topic: dict[str, list[broker_pb2.ListOffsetsPartition]] = {}
        for tp, leader_epoch, timestamp_ms in items:
            by_topic.setdefault(tp.topic, []).append(broker_pb2.ListOffsetsPartition(
                partition=tp.partition, current_leader_epoch=leader_epoch, timestamp_ms=timestamp_ms))
        request = broker_pb2.ListOffsetsRequest(
            replica_id=-1, isolation_level=ISOLATION_LEVELS[self._config.isolation_level],
            topics=[broker_pb2.ListOffsetsTopic(topic=topic, partitions=parts) for topic, parts in by_topic.items()],
        )
        address = metadata.brokers[leader]
        try:
            response = await self._channels.broker(address).ListOffsets(
                request, timeout=self._config.request_timeout_ms / 1000)
        except grpc.aio.AioRpcError as error:
            detail = f"broker {leader} at {address} answered {error.code().name}: {error.details()}"
            return {tp: (error_code_for_status(error.code()), detail, -1, -1) for tp, _e, _t in items}
        answers = {
            TopicPartition(topic.topic, part.partition): (error_code_of(part.error_code), part.error_message,
                                                          part.offset, part.leader_epoch)
            for topic in response.topics for part in topic.partitions
        }
        missing = (ErrorCode.UNKNOWN_SERVER_ERROR, "the broker's answer left the partition out", -1, -1)
        return {tp: answers.get(tp, missing) for tp, _e, _t in items}

    async def list_offsets_until_done(self, tps: list[TopicPartition], strategy: str, timeout_s: float) -> dict:
        """{tp: (offset, leader_epoch)} for the earliest or latest offsets, retrying stale leaders."""
        self.follow(sorted({tp.topic for tp in tps}))
        deadline = time.monotonic() + timeout_s
        found: dict[TopicPartition, tuple[int, int]] = {}
        attempt_wait_s = self._config.retry_backoff_ms / 1000
        while True:
            metadata = self._metadata.current
            by_leader: dict[int, list] = {}
            for tp in tps:
                if tp not in found and metadata.leader_of(tp) >= 0:
                    by_leader.setdefault(metadata.leader_of(tp), []).append(
                        (tp, metadata.leader_epoch_of(tp), LIST_OFFSETS_TIMESTAMP[strategy]))
            for leader, items in by_leader.items():
                for tp, (code, detail, offset, epoch) in (await self._list_offsets(leader, metadata, items)).items():
                    if code is ErrorCode.NONE:
                        found[tp] = (offset, epoch)
                    elif not code.retriable:
                        raise FetchError(tp.topic, tp.partition, code, detail)
            if len(found) == len(tps):
                return found
            if time.monotonic() >= deadline:
                missing = ", ".join(str(tp) for tp in tps if tp not in found)
                raise ClientError(f"no leader answered for {missing} within {timeout_s:g} s",
                                  ErrorCode.LEADER_NOT_AVAILABLE)
            await self._metadata.refresh()
            await asyncio.sleep(attempt_wait_s)

    async def _validate(self, leader: int, metadata: ClusterMetadata, items: list) -> None:
        by_topic: dict[str, list[broker_pb2.OffsetForLeaderPartition]] = {}
        for tp, _generation, leader_epoch, last_epoch in items:
            by_topic.setdefault(tp.topic, []).append(broker_pb2.OffsetForLeaderPartition(
                partition=tp.partition, current_leader_epoch=leader_epoch, leader_epoch=last_epoch))
        request = broker_pb2.OffsetsForLeaderEpochRequest(
            replica_id=-1,
            topics=[broker_pb2.OffsetForLeaderTopic(topic=topic, partitions=parts)
                    for topic, parts in by_topic.items()],
        )
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
        answers = {
            TopicPartition(topic.topic, part.partition): part for topic in response.topics for part in topic.partitions
        }
        with self._lock:
            for tp, generation, _leader_epoch, _last_epoch in items:
                self._clear_in_flight(tp, generation)
                answer = answers.get(tp)
                if answer is None:
                    self._back_off([tp])
                    continue
                code = error_code_of(answer.error_code)
                if code is ErrorCode.NONE:
                    self._assignment.on_validation(tp, generation, answer.leader_epoch, answer.end_offset)
                else:
                    self._partition_error(tp, generation, code, answer.error_message)
            self._consumer._changed.notify_all()
        self.wakeup()

    def _clear_in_flight(self, tp: TopicPartition, generation: int) -> None:
        part = self._assignment.partitions.get(tp)
        if part is not None and part.generation == generation:
            part.request_in_flight = False
