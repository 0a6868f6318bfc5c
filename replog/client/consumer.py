"""The consumer: assigned partitions, fetched from their leaders, returned by poll().

Leader changes are followed through the metadata; after one, the position is
checked against the new leader's log (KIP-320) before fetching resumes, so a
truncated log is reported as LogTruncationError instead of being skipped over
or read twice. The I/O side is `fetcher.Fetcher`; the shared state
`fetch_buffer.FetchBuffer`; the rules for positions `fetch_state.Assignment`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

from replog.client.configs import ConsumerConfig
from replog.client.errors import ClientError
from replog.client.fetch_buffer import FetchBuffer
from replog.client.fetch_state import EARLIEST, LATEST, Assignment, State
from replog.client.fetcher import Fetcher
from replog.client.io import Channels, IoThread, parse_bootstrap
from replog.client.metadata import MetadataManager
from replog.client.types import ConsumerRecord
from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition


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
        self._buffer = FetchBuffer(Assignment(auto_offset_reset))
        self._assignment = self._buffer.assignment
        self._lock = self._buffer.lock
        self._closed = False
        self._io = IoThread("replog-consumer-io")
        self._channels = Channels()
        self._metadata = MetadataManager(
            addresses, self._channels, request_timeout_ms=request_timeout_ms, retry_backoff_ms=retry_backoff_ms,
        )
        self._fetcher = Fetcher(self.config, self._buffer, self._metadata, self._channels)
        self._fetcher_done = self._io.submit(self._fetcher.run())

    # -- assignment and positions --------------------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Read exactly these partitions (replacing any earlier assignment)."""
        tps = [TopicPartition(*tp) for tp in partitions]
        with self._lock:
            self._assignment.assign(tps)
            self._buffer.drop_stale()
        self._io.call_soon(self._fetcher.follow, sorted({tp.topic for tp in tps}))

    def assignment(self) -> set[TopicPartition]:
        with self._lock:
            return set(self._assignment.partitions)

    def subscribe(self, topics: Iterable[str]) -> None:
        raise ClientError("subscribe() needs consumer groups, which are not supported yet; use assign()")

    def seek(self, partition: TopicPartition, offset: int) -> None:
        with self._lock:
            self._assignment.seek(TopicPartition(*partition), offset)
            self._buffer.drop_stale()
        self._wake_fetcher()

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._seek_to(partitions, EARLIEST)

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._seek_to(partitions, LATEST)

    def _seek_to(self, partitions: Iterable[TopicPartition] | None, strategy: str) -> None:
        with self._lock:
            for tp in list(self._assignment.partitions) if partitions is None else partitions:
                self._assignment.seek_to(TopicPartition(*tp), strategy)
            self._buffer.drop_stale()
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
                self._buffer.changed.wait(remaining)

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
                error = self._buffer.take_error()
                if error is not None:
                    raise error
                records = self._buffer.collect(self.config.max_poll_records)
                if records:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return []
                self._buffer.changed.wait(remaining)
        self._wake_fetcher()
        return records

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
