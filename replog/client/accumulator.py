"""The producer's record accumulator: records gather into one open batch per partition.

`send()` appends on the caller's thread; the I/O thread asks which leaders
have a batch worth sending (`ready`), takes one batch per partition for each
of those leaders (`drain`), and reports each batch's outcome (`complete` or
`requeue`). One lock guards it all; every method holds it briefly. Time comes
in as a number (monotonic milliseconds), so the rules can be tested without
a clock.

Ordering within a partition: batches leave in the order they were opened,
and a batch that comes back for a retry goes to the front of its partition's
queue. Without idempotence a partition has at most one batch in flight:
several requests to one leader carry different partitions, since a retry of
a first batch could land after a second. An idempotent producer numbers each
partition's records (sequence numbers, set when a batch first leaves) and
keeps up to `in_flight_per_partition` batches of a partition in flight on
the leader's stream, which the leader appends in order; when one comes back
for a retry, nothing more of its partition leaves until the rest are back,
and then they go again in sequence order (the leader answers a batch it
already has with its first offsets, and refuses one after a gap). While a
batch is in flight its partition's open batch keeps filling, so batches grow
to what one round trip's worth of records is, up to batch_size.

Only full batches (and every batch on flush() or close()) join a partition's
batches in flight; one that is not full waits for them, as Nagle's algorithm
holds a small segment back while data is unacknowledged. Every request costs
each hop of an acks=all write a message (the leader's append, a fetch answer
to each follower, their next fetches, the consumers' answers), so a steady
producer that sent each millisecond's few records as a batch of its own would
multiply that work without moving the records sooner once the brokers'
CPU is the bottleneck; held back, the next batch carries what arrived during
the round trip, and five full batches still stream at once.
"""

from __future__ import annotations

import bisect
import threading
from collections import deque
from collections.abc import Collection
from concurrent.futures import Future
from dataclasses import dataclass

from replog.client.cluster import ClusterMetadata
from replog.client.errors import ClientTimeoutError, ProducerClosedError
from replog.core.producer_state import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, SEQUENCE_MODULUS
from replog.core.topic_partition import TopicPartition
from replog.protocol import encode_batch
from replog.protocol.compression import Compression

BATCH_OVERHEAD_BYTES = 61  # the RecordBatch v2 header
INFINITE_MS = float("inf")


def _varint_size(length: int) -> int:
    # Zig-zag doubles a non-negative length: 1 byte below 64, 2 below 8192, ...
    if length < 64:
        return 1
    if length < 8192:
        return 2
    if length < 1 << 20:
        return 3
    if length < 1 << 27:
        return 4
    return 5


def record_size_bytes(key: bytes | None, value: bytes | None, headers: tuple = ()) -> int:
    """The encoded size of one record in a batch, counting its offset delta at the most 3 bytes.

    Within one byte or two of the truth, and never below it for batches of up
    to a million records, so a batch never grows past batch_size.
    """
    body = 6  # attributes 1, timestamp delta (0) 1, offset delta <= 3, headers count 1 (an own timestamp adds 9)
    body += 1 if key is None else _varint_size(len(key)) + len(key)
    body += 1 if value is None else _varint_size(len(value)) + len(value)
    for header_key, header_value in headers:
        raw = len(header_key.encode("utf-8"))
        body += _varint_size(raw) + raw
        body += 1 if header_value is None else _varint_size(len(header_value)) + len(header_value)
    return _varint_size(body) + body


SMALLEST_RECORD_BYTES = record_size_bytes(None, None)  # what a batch must have room for to take one more


class ProducerBatch:
    """Records for one partition that travel together; their futures share `result`."""

    __slots__ = ("tp", "sequence", "rows", "size_bytes", "created_ms", "attempts", "retry_at_ms",
                 "result", "timestamp_ms", "appended_at_ms", "own_timestamps", "latest_own_ms", "base_sequence",
                 "generation", "_encoded")

    def __init__(self, tp: TopicPartition, sequence: int, created_ms: float) -> None:
        self.tp = tp
        self.sequence = sequence  # opening order within the producer
        self.rows: list[tuple] = []  # (key, value), (key, value, headers) or (key, value, headers, timestamp_ms)
        self.size_bytes = BATCH_OVERHEAD_BYTES
        self.created_ms = created_ms
        self.attempts = 0  # times sent
        self.retry_at_ms = 0.0
        self.result: Future = Future()  # (base_offset, timestamp_ms) or the error
        self.timestamp_ms = -1  # the records' create time, fixed when the batch is encoded
        self.appended_at_ms = -1  # the leader's LogAppendTime, on a topic that keeps it; else -1
        self.own_timestamps = 0  # rows that came with a timestamp of their own
        self.latest_own_ms = -1  # the latest of those
        self.base_sequence = NO_SEQUENCE  # an idempotent producer's first sequence, set when it first leaves
        self.generation = 0  # the producer id it was numbered under (the accumulator's count of resets)
        self._encoded: bytes | None = None

    def encode(self, compression: Compression, timestamp_ms: int, producer_id: int = NO_PRODUCER_ID,
               producer_epoch: int = NO_PRODUCER_EPOCH, transactional: bool = False) -> bytes:
        """The batch's bytes, encoded once: a retry sends the very same bytes."""
        if self._encoded is None:
            self.timestamp_ms = timestamp_ms
            latest = None
            if self.own_timestamps:
                everyone = self.own_timestamps == len(self.rows)
                latest = self.latest_own_ms if everyone else max(self.latest_own_ms, timestamp_ms)
            self._encoded = encode_batch(self.rows, base_timestamp_ms=timestamp_ms, max_timestamp_ms=latest,
                                         compression=compression,
                                         producer_id=producer_id, producer_epoch=producer_epoch,
                                         base_sequence=self.base_sequence, transactional=transactional)
        return self._encoded

    def renumber(self, base_sequence: int, generation: int) -> None:
        self.base_sequence, self.generation, self._encoded = base_sequence, generation, None

    def __repr__(self) -> str:
        return f"ProducerBatch({self.tp}, #{self.sequence}, {len(self.rows)} records, attempts={self.attempts})"


@dataclass(frozen=True)
class ReadyCheck:
    leaders: frozenset[int]  # leaders with at least one batch to send now
    next_ready_ms: float  # when another batch becomes sendable (INFINITE_MS: only an event will)
    unknown_leader_topics: frozenset[str]  # topics with batches but no known leader


class RecordAccumulator:
    def __init__(self, *, batch_size: int, linger_ms: float, buffer_memory: int, idempotent: bool = False,
                 in_flight_per_partition: int = 1) -> None:
        self._batch_size = batch_size
        self._idempotent = idempotent
        self._in_flight_max = in_flight_per_partition if idempotent else 1
        self._next_sequence: dict[TopicPartition, int] = {}
        self._generation = 0
        self._retrying: set[TopicPartition] = set()  # a batch came back: the rest must be back before more leave
        self._linger_ms = linger_ms
        self._buffer_memory = buffer_memory
        self._lock = threading.Lock()
        self._space = threading.Condition(self._lock)
        self._queues: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._open: dict[TopicPartition, ProducerBatch] = {}  # the batch taking records, per partition
        self._in_flight: dict[TopicPartition, set[ProducerBatch]] = {}  # partitions' batches in flight
        self._incomplete: set[ProducerBatch] = set()
        self._buffered_bytes = 0
        self._sequence = 0
        self._drain_start = 0
        self._flushing = 0
        self._closing = False
        # When set, only these partitions' batches leave: a transaction's partitions once the coordinator
        # added them (a transactional producer's sender keeps it).
        self.open_to: Collection[TopicPartition] | None = None

    # -- the caller's side ---------------------------------------------------------------------

    def append(
        self, tp: TopicPartition, row: tuple, size: int, now_ms: float, block_s: float = 60.0,
    ) -> tuple[ProducerBatch, int, bool]:
        """Add one record; returns (batch, index in batch, whether a new batch was opened).

        Blocks up to block_s while buffer_memory is used up.
        """
        with self._lock:
            if self._buffered_bytes + size > self._buffer_memory and self._buffered_bytes or self._closing:
                self._wait_for_space(size, block_s)
            batch = self._open.get(tp)
            opened = batch is None or batch.size_bytes + size > self._batch_size
            if opened:
                batch = self._open_batch(tp, now_ms)
            rows = batch.rows
            rows.append(row)
            if len(row) == 4:  # its own timestamp
                batch.own_timestamps += 1
                batch.latest_own_ms = max(batch.latest_own_ms, row[3])
            batch.size_bytes += size
            self._buffered_bytes += size
            return batch, len(rows) - 1, opened

    def _open_batch(self, tp: TopicPartition, now_ms: float) -> ProducerBatch:
        batch = ProducerBatch(tp, self._sequence, now_ms)
        self._sequence += 1
        queue = self._queues.get(tp)
        if queue is None:
            queue = self._queues[tp] = deque()
        queue.append(batch)
        self._open[tp] = batch
        self._incomplete.add(batch)
        self._buffered_bytes += batch.size_bytes
        return batch

    def append_rows(
        self, tp: TopicPartition, rows: list[tuple], ends: list[int], start: int, stop: int, now_ms: float,
        block_s: float = 60.0,
    ) -> tuple[int, ProducerBatch, bool]:
        """Append rows[start:stop] to tp's open batch (or a new one) until it is full; returns (end, batch, opened).

        `ends` are the rows' sizes summed from the first: ends[i] is the size of rows[:i].
        """
        first = ends[start + 1] - ends[start]
        with self._lock:
            if self._buffered_bytes + first > self._buffer_memory and self._buffered_bytes or self._closing:
                self._wait_for_space(first, block_s)
            batch = self._open.get(tp)
            opened = batch is None or batch.size_bytes + first > self._batch_size
            if opened:
                batch = self._open_batch(tp, now_ms)
            room = min(self._batch_size - batch.size_bytes, self._buffer_memory - self._buffered_bytes)
            end = bisect.bisect_right(ends, ends[start] + room, start + 1, stop + 1) - 1  # the rows that fit
            if end == start and not batch.rows:
                end = start + 1  # an empty batch takes one row whatever its size
            total = ends[end] - ends[start]
            batch.rows.extend(rows[start:end])
            batch.size_bytes += total
            self._buffered_bytes += total
            return end, batch, opened

    def _wait_for_space(self, size: int, block_s: float) -> None:
        # Held under self._lock; Condition.wait releases it while waiting.
        if self._closing:
            raise ProducerClosedError("the producer is closed; records can no longer be sent")
        if not self._space.wait_for(
            lambda: self._closing or not self._buffered_bytes or self._buffered_bytes + size <= self._buffer_memory,
            timeout=block_s,
        ):
            raise ClientTimeoutError(
                f"the producer's buffer_memory ({self._buffer_memory} bytes) stayed full for {block_s:g} s; "
                "the cluster is not keeping up, or is unreachable"
            )
        if self._closing:
            raise ProducerClosedError("the producer is closed; records can no longer be sent")

    def begin_flush(self) -> list[Future]:
        """Make every batch sendable now; returns the results to wait for."""
        with self._lock:
            self._flushing += 1
            return [batch.result for batch in self._incomplete]

    def end_flush(self) -> None:
        with self._lock:
            self._flushing -= 1

    def close(self) -> None:
        """Refuse new records; everything queued becomes sendable at once."""
        with self._lock:
            self._closing = True
            self._space.notify_all()

    # -- the I/O thread's side -----------------------------------------------------------------

    def ready(self, metadata: ClusterMetadata, now_ms: float, busy_leaders: Collection[int] = ()) -> ReadyCheck:
        leaders: set[int] = set()
        unknown: set[str] = set()
        next_ready_ms = INFINITE_MS
        with self._lock:
            for tp, queue in self._queues.items():
                if not queue or not self._can_send(tp, queue):
                    continue
                leader = metadata.leader_of(tp)
                if leader < 0:
                    unknown.add(tp.topic)
                    continue
                if leader in leaders or leader in busy_leaders:
                    continue
                wait_ms = self._wait_ms(tp, queue, now_ms)
                if wait_ms <= 0:
                    leaders.add(leader)
                else:
                    next_ready_ms = min(next_ready_ms, wait_ms)
        return ReadyCheck(frozenset(leaders), next_ready_ms, frozenset(unknown))

    def _wait_ms(self, tp: TopicPartition, queue: deque[ProducerBatch], now_ms: float) -> float:
        """How long the head batch of `tp` must still wait; 0 or less means send it now."""
        batch = queue[0]
        if batch.attempts:
            return batch.retry_at_ms - now_ms
        if len(queue) > 1 or self._flushing or self._closing:
            return 0
        return batch.created_ms + self._linger_ms - now_ms

    def drain(
        self, metadata: ClusterMetadata, leaders: Collection[int], max_request_size: int, now_ms: float
    ) -> dict[int, list[ProducerBatch]]:
        """Take, for each of `leaders`, the head batch of each of its partitions, up to max_request_size.

        Batches that are not full go too: a request is leaving anyway (as Kafka drains).
        """
        drained: dict[int, list[ProducerBatch]] = {}
        request_bytes: dict[int, int] = {}
        with self._lock:
            partitions = list(self._queues)
            if partitions:
                self._drain_start = (self._drain_start + 1) % len(partitions)
                partitions = partitions[self._drain_start:] + partitions[: self._drain_start]
            for tp in partitions:
                queue = self._queues[tp]
                if not queue or not self._can_send(tp, queue):
                    continue
                leader = metadata.leader_of(tp)
                if leader not in leaders:
                    continue
                batch = queue[0]
                if batch.attempts and batch.retry_at_ms > now_ms:
                    continue
                size = request_bytes.get(leader, 0)
                if size and size + batch.size_bytes > max_request_size:
                    continue
                queue.popleft()
                if self._open.get(tp) is batch:
                    del self._open[tp]
                batch.attempts += 1
                if self._idempotent and (batch.base_sequence == NO_SEQUENCE or batch.generation != self._generation):
                    first = self._next_sequence.get(tp, 0)
                    batch.renumber(first, self._generation)
                    self._next_sequence[tp] = (first + len(batch.rows)) % SEQUENCE_MODULUS
                self._in_flight.setdefault(tp, set()).add(batch)
                drained.setdefault(leader, []).append(batch)
                request_bytes[leader] = size + batch.size_bytes
        return drained

    def complete(self, batch: ProducerBatch) -> None:
        """The batch is done (written, or failed for good): free its place. Its result is set by the caller."""
        with self._lock:
            self._settle_in_flight(batch)
            self._release(batch)

    def requeue(self, batch: ProducerBatch, retry_at_ms: float) -> None:
        """Put a batch back for a retry, ahead of every batch of its partition opened after it; nothing
        more of its partition leaves until its other batches in flight are back too."""
        with self._lock:
            self._settle_in_flight(batch)
            if batch.tp in self._in_flight:
                self._retrying.add(batch.tp)
            batch.retry_at_ms = retry_at_ms
            queue = self._queues.setdefault(batch.tp, deque())
            index = 0
            while index < len(queue) and queue[index].sequence < batch.sequence:
                index += 1
            queue.insert(index, batch)

    def expire(self, now_ms: float, delivery_timeout_ms: float) -> list[ProducerBatch]:
        """Remove queued (not in-flight) batches opened delivery_timeout_ms ago or earlier."""
        expired: list[ProducerBatch] = []
        with self._lock:
            for queue in self._queues.values():
                kept = [b for b in queue if now_ms - b.created_ms < delivery_timeout_ms]
                if len(kept) != len(queue):
                    expired += [b for b in queue if now_ms - b.created_ms >= delivery_timeout_ms]
                    queue.clear()
                    queue.extend(kept)
            for batch in expired:
                self._release(batch)
        return expired

    def abort_queued(self) -> list[ProducerBatch]:
        """Remove every batch not in flight (close() gave up); the caller fails them."""
        with self._lock:
            aborted = [batch for queue in self._queues.values() for batch in queue]
            for queue in self._queues.values():
                queue.clear()
            for batch in aborted:
                self._release(batch)
        return aborted

    def closing_done(self) -> bool:
        """close() was called and every batch is done: the sender may stop."""
        with self._lock:
            return self._closing and not self._incomplete

    def has_earlier(self, batch: ProducerBatch) -> bool:
        """Whether a batch of the same partition opened before this one is still to be acknowledged."""
        with self._lock:
            flying = self._in_flight.get(batch.tp, ())
            return any(b.sequence < batch.sequence for b in flying) or any(
                b.sequence < batch.sequence for b in self._queues.get(batch.tp, ()))

    @property
    def generation(self) -> int:
        return self._generation

    def reset_sequences(self) -> None:
        """A new producer id: every partition's numbering starts again at 0, and batches numbered under
        the old id are numbered again when they next leave."""
        with self._lock:
            self._generation += 1
            self._next_sequence.clear()

    def _can_send(self, tp: TopicPartition, queue: deque[ProducerBatch]) -> bool:
        if self.open_to is not None and tp not in self.open_to:
            return False
        flying = self._in_flight.get(tp)
        if not flying:
            return True
        if tp in self._retrying or len(flying) >= self._in_flight_max:
            return False
        return (len(queue) > 1 or queue[0].size_bytes + SMALLEST_RECORD_BYTES > self._batch_size
                or self._flushing > 0 or self._closing)

    def _settle_in_flight(self, batch: ProducerBatch) -> None:
        flying = self._in_flight.get(batch.tp)
        if flying is not None:
            flying.discard(batch)
            if not flying:
                del self._in_flight[batch.tp]
                self._retrying.discard(batch.tp)

    def _release(self, batch: ProducerBatch) -> None:
        if self._open.get(batch.tp) is batch:
            del self._open[batch.tp]
        if batch in self._incomplete:
            self._incomplete.discard(batch)
            self._buffered_bytes -= batch.size_bytes
            self._space.notify_all()

