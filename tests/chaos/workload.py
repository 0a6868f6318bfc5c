"""The clients of a chaos run: writers of unique values that record every answer, and a live reader.

A writer's history is what the checker judges: which values were sent, which
were acknowledged and at which offset, which failed, and which never got an
answer before the writer gave up on them.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from replog.client import ClientError, Consumer, LogTruncationError, Producer, TopicPartition

SEND_TICK_S = 0.005
POLL_TIMEOUT_MS = 200
FLUSH_S_MAX = 60.0
CLOSE_S_MAX = 10.0
THREAD_JOIN_S_MAX = 90.0


@dataclass
class Ack:
    partition: int
    offset: int


@dataclass
class WriterHistory:
    """Everything one writer saw: values in send order with their partitions, and their outcomes."""

    name: str
    acks: str
    sent: list[tuple[bytes, int]] = field(default_factory=list)  # (value, partition), in send order
    acknowledged: dict[bytes, Ack] = field(default_factory=dict)
    failed: dict[bytes, str] = field(default_factory=dict)  # value -> the error's name

    @property
    def unanswered(self) -> list[bytes]:
        return [v for v, _ in self.sent if v not in self.acknowledged and v not in self.failed]


class Writer:
    """Sends unique values at a fixed rate, round robin over the partitions, in a thread of its own."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, *, name: str, acks: str = "all",
                 rate_per_s: float = 400.0, request_timeout_ms: int = 8_000,
                 delivery_timeout_ms: int = 30_000) -> None:
        self.topic = topic
        self.partitions = partitions
        self.rate_per_s = rate_per_s
        self.history = WriterHistory(name, acks)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._producer = Producer(bootstrap, acks=acks, linger_ms=5, retry_backoff_ms=50,
                                  request_timeout_ms=request_timeout_ms,
                                  delivery_timeout_ms=delivery_timeout_ms)
        self._thread = threading.Thread(target=self._run, name=f"writer-{name}", daemon=True)
        self.error: BaseException | None = None

    def start(self) -> Writer:
        self._thread.start()
        return self

    def acknowledged_count(self) -> int:
        with self._lock:
            return len(self.history.acknowledged)

    def acknowledged_offsets(self, partition: int) -> list[int]:
        with self._lock:
            return [a.offset for a in self.history.acknowledged.values() if a.partition == partition]

    def _run(self) -> None:
        started = time.monotonic()
        index = 0
        try:
            while not self._stop.is_set():
                due = int((time.monotonic() - started) * self.rate_per_s) + 1
                while index < due and not self._stop.is_set():
                    value = b"%s-%08d" % (self.history.name.encode(), index)
                    partition = index % self.partitions
                    with self._lock:
                        self.history.sent.append((value, partition))
                    index += 1
                    try:
                        future = self._producer.send(self.topic, value, partition=partition)
                    except ClientError as error:
                        with self._lock:
                            self.history.failed[value] = type(error).__name__
                        continue
                    future.add_done_callback(lambda f, v=value: self._answered(v, f))
                time.sleep(SEND_TICK_S)
        except BaseException as error:  # the test fails on it in stop()
            self.error = error

    def _answered(self, value: bytes, future) -> None:
        error = future.exception()
        with self._lock:
            if error is None:
                metadata = future.result()
                self.history.acknowledged[value] = Ack(metadata.partition, metadata.offset)
            else:
                self.history.failed[value] = getattr(getattr(error, "error_code", None), "name",
                                                     type(error).__name__)

    def stop(self) -> WriterHistory:
        """Stop sending, wait for the answers still due, and hand back the history."""
        self._stop.set()
        self._thread.join(THREAD_JOIN_S_MAX)
        try:
            self._producer.flush(FLUSH_S_MAX)
        except ClientError:
            pass  # unanswered records stay unanswered: the checker counts them as indeterminate
        self._producer.close(CLOSE_S_MAX)
        if self.error is not None:
            raise self.error
        with self._lock:
            return self.history


@dataclass
class ReaderHistory:
    """What a live consumer returned, partition by partition, and the truncations it reported."""

    records: dict[int, list[tuple[int, bytes]]] = field(default_factory=dict)  # partition -> (offset, value)
    truncations: list[LogTruncationError] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    breaks: dict[int, list[int]] = field(default_factory=dict)  # partition -> indexes where it seeked back


class Reader:
    """A consumer of every partition from the start, polling in a thread while the faults happen."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.topic = topic
        self.history = ReaderHistory(records={p: [] for p in range(partitions)},
                                     breaks={p: [] for p in range(partitions)})
        self._consumer = Consumer(bootstrap, auto_offset_reset="earliest", fetch_max_wait_ms=200,
                                  request_timeout_ms=8_000)
        self._consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="reader", daemon=True)

    def start(self) -> Reader:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for record in self._consumer.poll(POLL_TIMEOUT_MS):
                    self.history.records[record.partition].append((record.offset, record.value))
            except LogTruncationError as error:
                # KIP-320: records this consumer returned are gone; go on from where the new leader's log ends.
                self.history.truncations.append(error)
                self.history.breaks[error.partition].append(len(self.history.records[error.partition]))
                self._consumer.seek(TopicPartition(error.topic, error.partition), max(error.end_offset, 0))
            except ClientError as error:
                self.history.errors.append(str(error))
                time.sleep(0.1)

    def stop(self) -> ReaderHistory:
        self._stop.set()
        self._thread.join(THREAD_JOIN_S_MAX)
        self._consumer.close()
        return self.history


def read_everything(bootstrap: str, topic: str, partitions: int, timeout_s: float = 60.0
                    ) -> tuple[dict[int, list[tuple[int, bytes]]], dict[int, int]]:
    """Every committed record of the topic, read from the start by a fresh consumer, and the HWs."""
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    found: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
    with Consumer(bootstrap, auto_offset_reset="earliest", max_poll_records=5000) as consumer:
        consumer.assign(tps)
        high_watermarks = {tp.partition: offset for tp, offset in consumer.end_offsets(tps).items()}
        deadline = time.monotonic() + timeout_s
        while any(consumer.position(tp) < high_watermarks[tp.partition] for tp in tps):
            if time.monotonic() > deadline:
                raise AssertionError(f"the final read of {topic} did not reach the high watermarks "
                                     f"{high_watermarks} within {timeout_s:g} s")
            for record in consumer.poll(500):
                if record.offset < high_watermarks[record.partition]:
                    found[record.partition].append((record.offset, record.value))
    return found, high_watermarks
