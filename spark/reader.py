"""Batch and streaming reads: ranges planned on the driver, read by the tasks from the leaders.

A batch read plans one range per partition between startingOffsets and
endingOffsets (more when minPartitions asks for them). A streaming read keeps
its position as offsets per partition in Spark's checkpoint; each micro-batch
is planned by latestOffset(start, limit), which picks up new partitions (from
their earliest offset), applies admission control (maxOffsetsPerTrigger,
minOffsetsPerTrigger with maxTriggerDelay) and, under availableNow, stops at
the offsets the query found when it started.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, Filter, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from replog.core.offset_ranges import (
    EARLIEST,
    LATEST,
    capped_ends,
    lost_past_end,
    may_trigger,
    ranges_between,
    split_ranges,
    waiting_records,
)
from replog.core.row_conditions import Narrowing, narrowing
from replog.core.topic_partition import TopicPartition
from replog.rpc import allocator
from replog.spark.filters import condition_of
from replog.spark.offsets import ClusterOffsets, offsets_from_json, offsets_to_json
from replog.spark.options import OffsetSpec, OptionError, SourceOptions
from replog.spark.partition_reader import DataLossError, PartitionReader, ReadSettings

log = logging.getLogger("replog.spark")


@dataclass
class RangePartition(InputPartition):
    """One task's share: offsets [start, until) of one partition."""

    topic: str
    partition: int
    start: int
    until: int


def plan(starts: dict[TopicPartition, int], ends: dict[TopicPartition, int],
         min_partitions: int | None) -> list[RangePartition]:
    return [RangePartition(r.tp.topic, r.tp.partition, r.start, r.until)
            for r in split_ranges(ranges_between(starts, ends), min_partitions)]


def given_offset(spec: OffsetSpec, tp: TopicPartition) -> bool:
    """Whether `spec` names an offset of its own for `tp` (not earliest, latest or a time)."""
    return spec.kind == "offsets" and spec.offsets.get(tp, LATEST) >= 0


def refuse_start_after_end(options: SourceOptions, starts: dict[TopicPartition, int], ends: dict[TopicPartition, int],
                           end_name: str) -> None:
    """An offset given in startingOffsets or endingOffsets that puts a start after its end is a mistake, not an
    empty read (spark-sql-kafka fails such a query too; a stream would take it for a log truncated under it)."""
    for tp, start in starts.items():
        if (given_offset(options.starting, tp) or given_offset(options.ending, tp)) and start > ends[tp]:
            raise OptionError(f"startingOffsets for {tp} ({start}) is after {end_name} ({ends[tp]})")


def read_range(options: SourceOptions, partition: RangePartition) -> Iterator:
    """The task's side, shared by batch and streaming reads: Arrow batches of one range."""
    if not isinstance(partition, RangePartition):
        return  # PySpark runs a plan without ranges as one InputPartition(None): nothing to read
    allocator.keep_freed_memory()  # the task's process: fetch answers of up to 16 MiB, one after another
    reader = PartitionReader(options.bootstrap, ReadSettings(
        isolation_level=options.isolation_level, include_headers=options.include_headers,
        fail_on_data_loss=options.fail_on_data_loss, poll_timeout_ms=options.poll_timeout_ms),
        options.security.client_security())
    try:
        batches = reader.read(TopicPartition(partition.topic, partition.partition), partition.start, partition.until)
        if options.columns is None:
            yield from batches
        else:
            yield from (batch.select(options.columns) for batch in batches)
    finally:
        reader.close()


class ReplogBatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._cluster = ClusterOffsets(options)
        self._narrowing = Narrowing()  # what the query's conditions leave to read (pushFilters=true)

    def partitions(self) -> list[RangePartition]:
        narrowing = self._narrowing
        try:
            tps = self._cluster.partitions()
            starts = self._cluster.resolve(self.options.starting, tps, EARLIEST, "startingOffsets")
            ends = self._cluster.resolve(self.options.ending, tps, LATEST, "endingOffsets")
            refuse_start_after_end(self.options, starts, ends, "the offset the read ends at")
            self._refuse_end_after_latest(ends)
            kept = [tp for tp in tps if narrowing.keeps(tp)]
            time_starts = None if narrowing.timestamp_from_ms is None else self._cluster.resolve(
                OffsetSpec("timestamp", timestamp_ms=narrowing.timestamp_from_ms), kept, EARLIEST, "a timestamp filter")
        finally:
            self._cluster.close()
        starts, ends = narrowing.cut(starts, ends, time_starts)
        return plan(starts, ends, self.options.min_partitions)

    def _refuse_end_after_latest(self, ends: dict[TopicPartition, int]) -> None:
        """An endingOffsets past the log end would have the tasks wait for offsets that are not there."""
        given = [tp for tp in ends if given_offset(self.options.ending, tp)]
        for tp, latest in self._cluster.latest(given).items():
            if ends[tp] > latest:
                raise OptionError(f"endingOffsets for {tp} ({ends[tp]}) is after the partition's latest offset "
                                  f"({latest})")

    def read(self, partition: RangePartition) -> Iterator:
        return read_range(self.options, partition)


class ReplogFilteringBatchReader(ReplogBatchReader):
    """A batch read that takes over the query's conditions on topic, partition, offset and timestamp
    (option pushFilters=true; Spark calls pushFilters only with spark.sql.python.filterPushdown.enabled,
    and refuses a reader that has it otherwise, which is why it is a reader of its own)."""

    def pushFilters(self, filters: list[Filter]) -> list[Filter]:
        filters = list(filters)
        conditions = [condition_of(f) for f in filters]
        usable = [index for index, condition in enumerate(conditions) if condition is not None]
        self._narrowing, left = narrowing([conditions[index] for index in usable])
        checked = {usable[position] for position in left} | {i for i, c in enumerate(conditions) if c is None}
        log.info("reading %s narrowed by the query to %s; Spark still checks %d of its %d filters",
                 self.options.subscription, self._narrowing, len(checked), len(filters))
        return [f for index, f in enumerate(filters) if index in checked]


class ReplogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._cluster = ClusterOffsets(options)
        self._latest: dict[TopicPartition, int] | None = None  # for the query's progress
        self._target: dict[TopicPartition, int] | None = None  # availableNow: where to stop
        self._last_trigger_s = time.monotonic()

    def initialOffset(self) -> dict:
        tps = self._cluster.partitions()
        starts = self._cluster.resolve(self.options.starting, tps, LATEST, "startingOffsets")
        given = [tp for tp in tps if given_offset(self.options.starting, tp)]
        refuse_start_after_end(self.options, {tp: starts[tp] for tp in given}, self._cluster.latest(given),
                               "the partition's latest offset")
        return offsets_to_json(starts)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._cluster.latest(self._cluster.partitions())

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        starts = offsets_from_json(start)
        tps = self._cluster.partitions()
        new = [tp for tp in tps if tp not in starts]
        if new:
            log.info("new partitions %s start at their earliest offsets", ", ".join(map(str, new)))
            starts.update(self._cluster.earliest(new))
        latest = self._cluster.latest(tps)
        self._latest = latest
        latest = {tp: self._checked_end(tp, starts[tp], offset) for tp, offset in latest.items()}
        if self._target is not None:
            latest = {tp: min(offset, self._target.get(tp, starts[tp])) for tp, offset in latest.items()}
        ends = self._admitted(starts, latest, limit)
        if ends is None or (not new and all(ends[tp] == starts[tp] for tp in ends)):
            return start
        self._last_trigger_s = time.monotonic()
        return offsets_to_json(ends)

    def _checked_end(self, tp: TopicPartition, start: int, latest: int) -> int:
        """The log end went back below where the query stands: an unclean election truncated it."""
        lost = lost_past_end(tp, start, latest)
        if lost is None:
            return latest
        if self.options.fail_on_data_loss:
            raise DataLossError(lost)
        log.warning("%s; going on from offset %d (failOnDataLoss=false)", lost, latest)
        return latest

    def _admitted(self, starts, latest, limit: ReadLimit) -> dict[TopicPartition, int] | None:
        """The ends this micro-batch may read to under the read limit; None when it must wait."""
        if isinstance(limit, ReadAllAvailable):
            return latest
        min_records = limit.min_rows if isinstance(limit, ReadMinRows) else self.options.min_offsets_per_trigger
        since_last_ms = int((time.monotonic() - self._last_trigger_s) * 1000)
        if min_records is not None and not may_trigger(waiting_records(starts, latest), min_records, since_last_ms,
                                                        self.options.max_trigger_delay_ms):
            return None
        max_records = limit.max_rows if isinstance(limit, ReadMaxRows) else self.options.max_offsets_per_trigger
        return capped_ends(starts, latest, max_records) if max_records else latest

    def reportLatestOffset(self) -> dict | None:
        return offsets_to_json(self._latest) if self._latest is not None else None

    def partitions(self, start: dict, end: dict) -> list[RangePartition]:
        starts = offsets_from_json(start)
        ends = offsets_from_json(end)
        new = [tp for tp in ends if tp not in starts]
        if new:
            starts.update(self._cluster.earliest(new))
        return plan(starts, ends, self.options.min_partitions)

    def read(self, partition: RangePartition) -> Iterator:
        return read_range(self.options, partition)

    def commit(self, end: dict) -> None:
        """Spark's checkpoint holds the position; nothing is committed to a group."""

    def stop(self) -> None:
        self._cluster.close()


class RefusedStreamReader(DataSourceStreamReader):
    """A stream whose options were refused: it says why at the first thing Spark asks of it.

    PySpark's stream runner stops the reader in a `finally` even when making it failed, which hides the
    refusal behind an UnboundLocalError; a reader that exists and refuses keeps the sentence last.
    """

    def __init__(self, error: OptionError) -> None:
        self.error = error

    def initialOffset(self) -> dict:
        raise self.error

    def getDefaultReadLimit(self) -> ReadLimit:
        raise self.error

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        raise self.error

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        raise self.error

    def read(self, partition: InputPartition) -> Iterator:
        raise self.error

    def stop(self) -> None:
        pass
