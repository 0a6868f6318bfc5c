"""PartitionLog: one partition's replica on disk, as a list of segments.

    <log_dir>/<topic>-<partition>/00000000000000000000.log   (.index, .timeindex)
                                  00000000000000004711.log   ...    <- active segment

The log end offset (LEO) is the offset after the last batch of the active
segment. The log start offset only grows: retention and DeleteRecords move it
and drop whole segments below it. The recovery point is the offset below which
everything is known to be on disk; after a crash, only segments from the one
holding the recovery point onwards are checked again.

All methods are synchronous and single-threaded: the broker's driver calls
them from its loop. Expected failures (bad batches, offsets out of range) come
back as ErrorCodes; OSError from the disk goes up as is.

Every change to the segment list and to the offsets that bound it is made here;
the rules it applies live beside it: `log_loading` (opening and recovering a
directory), `roll` (when a segment rolls), `appended_batches` (what an append
must satisfy), `log_reads` (reading across segments), `retention` and `cleaner`.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from replog.core.errors import ErrorCode
from replog.core.producer_state import LogItem, ProducerEntry
from replog.core.storage import AppendInfo, ReadResult
from replog.core.txn.aborted import AbortedTxn
from replog.protocol import BatchHeader, read_header, stamp_batches
from replog.storage import appended_batches, cleaner, log_reads, retention
from replog.storage.batches import check_batches
from replog.storage.checkpoint import LeaderEpochCheckpointFile
from replog.storage.config import LogConfig
from replog.storage.files import CLEAN_SHUTDOWN, LEADER_EPOCH_CHECKPOINT, fsync_directory
from replog.storage.log_loading import load_segments
from replog.storage.producer_snapshots import ProducerSnapshots, producer_appends
from replog.storage.roll import batches_fitting, should_roll
from replog.storage.segment import LogSegment, SegmentInfo


class PartitionLog:
    def __init__(self, directory: Path, config: LogConfig, segments: list[LogSegment], now_ms: int) -> None:
        self.directory = directory
        self.config = config  # may be replaced; takes effect from the next append, roll or cleanup
        self._segments = segments
        self._log_start_offset = segments[0].base_offset
        self._recovery_point = segments[0].base_offset
        self._unflushed_records = 0
        self._last_flush_ms = now_ms
        self._now_ms = now_ms  # the latest time a caller told us, for segments made without one
        self._producer_snapshots = ProducerSnapshots(directory)

    # -- opening and closing --------------------------------------------------------

    @classmethod
    def open(
        cls,
        directory: str | os.PathLike,
        config: LogConfig,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        now_ms: int,
    ) -> PartitionLog:
        """Open (or create) the log in `directory`, recovering what lies at or past `recovery_point`.

        `recovery_point` and `log_start_offset` are what the broker last
        checkpointed for this partition (0 when it never did). After a clean
        `close()` (which leaves a marker file) the active segment is trusted
        without a scan, as Kafka trusts a log directory after a clean shutdown.
        """
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        clean_shutdown = path / CLEAN_SHUTDOWN
        segments = load_segments(path, config, recovery_point, now_ms, clean_shutdown=clean_shutdown.exists())
        created = not segments
        if created:
            segments = [LogSegment.create(path, log_start_offset, config, now_ms)]
        # From here on a crash is not a clean shutdown any more.
        clean_shutdown.unlink(missing_ok=True)
        log = cls(path, config, segments, now_ms)
        log._log_start_offset = min(max(log_start_offset, segments[0].base_offset), log.log_end_offset)
        log._recovery_point = min(max(recovery_point, segments[0].base_offset), log.log_end_offset)
        if not created:
            # Recovered bytes may still sit only in the page cache of a process that died. A new,
            # empty log has nothing to lose: a crash before its first flush leaves at most an empty
            # directory, which opens as a new log again (no fsyncs: a broker creating a thousand
            # partitions would otherwise spend seconds on them).
            fsync_directory(path)
            log.flush()
        return log

    def close(self, *, flush: bool = True) -> None:
        """Close every segment; with `flush` (the normal case) everything is made durable first.

        `flush=False` drops the log as a crashed process would: unflushed data
        stays wherever the operating system has it, unwritten index entries are lost.
        Closing a closed log does nothing.
        """
        if not self._segments:
            return
        if flush:
            self._active.seal()
            self.flush()
            self._active.flush(indexes=True)
            (self.directory / CLEAN_SHUTDOWN).touch()
            fsync_directory(self.directory)
        for segment in self._segments:
            segment.close(flush=False)
        self._segments = []

    # -- state ----------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._active.next_offset

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def size_bytes(self) -> int:
        return sum(segment.size_bytes for segment in self._segments)

    @property
    def segments(self) -> tuple[SegmentInfo, ...]:
        return tuple(segment.info for segment in self._segments)

    @property
    def active_segment_base_offset(self) -> int:
        return self._active.base_offset

    # -- idempotent producers' state ------------------------------------------------

    def producer_snapshot(self) -> tuple[int, tuple[ProducerEntry, ...]]:
        """The newest producer snapshot at or below the log end (offset, entries); without one,
        the log start and nothing."""
        found = self._producer_snapshots.latest(self.log_end_offset)
        if found is None or found[0] < self._log_start_offset:
            return self._log_start_offset, ()
        return found

    def producer_appends(self, from_offset: int) -> Iterator[LogItem]:
        return producer_appends(self.read, from_offset, self.log_end_offset)

    def write_producer_snapshot(self, offset: int, entries: Sequence[ProducerEntry]) -> None:
        self._producer_snapshots.write(offset, entries)

    # -- aborted transactions ------------------------------------------------------

    def index_aborted(self, aborted: Sequence[AbortedTxn]) -> None:
        for entry in aborted:
            index = self._segments[self._floor_index(entry.last_offset)].txn_index
            last = index.entries()[-1] if index.entries() else None
            if last is None or entry.last_offset > last.last_offset:
                index.append(entry)

    def aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """Segment after segment from the one holding `fetch_offset`, until one says no later one can add
        an overlapping transaction (Kafka's collectAbortedTxns). Segments past the bound are searched too:
        a transaction that began below it may have its ABORT marker, and so its entry, far beyond it (another
        transaction held the LSO meanwhile)."""
        found: list[AbortedTxn] = []
        for segment in self._segments[self._floor_index(fetch_offset):]:
            entries, complete = segment.txn_index.collect(fetch_offset, upper_bound_offset)
            found += entries
            if complete:
                break
        return found

    @property
    def leader_epoch_checkpoint(self) -> LeaderEpochCheckpointFile:
        return LeaderEpochCheckpointFile(self.directory / LEADER_EPOCH_CHECKPOINT)

    @property
    def _active(self) -> LogSegment:
        return self._segments[-1]

    def _floor_index(self, offset: int) -> int:
        """Index of the segment that would hold `offset`: the last one based at or below it."""
        return max(bisect.bisect_right(self._segments, offset, key=lambda s: s.base_offset) - 1, 0)

    # -- appending ------------------------------------------------------------------

    def append_as_leader(self, batches: bytes | bytearray, leader_epoch: int, now_ms: int) -> AppendInfo:
        """Check a producer's batches, give them offsets from the LEO and our epoch, append them.

        Each batch's header fields, size (max.message.bytes) and CRC are
        checked; records are not walked (DESIGN §12: no per-record work on the
        broker). The offsets and epoch are written into the batch headers in
        place (a bytearray is stamped as given; bytes are copied once); no
        record is re-encoded. What the topic's configs demand of the records
        (keys, timestamps) the leader has checked before its core took them
        (`appended_batches.refused_records`).
        """
        self._now_ms = now_ms
        buf = batches if isinstance(batches, bytearray) else bytearray(batches)
        checked = check_batches(buf, max_message_bytes=self.config.max_message_bytes)
        if not checked.ok:
            return AppendInfo(checked.error, checked.reason)
        first_offset = self.log_end_offset
        stamp_batches(buf, first_offset, leader_epoch, checked.headers)
        headers = [read_header(buf, header.position) for header in checked.headers]
        return self._append(memoryview(buf), headers, ((leader_epoch, first_offset),), now_ms)

    def append_as_follower(self, batches: bytes | bytearray | memoryview, *, now_ms: int | None = None) -> AppendInfo:
        """Append batches fetched from the leader, keeping the leader's offsets and epochs.

        Checks header fields, sizes and CRCs, as the leader did; no size limit
        (a topic's max.message.bytes may have shrunk since the leader took them). The
        first batch must start at or after the LEO: after the leader compacted
        its log there may be a gap, never an overlap. One exception, as in
        Kafka: an empty log whose start lies inside the leader's first batch
        (DeleteRecords moved the start there) restarts at that batch's base offset.
        """
        if now_ms is not None:
            self._now_ms = now_ms
        view = memoryview(batches)
        checked = check_batches(view)
        if not checked.ok:
            return AppendInfo(checked.error, checked.reason)
        headers = checked.headers
        first = headers[0]
        log_is_empty = self.log_end_offset == self._log_start_offset
        restart = log_is_empty and first.base_offset < self.log_end_offset <= first.last_offset
        problem = appended_batches.offsets_problem(headers, first.base_offset if restart else self.log_end_offset)
        if problem:
            return AppendInfo(ErrorCode.OFFSET_OUT_OF_RANGE, problem)
        if restart:
            self.truncate_fully_and_start_at(first.base_offset)
        return self._append(view, headers, appended_batches.epoch_starts(headers), now_ms)

    def _append(
        self,
        view: memoryview,
        headers: Sequence[BatchHeader],
        epoch_starts: tuple[tuple[int, int], ...],
        now_ms: int | None,
    ) -> AppendInfo:
        first = 0
        while first < len(headers):  # bounded: each pass appends at least one batch
            if should_roll(self._active, headers[first], self.config, self._now_ms):
                self._roll(headers[first].base_offset)
            end = batches_fitting(self._active, headers, first, self.config.segment_bytes)
            self._active.append(view[headers[first].position : headers[end - 1].end], headers[first:end])
            first = end
        records_count = sum(header.records_count for header in headers)
        self._unflushed_records += records_count
        if self._unflushed_records >= self.config.flush_messages:
            self.flush()
            self._last_flush_ms = self._now_ms
        elif now_ms is not None:
            self.maybe_flush(now_ms)
        return AppendInfo(
            ErrorCode.NONE,
            first_offset=headers[0].base_offset,
            last_offset=headers[-1].last_offset,
            max_timestamp=max(header.max_timestamp for header in headers),
            records_count=records_count,
            size_bytes=len(view),
            epoch_starts=epoch_starts,
        )

    def _roll(self, base_offset: int) -> None:
        """Close the active segment and start one at `base_offset`.

        As Kafka does at every roll, the closed segment is flushed and the
        recovery point moves past it, so recovery never rescans closed segments.
        """
        self._active.seal()
        self._segments.append(LogSegment.create(self.directory, base_offset, self.config, self._now_ms))
        fsync_directory(self.directory)
        self.flush()

    # -- flushing -------------------------------------------------------------------

    def flush(self) -> None:
        """fsync every segment that may hold data past the recovery point; move it to the LEO.

        The active segment's indexes are left in memory: recovery rebuilds them
        after a crash anyway (only a clean close makes them trusted).
        """
        for segment in self._segments[self._floor_index(self._recovery_point) :]:
            segment.flush(indexes=segment is not self._active)
        self._recovery_point = self.log_end_offset
        self._unflushed_records = 0

    def maybe_flush(self, now_ms: int) -> bool:
        """Flush when records have waited flush.ms; the driver calls this on its ticks."""
        self._now_ms = now_ms
        if self._unflushed_records == 0 or now_ms - self._last_flush_ms < self.config.flush_ms:
            return False
        self.flush()
        self._last_flush_ms = now_ms
        return True

    # -- reading --------------------------------------------------------------------

    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> ReadResult:
        """Whole batches from the one holding `fetch_offset`, up to `max_bytes` in total.

        Batches starting at or after `max_offset` (the HW, for consumers) are
        left out. With `min_one_batch` the first batch is returned whole even
        when it alone exceeds `max_bytes` (KIP-74), so a fetch always makes
        progress. Reading continues into the following segments while bytes remain.
        """
        if not self._log_start_offset <= fetch_offset <= self.log_end_offset:
            return self._read_result(ErrorCode.OFFSET_OUT_OF_RANGE, b"")
        segments = self._segments[self._floor_index(fetch_offset) :]
        records = log_reads.read_batches(segments, fetch_offset, max_bytes, max_offset, min_one_batch)
        return self._read_result(ErrorCode.NONE, records)

    def _read_result(self, error: ErrorCode, records: bytes) -> ReadResult:
        return ReadResult(error, records, self._log_start_offset, self.log_end_offset)

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after the log start whose timestamp is
        at least `timestamp_ms`, as ListOffsets answers; None when there is no such record."""
        return log_reads.offset_for_timestamp(self._segments, timestamp_ms, self._log_start_offset)

    # -- truncating and deleting ----------------------------------------------------

    def truncate_to(self, offset: int) -> bool:
        """Remove every batch holding `offset` or later (a follower after a leader change).

        Whole batches go: the new LEO is `offset`, or the base offset of a
        batch that straddled it. Returns False when there was nothing at or
        past `offset`. Below the log start the log is emptied and restarts at
        `offset`; when the batch that went held the log start, it restarts
        empty at the log start.
        """
        if offset >= self.log_end_offset:
            return False
        if offset < self._log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        while len(self._segments) > 1 and self._active.base_offset > offset:
            self._segments.pop().delete()
        self._active.truncate_to(offset)
        self._producer_snapshots.delete_after(self.log_end_offset)
        if self.log_end_offset < self._log_start_offset:
            self.truncate_fully_and_start_at(self._log_start_offset)
            return True
        # A truncation that came back after a crash would resurrect divergent records.
        self._active.flush(indexes=True)
        fsync_directory(self.directory)
        self._recovery_point = min(self._recovery_point, self.log_end_offset)
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every segment and start an empty log at `offset` (log start = LEO = `offset`)."""
        while self._segments:
            self._segments.pop().delete()
        self._producer_snapshots.delete_after(-1)
        self._segments.append(LogSegment.create(self.directory, offset, self.config, self._now_ms))
        fsync_directory(self.directory)
        self._log_start_offset = offset
        self._recovery_point = offset
        self._unflushed_records = 0

    def delete_records_before(self, offset: int) -> ErrorCode:
        """Move the log start offset up to `offset` (DeleteRecords) and drop segments wholly below it.

        The broker bounds `offset` by the HW; here it may not pass the LEO.
        """
        if offset > self.log_end_offset:
            return ErrorCode.OFFSET_OUT_OF_RANGE
        self._log_start_offset = max(self._log_start_offset, offset)
        self._delete_closed_segments(retention.below_log_start(self._log_start_offset))
        return ErrorCode.NONE

    def apply_retention(self, now_ms: int, *, high_watermark: int | None = None) -> int:
        """Delete whole closed segments past retention.ms or beyond retention.bytes; return how many.

        Only for cleanup.policy with "delete". With `high_watermark`, only
        segments wholly below it go, so no unreplicated record is deleted.
        """
        self._now_ms = now_ms
        if not self.config.deletes:
            return 0
        deleted = 0
        if self.config.retention_ms >= 0:
            rule = retention.older_than(self.config.retention_ms, now_ms)
            deleted += self._delete_closed_segments(rule, high_watermark)
        if self.config.retention_bytes >= 0:
            excess_bytes = self.size_bytes - self.config.retention_bytes
            deleted += self._delete_closed_segments(retention.beyond_size(excess_bytes), high_watermark)
        return deleted

    def _delete_closed_segments(self, rule: retention.Rule, high_watermark: int | None = None) -> int:
        """Delete closed segments from the oldest while `rule` holds; move the log start past them."""
        deleted = 0
        while len(self._segments) > 1:
            segment, successor = self._segments[0], self._segments[1]
            if high_watermark is not None and successor.base_offset > high_watermark:
                break
            if not rule(segment, successor):
                break
            self._segments.pop(0).delete()
            deleted += 1
        if deleted:
            self._log_start_offset = max(self._log_start_offset, self._segments[0].base_offset)
            self._recovery_point = max(self._recovery_point, self._segments[0].base_offset)
        return deleted

    # -- compaction -----------------------------------------------------------------

    def compact(self, now_ms: int, *, up_to_offset: int) -> cleaner.CleanerStats:
        """Keep only the latest record of each key in closed segments wholly below `up_to_offset`.

        Only for cleanup.policy with "compact"; the broker passes its last stable offset, so that
        no transaction is cleaned before it is decided and replicated. See `cleaner` for what is kept.
        """
        self._now_ms = now_ms
        if not self.config.compacts:
            return cleaner.CleanerStats()
        cleanable = [
            index
            for index, segment in enumerate(self._segments[:-1])
            if self._segments[index + 1].base_offset <= up_to_offset
        ]
        segments = [self._segments[index] for index in cleanable]
        end = self._segments[len(cleanable)].base_offset
        aborted = [entry for segment in self._segments for entry in segment.txn_index.entries()
                   if entry.first_offset < end]
        rewritten, stats = cleaner.clean(segments, self.config, now_ms, aborted)
        for index, segment in zip(cleanable, rewritten):
            self._segments[index] = segment
        return stats

