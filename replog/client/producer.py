"""The producer: `send()` appends to per-partition batches; an I/O thread ships them to leaders.

One ProduceRequest per leader covers the head batch of each of its ready
partitions; up to max_in_flight_requests_per_connection requests per leader
are in flight at once over one reused gRPC channel. Records are encoded once
per batch (`encode_batch`), on the I/O thread, when the batch leaves.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from replog.api.broker.v1 import broker_pb2
from replog.client.accumulator import ProducerBatch, RecordAccumulator, record_size_bytes
from replog.client.cluster import ClusterMetadata
from replog.client.errors import (
    ClientError,
    ClientTimeoutError,
    ProduceError,
    ProducerClosedError,
    RecordTooLargeError,
    error_code_of,
)
from replog.client.io import Channels, IoThread, parse_bootstrap
from replog.client.metadata import MetadataManager
from replog.client.partitioner import StickyPartitioner, partition_for_key
from replog.client.retry import Action, backoff_ms, error_code_for_status, produce_action
from replog.client.types import RecordMetadata, TopicPartition
from replog.core.errors import ErrorCode
from replog.protocol.compression import Compression

log = logging.getLogger("replog.client")

ACKS = {"all": -1, "-1": -1, -1: -1, "1": 1, 1: 1, "0": 0, 0: 0}
SENDER_IDLE_WAIT_MS = 250  # how often an idle sender looks for expired batches and stale metadata
DEADLINE_MARGIN_MS = 2_000  # the gRPC deadline exceeds the broker's timeout_ms, so the broker's answer wins
UNSPECIFIED_ERROR = 0  # ERROR_CODE_UNSPECIFIED on the wire


def parse_acks(acks: Any) -> int:
    """Kafka's acks values ("all", -1, 1, 0, or their strings) as the wire's -1, 1, 0."""
    try:
        return ACKS[acks]
    except (KeyError, TypeError):
        raise ValueError(f"acks must be 'all', -1, 1 or 0, not {acks!r}") from None


@dataclass(frozen=True)
class ProducerConfig:
    """Kafka's producer configs under Python names (linger_ms is linger.ms, ...)."""

    acks: int = -1
    linger_ms: float = 5
    batch_size: int = 1 << 20
    compression: Compression = Compression.NONE
    retries: int = 2**31 - 1
    request_timeout_ms: int = 30_000
    delivery_timeout_ms: int = 120_000
    max_in_flight_requests_per_connection: int = 5
    retry_backoff_ms: int = 100
    buffer_memory: int = 32 << 20
    max_request_size: int = 16 << 20
    max_block_ms: int = 60_000

    def __post_init__(self) -> None:
        positive = ("batch_size", "request_timeout_ms", "delivery_timeout_ms",
                    "max_in_flight_requests_per_connection", "buffer_memory", "max_request_size")
        for name in positive:
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, not {getattr(self, name)!r}")
        for name in ("linger_ms", "retries", "retry_backoff_ms", "max_block_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, not {getattr(self, name)!r}")
        if self.delivery_timeout_ms < self.linger_ms + self.request_timeout_ms:
            raise ValueError("delivery_timeout_ms must be at least linger_ms + request_timeout_ms "
                             f"({self.linger_ms + self.request_timeout_ms:g}), as in Kafka")


class RecordFuture:
    """The outcome of one `send()`: a RecordMetadata, or the error that stopped its batch.

    Offers what callers use of concurrent.futures.Future (result, exception,
    done, add_done_callback) at a fraction of its cost per record: every record
    of a batch shares the batch's one Future (`batch_future`).
    """

    __slots__ = ("_batch", "_index")

    def __init__(self, batch: ProducerBatch, index: int) -> None:
        self._batch = batch
        self._index = index

    @property
    def batch_future(self) -> concurrent.futures.Future:
        return self._batch.result

    def result(self, timeout: float | None = None) -> RecordMetadata:
        base_offset, timestamp_ms = self._batch.result.result(timeout)
        tp = self._batch.tp
        return RecordMetadata(tp.topic, tp.partition, base_offset + self._index if base_offset >= 0 else -1,
                              timestamp_ms)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        return self._batch.result.exception(timeout)

    def done(self) -> bool:
        return self._batch.result.done()

    def cancelled(self) -> bool:
        return False

    def cancel(self) -> bool:
        """Records cannot be taken back once sent, as in Kafka."""
        return False

    def add_done_callback(self, callback: Callable[[RecordFuture], Any]) -> None:
        """Call callback(self) once the record is acknowledged or failed (on the I/O thread)."""
        self._batch.result.add_done_callback(lambda _batch_result: callback(self))


_monotonic = time.monotonic


class _KnownTopic:
    """A topic's partitions as of one metadata snapshot, kept so send() need not look them up."""

    __slots__ = ("metadata", "partitions", "available")

    def __init__(self, metadata: ClusterMetadata, partitions: list[TopicPartition], available: tuple[int, ...]):
        self.metadata = metadata
        self.partitions = partitions
        self.available = available


class _AllDone:
    """A Future for several batches: the count of records, or the first error."""

    def __init__(self, batches: list[ProducerBatch], records: int) -> None:
        self.future: concurrent.futures.Future = concurrent.futures.Future()
        self._pending = len(batches)
        self._records = records
        self._lock = threading.Lock()
        for batch in batches:
            batch.result.add_done_callback(self._one_done)

    def _one_done(self, result: concurrent.futures.Future) -> None:
        with self._lock:
            self._pending -= 1
            if self.future.done():
                return
            error = result.exception()
            if error is not None:
                self.future.set_exception(error)
            elif self._pending == 0:
                self.future.set_result(self._records)


class Producer:
    """Sends records to partition leaders, batching them; thread-safe.

    `send()` returns at once with a future; the record leaves with its batch
    when the batch is full (batch_size), linger_ms after it was opened, or on
    flush()/close(). See docs/CLIENT.md for the configs and guarantees.
    """

    def __init__(
        self,
        bootstrap: str | Sequence[str],
        *,
        acks: str | int = "all",
        linger_ms: float = 5,
        batch_size: int = 1 << 20,
        compression_type: str = "none",
        retries: int = 2**31 - 1,
        request_timeout_ms: int = 30_000,
        delivery_timeout_ms: int = 120_000,
        max_in_flight_requests_per_connection: int = 5,
        retry_backoff_ms: int = 100,
        buffer_memory: int = 32 << 20,
        max_request_size: int = 16 << 20,
        max_block_ms: int = 60_000,
    ) -> None:
        self.config = ProducerConfig(
            acks=parse_acks(acks),
            linger_ms=linger_ms,
            batch_size=batch_size,
            compression=Compression.from_name(compression_type),
            retries=retries,
            request_timeout_ms=request_timeout_ms,
            delivery_timeout_ms=delivery_timeout_ms,
            max_in_flight_requests_per_connection=max_in_flight_requests_per_connection,
            retry_backoff_ms=retry_backoff_ms,
            buffer_memory=buffer_memory,
            max_request_size=max_request_size,
            max_block_ms=max_block_ms,
        )
        addresses = parse_bootstrap(bootstrap)
        self._accumulator = RecordAccumulator(
            batch_size=batch_size, linger_ms=linger_ms, buffer_memory=buffer_memory
        )
        self._partitioner = StickyPartitioner()
        self._topics: dict[str, _KnownTopic] = {}
        self._max_request_size = max_request_size
        self._block_s = max_block_ms / 1000
        self._closed = False
        self._io = IoThread("replog-producer-io")
        self._channels = Channels()
        self._metadata = MetadataManager(
            addresses, self._channels,
            request_timeout_ms=request_timeout_ms, retry_backoff_ms=retry_backoff_ms,
        )
        self._sender = _Sender(self.config, self._accumulator, self._metadata, self._channels)
        self._sender_done = self._io.submit(self._sender.run())

    # -- sending -------------------------------------------------------------------------------

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Iterable[tuple[str, bytes | None]] | None = None,
        partition: int | None = None,
    ) -> RecordFuture:
        """Queue one record; the future resolves to its RecordMetadata once acknowledged.

        The partition: `partition` if given, else murmur2 of the key, else the
        topic's sticky partition. Blocks only to learn a new topic's partitions
        or while buffer_memory is full (at most max_block_ms each).
        """
        if self._closed:
            raise ProducerClosedError("the producer is closed; records can no longer be sent")
        known = self._topics.get(topic)
        if known is None or known.metadata is not self._metadata.current:
            known = self._topic(topic)
        if headers is None:
            row = (key, value)
            size = record_size_bytes(key, value)
        else:
            headers = tuple(headers)
            row = (key, value, headers)
            size = record_size_bytes(key, value, headers)
        if size > self._max_request_size:
            raise RecordTooLargeError(size, self._max_request_size)
        partitions = known.partitions
        now_ms = _monotonic() * 1000
        if partition is None and key is None:
            sticky = self._partitioner.partition(topic, len(partitions), known.available)
            appended = self._accumulator.append(partitions[sticky], row, size, now_ms, True, self._block_s)
            if appended is None:
                partition = self._partitioner.on_new_batch(topic, len(partitions), sticky, known.available)
        else:
            appended = None
            if partition is None:
                partition = partition_for_key(key, len(partitions))
            elif not 0 <= partition < len(partitions):
                raise ValueError(f"topic {topic!r} has partitions 0..{len(partitions) - 1}, not {partition}")
        if appended is None:
            appended = self._accumulator.append(partitions[partition], row, size, now_ms, False, self._block_s)
        batch, index, opened = appended
        if opened:
            self._wake_sender()
        return RecordFuture(batch, index)

    def send_many(
        self, topic: str, values: Sequence[bytes | None], *, partition: int | None = None,
    ) -> concurrent.futures.Future:
        """Queue many keyless records at once: the bulk form of send() for high rates.

        Records fill the sticky partition's open batch, then the next partition's,
        as send() would place them (or all go to `partition`). Returns one Future
        for all of them: the number of records once every batch is acknowledged,
        or the first batch's error.
        """
        if self._closed:
            raise ProducerClosedError("the producer is closed; records can no longer be sent")
        known = self._topic(topic)
        partitions = known.partitions
        if partition is not None and not 0 <= partition < len(partitions):
            raise ValueError(f"topic {topic!r} has partitions 0..{len(partitions) - 1}, not {partition}")
        rows = [(None, value) for value in values]
        sizes = [record_size_bytes(None, value) for value in values]
        too_large = max(sizes, default=0)
        if too_large > self._max_request_size:
            raise RecordTooLargeError(too_large, self._max_request_size)
        batches: list[ProducerBatch] = []
        now_ms = _monotonic() * 1000
        start = 0
        wake = False
        while start < len(rows):
            chosen = partition
            if chosen is None:
                chosen = self._partitioner.partition(topic, len(partitions), known.available)
            end, batch, opened = self._accumulator.append_rows(
                partitions[chosen], rows, sizes, start, now_ms, open_new=partition is not None, block_s=self._block_s
            )
            if batch is None:
                chosen = self._partitioner.on_new_batch(topic, len(partitions), chosen, known.available)
                end, batch, opened = self._accumulator.append_rows(
                    partitions[chosen], rows, sizes, start, now_ms, open_new=True, block_s=self._block_s
                )
            if not batches or batches[-1] is not batch:
                batches.append(batch)
            wake = wake or opened
            start = end
        if wake:
            self._wake_sender()
        if not batches:
            done: concurrent.futures.Future = concurrent.futures.Future()
            done.set_result(0)
            return done
        return _AllDone(batches, len(rows)).future

    def partitions_for(self, topic: str) -> list[int]:
        """The topic's partition indexes (fetching its metadata if needed)."""
        return list(range(len(self._topic(topic).partitions)))

    def _topic(self, topic: str) -> _KnownTopic:
        """The topic as the current metadata describes it; waits up to max_block_ms for an unknown one."""
        metadata = self._metadata.current
        known = self._topics.get(topic)
        if known is not None and known.metadata is metadata:
            return known
        count = metadata.partition_count(topic)
        if count is None:
            metadata = self._wait_for_topic(topic)
            count = metadata.partition_count(topic)
        partitions = known.partitions if known is not None and len(known.partitions) == count else [
            TopicPartition(topic, p) for p in range(count)
        ]
        known = self._topics[topic] = _KnownTopic(metadata, partitions, metadata.available_partitions(topic))
        return known

    def _wait_for_topic(self, topic: str) -> ClusterMetadata:
        if self._io.is_current:
            raise ClientError(f"send() from a callback needs the partitions of {topic!r} known already")
        timeout_s = self.config.max_block_ms / 1000
        return self._io.run(self._metadata.wait_for_topic(topic, timeout_s), timeout_s + 5,
                            what=f"looking up topic {topic!r}")

    def _wake_sender(self) -> None:
        self._io.call_soon(self._sender.wakeup)

    # -- flushing and closing ------------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> None:
        """Send every queued record now and wait until each is acknowledged or failed."""
        if self._io.is_current:
            raise ClientError("flush() cannot be called from a send callback (it runs on the I/O thread)")
        pending = self._accumulator.begin_flush()
        try:
            self._wake_sender()
            _, not_done = concurrent.futures.wait(pending, timeout)
            if not_done:
                raise ClientTimeoutError(
                    f"flush: {len(not_done)} batches were still unacknowledged after {timeout:g} s")
        finally:
            self._accumulator.end_flush()

    def close(self, timeout: float | None = None) -> None:
        """Send what is queued (waiting up to `timeout` s, forever by default), then stop.

        Records still unsent at the timeout fail with ProducerClosedError.
        """
        if self._closed:
            return
        self._closed = True
        self._accumulator.close()
        self._wake_sender()
        try:
            self._sender_done.result(timeout)
        except concurrent.futures.TimeoutError:
            self._io.run(self._sender.abort(), 10, what="aborting the producer's unsent records")
            self._sender_done.result(10)
        finally:
            self._io.run(self._shutdown(), 10, what="closing the producer's connections")
            self._io.stop()

    async def _shutdown(self) -> None:
        self._metadata.cancel()
        await self._channels.close()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _Sender:
    """The I/O thread's loop: drain ready batches into requests, handle their answers."""

    def __init__(
        self, config: ProducerConfig, accumulator: RecordAccumulator, metadata: MetadataManager, channels: Channels,
    ) -> None:
        self._config = config
        self._accumulator = accumulator
        self._metadata = metadata
        self._channels = channels
        self._in_flight: dict[int, int] = {}
        self._requests: set[asyncio.Task[None]] = set()
        self._wake: asyncio.Event | None = None
        self._rng = random.Random()
        metadata.on_update(lambda _metadata: self.wakeup())

    def wakeup(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def run(self) -> None:
        self._wake = asyncio.Event()
        self._metadata.request_update()
        config = self._config
        while True:
            self._wake.clear()
            now_ms = time.monotonic() * 1000
            metadata = self._metadata.current
            busy = [leader for leader, count in self._in_flight.items()
                    if count >= config.max_in_flight_requests_per_connection]
            check = self._accumulator.ready(metadata, now_ms, busy)
            if check.unknown_leader_topics or self._metadata.is_stale:
                self._metadata.add_topics(check.unknown_leader_topics)
                self._metadata.request_update()
            if check.leaders:
                drained = self._accumulator.drain(metadata, check.leaders, config.max_request_size, now_ms)
                for leader, batches in drained.items():
                    self._send(leader, metadata, batches, now_ms)
            for batch in self._accumulator.expire(now_ms, config.delivery_timeout_ms):
                batch.result.set_exception(ProduceError(
                    batch.tp.topic, batch.tp.partition, ErrorCode.REQUEST_TIMED_OUT,
                    f"{len(batch.rows)} records expired: delivery_timeout_ms ({config.delivery_timeout_ms}) "
                    "passed before they could be sent",
                ))
            if self._accumulator.closing_done():
                break
            wait_ms = min(check.next_ready_ms, SENDER_IDLE_WAIT_MS)
            if wait_ms > 0:
                try:
                    await asyncio.wait_for(self._wake.wait(), wait_ms / 1000)
                except TimeoutError:
                    pass
        if self._requests:
            await asyncio.gather(*self._requests, return_exceptions=True)

    async def abort(self) -> None:
        """close() ran out of time: fail what is queued, give up on what is in flight."""
        for batch in self._accumulator.abort_queued():
            self._fail_closed(batch)
        requests = list(self._requests)
        for request in requests:
            request.cancel()
        await asyncio.gather(*requests, return_exceptions=True)
        self.wakeup()

    def _fail_closed(self, batch: ProducerBatch) -> None:
        batch.result.set_exception(ProducerClosedError(
            f"the producer closed before {len(batch.rows)} records for {batch.tp} were acknowledged"
        ))

    def _send(self, leader: int, metadata: ClusterMetadata, batches: list[ProducerBatch], now_ms: float) -> None:
        config = self._config
        wall_ms = time.time() * 1000
        by_topic: dict[str, list[broker_pb2.ProducePartitionData]] = {}
        for batch in batches:
            records = batch.encode(config.compression, int(wall_ms - (now_ms - batch.created_ms)))
            by_topic.setdefault(batch.tp.topic, []).append(broker_pb2.ProducePartitionData(
                partition=batch.tp.partition,
                records=records,
                current_leader_epoch=metadata.leader_epoch_of(batch.tp),
            ))
        request = broker_pb2.ProduceRequest(
            acks=config.acks,
            timeout_ms=config.request_timeout_ms,
            topics=[broker_pb2.ProduceTopicData(topic=topic, partitions=parts) for topic, parts in by_topic.items()],
        )
        self._in_flight[leader] = self._in_flight.get(leader, 0) + 1
        task = asyncio.get_running_loop().create_task(
            self._produce(leader, metadata.brokers[leader], request, batches)
        )
        self._requests.add(task)
        task.add_done_callback(self._requests.discard)

    async def _produce(
        self, leader: int, address: str, request: broker_pb2.ProduceRequest, batches: list[ProducerBatch]
    ) -> None:
        deadline_s = (self._config.request_timeout_ms + DEADLINE_MARGIN_MS) / 1000
        try:
            response = await self._channels.broker(address).Produce(request, timeout=deadline_s)
        except asyncio.CancelledError:
            for batch in batches:
                self._accumulator.complete(batch)
                self._fail_closed(batch)
            raise
        except grpc.aio.AioRpcError as error:
            code = error_code_for_status(error.code())
            detail = f"broker {leader} at {address} answered {error.code().name}: {error.details()}"
            for batch in batches:
                self._settle(batch, code, detail)
        else:
            self._take_response(response, batches)
        finally:
            self._in_flight[leader] -= 1
            self.wakeup()

    def _take_response(self, response: broker_pb2.ProduceResponse, batches: list[ProducerBatch]) -> None:
        # With acks=0 the leader answers before appending, so it has no outcome to report:
        # only an explicit error counts, an unset error code is no failure.
        acks_none = self._config.acks == 0
        results = {
            (topic.topic, part.partition): part for topic in response.topics for part in topic.partitions
        }
        for batch in batches:
            result = results.get(batch.tp)
            if result is None:
                self._settle(batch, ErrorCode.UNKNOWN_SERVER_ERROR, "the broker's answer left the partition out")
                continue
            code = error_code_of(result.error_code)
            if code is ErrorCode.NONE or (acks_none and result.error_code == UNSPECIFIED_ERROR):
                timestamp_ms = result.log_append_time_ms if result.log_append_time_ms >= 0 else batch.timestamp_ms
                self._accumulator.complete(batch)
                batch.result.set_result((result.base_offset, timestamp_ms))
                continue
            if result.HasField("current_leader"):
                hint = result.current_leader
                self._metadata.set_current(self._metadata.current.with_leader_hint(
                    batch.tp, hint.leader_id, hint.leader_epoch, response.node_endpoints
                ))
            self._settle(batch, code, result.error_message)

    def _settle(self, batch: ProducerBatch, code: ErrorCode, detail: str) -> None:
        """A failed send of `batch`: retry it (after a backoff, maybe a metadata refresh) or fail it."""
        config = self._config
        now_ms = time.monotonic() * 1000
        action = produce_action(code, attempts=batch.attempts, retries=config.retries,
                                age_ms=now_ms - batch.created_ms, delivery_timeout_ms=config.delivery_timeout_ms)
        if action is Action.FAIL:
            self._accumulator.complete(batch)
            batch.result.set_exception(ProduceError(batch.tp.topic, batch.tp.partition, code, detail))
            return
        log.info("retrying %d records for %s after %s: %s", len(batch.rows), batch.tp, code.name, detail)
        if action is Action.REFRESH_AND_RETRY:
            self._metadata.request_update()
        wait_ms = backoff_ms(batch.attempts, config.retry_backoff_ms, jitter=self._rng.random())
        self._accumulator.requeue(batch, now_ms + wait_ms)
