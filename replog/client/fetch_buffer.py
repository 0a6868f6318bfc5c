"""What the consumer's fetcher and poll() share: positions, and fetched records not yet returned.

The fetcher appends each partition's records from a fetch answer as one
CompletedFetch; poll() decodes them batch by batch on the caller's thread.
Everything here is used with `FetchBuffer.lock` held.
"""

from __future__ import annotations

import bisect
import collections
import operator
import threading

from replog.client.errors import ClientError, FetchError
from replog.client.fetch_state import Assignment, State
from replog.client.types import ConsumerRecord, TimestampType
from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition
from replog.core.txn.read_committed import AbortedFilter
from replog.protocol import CorruptBatchError, decode_body, iter_headers
from replog.protocol.control import fetched_header
from replog.protocol.header import read_header
from replog.protocol.layout import HEADER_SIZE, LOG_OVERHEAD

_offset_of = operator.attrgetter("offset")


class CompletedFetch:
    """One partition's records from one fetch answer, decoded batch by batch as poll() asks."""

    __slots__ = ("tp", "generation", "_view", "_headers", "_records", "_next_offset", "_index", "_aborted",
                 "exhausted")

    def __init__(self, tp: TopicPartition, generation: int, records: bytes,
                 aborted: AbortedFilter | None = None) -> None:
        """`aborted`: a read_committed answer's aborted transactions, whose batches are skipped."""
        self.tp = tp
        self.generation = generation
        self._aborted = aborted
        self._view = memoryview(records)
        self._headers = iter_headers(self._view)
        self._records: list[ConsumerRecord] | None = None  # the batch being taken, decoded
        self._next_offset = 0  # the offset after that batch
        self._index = 0
        self.exhausted = False

    def take(self, out: list, limit: int, position: int) -> tuple[int, int]:
        """Append up to `limit` records at or after `position` to out; returns (next position, last epoch)."""
        last_epoch = -1
        while limit > 0:
            records = self._records
            if records is None:
                header = next(self._headers, None)
                if header is None:
                    self.exhausted = True
                    break
                # Every batch goes through the filter, those before the position too: an ABORT marker there
                # ends its producer's aborted transaction for the batches after it.
                hidden = header.is_control if self._aborted is None else not self._aborted.keeps(
                    fetched_header(self._view, header))
                if hidden or header.next_offset <= position:
                    # Control batches and aborted transactions are never returned; the position passes them.
                    position = max(position, header.next_offset)
                    continue
                suffix = (header.partition_leader_epoch,
                          TimestampType.LOG_APPEND_TIME if header.is_log_append_time else TimestampType.CREATE_TIME)
                records = self._records = decode_body(self._view, header, ConsumerRecord, self.tp, suffix)
                self._index = 0
                self._next_offset = header.next_offset
            start = self._index
            if start < len(records) and records[start].offset < position:
                start = bisect.bisect_left(records, position, lo=start, key=_offset_of)
            end = min(len(records), start + limit)
            if start < end:
                out += records[start:end] if start or end < len(records) else records
                limit -= end - start
                position = records[end - 1].offset + 1
                last_epoch = records[end - 1].leader_epoch
            self._index = end
            if end >= len(records):
                position = max(position, self._next_offset)
                self._records = None
        return position, last_epoch


def next_fetch_offset(records: bytes, fetch_offset: int) -> int:
    """The offset after the last whole batch in `records` (a cut-off trailing batch is fetched again)."""
    view = memoryview(records)
    position = 0
    next_offset = fetch_offset
    while len(view) - position >= HEADER_SIZE:
        header = read_header(view, position)
        end = position + LOG_OVERHEAD + header.batch_length
        if header.batch_length <= 0 or end > len(view):
            break
        next_offset = max(next_offset, header.next_offset)
        position = end
    return next_offset


class FetchBuffer:
    def __init__(self, assignment: Assignment) -> None:
        self.assignment = assignment
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)  # notified when records, errors or positions arrive
        self.completed: collections.deque[CompletedFetch] = collections.deque()
        self.failure: ClientError | None = None  # the fetcher stopped on a bug; every poll() raises it

    def buffered(self) -> collections.Counter[TopicPartition]:
        """Answers waiting per partition."""
        return collections.Counter(f.tp for f in self.completed)

    def take_error(self) -> ClientError | None:
        """The error poll() raises next: the fetcher's failure, else a stopped partition's."""
        return self.failure or self.assignment.take_error()

    def collect(self, limit: int) -> list[ConsumerRecord]:
        """Up to `limit` records at the positions, advancing them; call with `lock` held."""
        out: list[ConsumerRecord] = []
        assignment = self.assignment
        paused: list[CompletedFetch] = []  # kept, in their order, for when their partitions resume
        while self.completed and len(out) < limit:
            fetch = self.completed[0]
            part = assignment.partitions.get(fetch.tp)
            if part is None or part.generation != fetch.generation or part.state is not State.FETCHING:
                self.completed.popleft()
                continue
            if part.paused:
                paused.append(self.completed.popleft())
                continue
            try:
                position, last_epoch = fetch.take(out, limit - len(out), part.position)
            except CorruptBatchError as error:
                self.completed.popleft()
                assignment.on_fatal(fetch.tp, fetch.generation, FetchError(
                    fetch.tp.topic, fetch.tp.partition, ErrorCode.CORRUPT_MESSAGE,
                    f"{error}; seek past offset {part.position} to skip it",
                ))
                continue
            assignment.consumed(fetch.tp, position, last_epoch)
            if fetch.exhausted:
                self.completed.popleft()
        self.completed.extendleft(reversed(paused))
        return out

    def drop_stale(self) -> None:
        """Forget answers from before a seek, reset or validation; call with `lock` held."""
        partitions = self.assignment.partitions
        self.completed = collections.deque(
            f for f in self.completed
            if f.tp in partitions and partitions[f.tp].generation == f.generation
        )
