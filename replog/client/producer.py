"""The producer: `send()` appends to per-partition batches; an I/O thread ships them to leaders.

One ProduceRequest per leader covers the head batch of each of its ready
partitions; up to max_in_flight_requests_per_connection requests per leader
are in flight at once over one reused gRPC channel. Records are encoded once
per batch (`encode_batch`), on the I/O thread, when the batch leaves.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from replog.client.accumulator import ProducerBatch, RecordAccumulator, record_size_bytes
from replog.client.cluster import ClusterMetadata
from replog.client.configs import ProducerConfig, parse_acks
from replog.client.errors import ClientError, ClientTimeoutError, ProducerClosedError, RecordTooLargeError
from replog.client.io import Channels, IoThread, parse_bootstrap
from replog.client.metadata import MetadataManager
from replog.client.partitioner import StickyPartitioner, partition_for_key
from replog.client.sender import Sender
from replog.client.types import RecordMetadata
from replog.core.topic_partition import TopicPartition
from replog.protocol.compression import Compression
from replog.rpc.channels import ClientSecurity


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


def as_bytes(data: Any, what: str) -> bytes:
    """Keys, values and header values are bytes; bytearray and memoryview are copied into bytes."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    hint = f"; encode it first ({what}.encode())" if isinstance(data, str) else ""
    raise TypeError(f"the {what} must be bytes, not {type(data).__name__}{hint}")


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
        enable_idempotence: bool | None = None,
        security: ClientSecurity | None = None,
    ) -> None:
        acks_value = parse_acks(acks)
        if enable_idempotence is None:
            enable_idempotence = ProducerConfig.idempotence_default(acks_value, max_in_flight_requests_per_connection,
                                                                    retries)
        self.config = ProducerConfig(
            acks=acks_value,
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
            enable_idempotence=enable_idempotence,
        )
        addresses = parse_bootstrap(bootstrap)
        self._accumulator = RecordAccumulator(
            batch_size=batch_size, linger_ms=linger_ms, buffer_memory=buffer_memory,
            idempotent=enable_idempotence, in_flight_per_partition=max_in_flight_requests_per_connection,
        )
        self._partitioner = StickyPartitioner(batch_size)
        self._topics: dict[str, _KnownTopic] = {}
        self._max_request_size = max_request_size
        self._block_s = max_block_ms / 1000
        self._closed = False
        self._io = IoThread("replog-producer-io")
        self._channels = Channels(security)
        self._metadata = MetadataManager(
            addresses, self._channels,
            request_timeout_ms=request_timeout_ms, retry_backoff_ms=retry_backoff_ms,
        )
        self._sender = Sender(self.config, self._accumulator, self._metadata, self._channels)
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
        if value.__class__ is not bytes and value is not None:
            value = as_bytes(value, "value")
        if key.__class__ is not bytes and key is not None:
            key = as_bytes(key, "key")
        known = self._topics.get(topic)
        if known is None or known.metadata is not self._metadata.current:
            known = self._topic(topic)
        if headers is None:
            row = (key, value)
            size = record_size_bytes(key, value)
        else:
            headers = tuple((name, None if v is None else as_bytes(v, f"header {name!r}")) for name, v in headers)
            row = (key, value, headers)
            size = record_size_bytes(key, value, headers)
        if size > self._max_request_size:
            raise RecordTooLargeError(size, self._max_request_size)
        partitions = known.partitions
        now_ms = _monotonic() * 1000
        if partition is None and key is None:
            partition = self._partitioner.partition(topic, len(partitions), known.available)
            self._partitioner.produced(topic, len(partitions), size, known.available)
        elif partition is None:
            partition = partition_for_key(key, len(partitions))
        elif not 0 <= partition < len(partitions):
            raise ValueError(f"topic {topic!r} has partitions 0..{len(partitions) - 1}, not {partition}")
        batch, index, opened = self._accumulator.append(partitions[partition], row, size, now_ms, self._block_s)
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
        rows = [(None, value if value.__class__ is bytes or value is None else as_bytes(value, "value"))
                for value in values]
        sizes = [record_size_bytes(None, value) for _key, value in rows]
        too_large = max(sizes, default=0)
        if too_large > self._max_request_size:
            raise RecordTooLargeError(too_large, self._max_request_size)
        batches: list[ProducerBatch] = []
        now_ms = _monotonic() * 1000
        start = 0
        wake = False
        while start < len(rows):
            if partition is None:
                chosen = self._partitioner.partition(topic, len(partitions), known.available)
                stop = _stop_within(sizes, start, self._partitioner.room_bytes(topic))
            else:
                chosen, stop = partition, len(rows)
            end, batch, opened = self._accumulator.append_rows(
                partitions[chosen], rows, sizes, start, stop, now_ms, self._block_s)
            if partition is None:
                self._partitioner.produced(topic, len(partitions), sum(sizes[start:end]), known.available)
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



def _stop_within(sizes: list[int], start: int, room_bytes: int) -> int:
    """The end of the run of records from `start` that fills room_bytes (at least one record)."""
    total = 0
    for index in range(start, len(sizes)):
        total += sizes[index]
        if total >= room_bytes:
            return index + 1
    return len(sizes)
