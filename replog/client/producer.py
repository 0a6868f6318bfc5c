"""The producer: `send()` appends to per-partition batches; an I/O thread ships them to leaders.

One ProduceRequest per leader covers the head batch of each of its ready
partitions; up to max_in_flight_requests_per_connection requests per leader
are in flight at once over one reused gRPC channel. Records are encoded once
per batch (`encode_batch`), on the I/O thread, when the batch leaves.
"""

from __future__ import annotations

import bisect
import concurrent.futures
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from replog.client.accumulator import ProducerBatch, RecordAccumulator, record_size_bytes
from replog.client.cluster import ClusterMetadata
from replog.client.configs import ProducerConfig, parse_acks
from replog.client.coordinator import TRANSACTION, Coordinators
from replog.client.errors import (
    ClientError,
    ClientTimeoutError,
    ProducerClosedError,
    RecordTooLargeError,
    TransactionStateError,
)
from replog.client.io import Channels, IoThread, parse_bootstrap
from replog.client.metadata import MetadataManager
from replog.client.partitioner import StickyPartitioner, partition_for_key
from replog.client.sender import Sender
from replog.client.transactions import TransactionManager, group_metadata_of
from replog.client.types import (
    ConsumerGroupMetadata,
    OffsetAndMetadata,
    PreparedTransaction,
    RecordMetadata,
    offsets_to_commit,
)
from replog.core.topic_partition import TopicPartition
from replog.core.txn.producer import ProducerTxnEvent, ProducerTxnState
from replog.protocol.compression import Compression
from replog.protocol.record_encoding import keyless_sizes
from replog.rpc.channels import ClientSecurity


class RecordFuture:
    """The outcome of one `send()`: a RecordMetadata, or the error that stopped its batch.

    Offers what callers use of concurrent.futures.Future (result, exception,
    done, add_done_callback) at a fraction of its cost per record: every record
    of a batch shares the batch's one Future (`batch_future`).
    """

    __slots__ = ("_batch", "_index", "_timestamp_ms")

    def __init__(self, batch: ProducerBatch, index: int, timestamp_ms: int | None = None) -> None:
        self._batch = batch
        self._index = index
        self._timestamp_ms = timestamp_ms  # the record's own, when send() was given one

    @property
    def batch_future(self) -> concurrent.futures.Future:
        return self._batch.result

    def result(self, timeout: float | None = None) -> RecordMetadata:
        base_offset, timestamp_ms = self._batch.result.result(timeout)
        if self._timestamp_ms is not None and self._batch.appended_at_ms < 0:
            timestamp_ms = self._timestamp_ms  # CreateTime: the record keeps its own
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
log = logging.getLogger("replog.client")
# A record's own timestamp is stored relative to its batch's: up to 10 bytes where record_size_bytes counts 1.
OWN_TIMESTAMP_BYTES = 9


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
        transactional_id: str | None = None,
        transaction_timeout_ms: int = 60_000,
        security: ClientSecurity | None = None,
    ) -> None:
        acks_value = parse_acks(acks)
        if enable_idempotence is None:
            enable_idempotence = ProducerConfig.idempotence_default(acks_value, max_in_flight_requests_per_connection,
                                                                    retries, transactional_id is not None)
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
            transactional_id=transactional_id,
            transaction_timeout_ms=transaction_timeout_ms,
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
        self._txn: TransactionManager | None = None
        if transactional_id is not None:
            timeouts = {"request_timeout_ms": request_timeout_ms, "retry_backoff_ms": retry_backoff_ms}
            self._txn = TransactionManager(
                transactional_id, transaction_timeout_ms,
                transactions=Coordinators(self._metadata, self._channels, key_type=TRANSACTION, **timeouts),
                groups=Coordinators(self._metadata, self._channels, **timeouts),
                use_producer=self._sender.use_producer, wakeup=self._sender.wakeup,
            )
            self._sender.transact(self._txn)
        self._sender_done = self._io.submit(self._sender.run())

    # -- sending -------------------------------------------------------------------------------

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Iterable[tuple[str, bytes | None]] | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> RecordFuture:
        """Queue one record; the future resolves to its RecordMetadata once acknowledged.

        The partition: `partition` if given, else murmur2 of the key, else the
        topic's sticky partition. The timestamp (CreateTime): `timestamp_ms`, in ms
        since the Unix epoch, if given, else the time its batch leaves. Blocks only
        to learn a new topic's partitions or while buffer_memory is full (at most
        max_block_ms each).
        """
        if self._closed:
            raise ProducerClosedError("the producer is closed; records can no longer be sent")
        txn = self._txn
        if txn is not None:
            txn.check_send()
        if value.__class__ is not bytes and value is not None:
            value = as_bytes(value, "value")
        if key.__class__ is not bytes and key is not None:
            key = as_bytes(key, "key")
        known = self._topics.get(topic)
        if known is None or known.metadata is not self._metadata.current:
            known = self._topic(topic)
        if headers is not None:
            headers = tuple((name, None if v is None else as_bytes(v, f"header {name!r}")) for name, v in headers)
        if timestamp_ms is not None:
            if timestamp_ms.__class__ is not int or timestamp_ms < 0:
                raise ValueError(f"timestamp_ms must be ms since the Unix epoch, not {timestamp_ms!r}")
            row = (key, value, headers or (), timestamp_ms)
            size = record_size_bytes(key, value, row[2]) + OWN_TIMESTAMP_BYTES
        elif headers is None:
            row = (key, value)
            size = record_size_bytes(key, value)
        else:
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
        tp = partitions[partition]
        batch, index, opened = self._accumulator.append(tp, row, size, now_ms, self._block_s)
        if (txn is not None and txn.note_partition(tp)) or opened:
            self._wake_sender()
        return RecordFuture(batch, index, timestamp_ms)

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
        if self._txn is not None:
            self._txn.check_send()
        known = self._topic(topic)
        partitions = known.partitions
        if partition is not None and not 0 <= partition < len(partitions):
            raise ValueError(f"topic {topic!r} has partitions 0..{len(partitions) - 1}, not {partition}")
        rows = values if values.__class__ is list else list(values)  # a bare value is a row without key
        sizes = keyless_sizes(rows)
        if sizes is None:
            rows = [value if value.__class__ is bytes or value is None else as_bytes(value, "value")
                    for value in rows]
            sizes = [record_size_bytes(None, value) for value in rows]
        too_large = max(sizes, default=0)
        if too_large > self._max_request_size:
            raise RecordTooLargeError(too_large, self._max_request_size)
        ends = list(itertools.accumulate(sizes, initial=0))  # ends[i]: the size of rows[:i]
        batches: list[ProducerBatch] = []
        now_ms = _monotonic() * 1000
        start = 0
        wake = False
        while start < len(rows):
            if partition is None:
                chosen = self._partitioner.partition(topic, len(partitions), known.available)
                stop = _stop_within(ends, start, self._partitioner.room_bytes(topic))
            else:
                chosen, stop = partition, len(rows)
            end, batch, opened = self._accumulator.append_rows(
                partitions[chosen], rows, ends, start, stop, now_ms, self._block_s)
            if partition is None:
                self._partitioner.produced(topic, len(partitions), ends[end] - ends[start], known.available)
            if not batches or batches[-1] is not batch:
                batches.append(batch)
            wake = (self._txn is not None and self._txn.note_partition(batch.tp)) or opened or wake
            start = end
        if wake:
            self._wake_sender()
        if not batches:
            done: concurrent.futures.Future = concurrent.futures.Future()
            done.set_result(0)
            return done
        return _AllDone(batches, len(rows)).future

    def partitions_for(self, topic: str, timeout: float | None = None) -> list[int]:
        """The topic's partition indexes, fetching its metadata if needed: waits up to `timeout` s
        (max_block_ms by default) for a topic the metadata does not know, then raises UnknownTopicError."""
        return list(range(len(self._topic(topic, timeout).partitions)))

    def _topic(self, topic: str, timeout: float | None = None) -> _KnownTopic:
        """The topic as the current metadata describes it; waits up to `timeout` s (max_block_ms by default)
        for an unknown one."""
        metadata = self._metadata.current
        known = self._topics.get(topic)
        if known is not None and known.metadata is metadata:
            return known
        count = metadata.partition_count(topic)
        if count is None:
            metadata = self._wait_for_topic(topic, self.config.max_block_ms / 1000 if timeout is None else timeout)
            count = metadata.partition_count(topic)
        partitions = known.partitions if known is not None and len(known.partitions) == count else [
            TopicPartition(topic, p) for p in range(count)
        ]
        known = self._topics[topic] = _KnownTopic(metadata, partitions, metadata.available_partitions(topic))
        return known

    def _wait_for_topic(self, topic: str, timeout_s: float) -> ClusterMetadata:
        if self._io.is_current:
            raise ClientError(f"send() from a callback needs the partitions of {topic!r} known already")
        return self._io.run(self._metadata.wait_for_topic(topic, timeout_s), timeout_s + 5,
                            what=f"looking up topic {topic!r}")

    def _wake_sender(self) -> None:
        self._io.call_soon(self._sender.wakeup)

    # -- transactions --------------------------------------------------------------------------

    def init_transactions(self, timeout: float | None = None) -> None:
        """Register the transactional id with its coordinator (InitProducerId), once, before the first
        transaction: a transaction an earlier producer with the same id left open is ended, and that
        producer is fenced. Waits up to `timeout` s (max_block_ms by default); after ClientTimeoutError
        it may be called again."""
        txn = self._transactional("init_transactions()")
        txn.move(ProducerTxnEvent.INIT, "init_transactions()")
        timeout_s = self._block_s if timeout is None else timeout
        self._io.run(txn.initialize(timeout_s), timeout_s + 5, what="init_transactions()")

    def begin_transaction(self) -> None:
        """Open a transaction: what send() and send_offsets_to_transaction() add to it becomes visible
        to read_committed consumers all at once at commit_transaction(), or never."""
        self._transactional("begin_transaction()").move(ProducerTxnEvent.BEGIN, "begin_transaction()")

    def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
                                    group_metadata: ConsumerGroupMetadata | str,
                                    timeout: float | None = None) -> None:
        """Commit a consumer group's offsets (the next offset to read, per partition) as part of the
        transaction: the group sees them when the transaction commits, and never if it aborts.
        `group_metadata` is the consumer's group_metadata() (or a bare group id, for a consumer that
        uses assign()). AddOffsetsToTxn at the transaction coordinator, then TxnOffsetCommit at the
        group's coordinator; waits up to `timeout` s (max_block_ms by default)."""
        txn = self._transactional("send_offsets_to_transaction()")
        group = group_metadata_of(group_metadata)
        committed = offsets_to_commit(offsets)
        txn.check_open("send_offsets_to_transaction()")
        if not committed:
            return
        timeout_s = self._block_s if timeout is None else timeout
        self._io.run(txn.send_offsets(committed, group, timeout_s), timeout_s + 5,
                     what="send_offsets_to_transaction()")

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Send every record of the transaction, wait for them, then commit it (EndTxn): from here on
        read_committed consumers see them. TransactionAbortableError if a record failed (abort then);
        ProducerFencedError if a newer producer took the transactional id. Waits up to `timeout` s
        (max_block_ms by default); after ClientTimeoutError it may be called again."""
        txn = self._transactional("commit_transaction()")
        txn.move(ProducerTxnEvent.COMMIT, "commit_transaction()")
        deadline = time.monotonic() + (self._block_s if timeout is None else timeout)
        self.flush(max(deadline - time.monotonic(), 0))
        txn.check_open("commit_transaction()")
        remaining_s = max(deadline - time.monotonic(), 0.001)
        self._io.run(txn.end(True, remaining_s), remaining_s + 5, what="commit_transaction()")

    def prepare_transaction(self, timeout: float | None = None) -> PreparedTransaction:
        """The first phase of a two-phase commit (KIP-939's prepareTransaction): send every record of the
        transaction and wait for them, then add nothing more. The transaction stays open, also after
        close(), until commit_transaction() or abort_transaction() here, or Admin.end_transaction() with
        the returned PreparedTransaction anywhere, ends it (or its coordinator aborts it after
        transaction_timeout_ms). TransactionAbortableError if a record failed (abort then). Waits up to
        `timeout` s (max_block_ms by default); after ClientTimeoutError it may be called again."""
        txn = self._transactional("prepare_transaction()")
        txn.check_open("prepare_transaction()")
        self.flush(self._block_s if timeout is None else timeout)
        return txn.prepared()

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Give up the transaction: records not sent yet fail (TransactionAbortedError), those sent are
        waited for, then EndTxn aborts it and read_committed consumers never see any of it. Then a new
        transaction may begin. Waits up to `timeout` s (max_block_ms by default)."""
        txn = self._transactional("abort_transaction()")
        txn.move(ProducerTxnEvent.ABORT, "abort_transaction()")
        deadline = time.monotonic() + (self._block_s if timeout is None else timeout)
        self.flush(max(deadline - time.monotonic(), 0))
        remaining_s = max(deadline - time.monotonic(), 0.001)
        self._io.run(txn.end(False, remaining_s), remaining_s + 5, what="abort_transaction()")

    def _transactional(self, what: str) -> TransactionManager:
        if self._closed:
            raise ProducerClosedError(f"the producer is closed; {what} is refused")
        if self._txn is None:
            raise TransactionStateError(f"{what} needs a transactional producer: create the Producer with "
                                        "transactional_id=...")
        return self._txn

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
        if self._txn is not None and self._txn.state in (ProducerTxnState.IN_TRANSACTION,
                                                          ProducerTxnState.ABORTABLE_ERROR):
            # As Kafka's producer does: an open transaction is aborted rather than left to time out (a
            # prepared one is not: it waits for whoever holds its PreparedTransaction).
            try:
                self.abort_transaction(timeout)
            except ClientError as error:
                log.warning("the open transaction was not aborted at close (%s); its coordinator aborts it "
                            "after transaction_timeout_ms", error)
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



def _stop_within(ends: list[int], start: int, room_bytes: int) -> int:
    """The end of the run of records from `start` that fills room_bytes (at least one record);
    ends[i] is the size of the records before i."""
    return min(bisect.bisect_left(ends, ends[start] + room_bytes, start + 1), len(ends) - 1)
