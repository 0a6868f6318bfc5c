"""One segment: a `.log` file of whole record batches, its two sparse indexes and its `.txnindex`.

The file is written with `os.pwrite` at the segment's size and read with
`os.pread`; batches are never split or re-encoded here. A segment knows its
base offset (its file name), the offset after its last batch, and its largest
timestamp, which retention and ListOffsets use.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from replog.core.invariant import require
from replog.protocol import BatchHeader, read_header
from replog.protocol.layout import HEADER_SIZE, LOG_OVERHEAD
from replog.storage.batches import BATCH_PREFIX, SegmentCorruptError, iter_headers, scan_valid_batches
from replog.storage.config import LogConfig
from replog.storage.files import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, segment_path
from replog.storage.index import OffsetIndex, TimeIndex
from replog.storage.txn_index import TXN_INDEX_SUFFIX, CorruptTxnIndexError, TransactionIndex

NO_TIMESTAMP = -1


@dataclasses.dataclass(frozen=True, slots=True)
class SegmentInfo:
    """What a reader of `PartitionLog.segments` may know about one segment."""

    base_offset: int
    next_offset: int  # one past the last offset of the segment's last batch
    size_bytes: int
    max_timestamp_ms: int  # -1 when no batch carries a timestamp


@dataclasses.dataclass(frozen=True, slots=True)
class SegmentRead:
    records: bytes
    reached_end: bool  # nothing of this segment was left out after `records`


class LogSegment:
    def __init__(self, directory: Path, base_offset: int, config: LogConfig, fd: int, suffix: str, now_ms: int) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.suffix = suffix  # "" for a live segment; ".cleaned" while the cleaner writes it
        self._fd = fd
        self._index_interval_bytes = config.index_interval_bytes
        self.offset_index = OffsetIndex(self._path(INDEX_SUFFIX), base_offset, config.segment_index_bytes // 8)
        self.time_index = TimeIndex(self._path(TIME_INDEX_SUFFIX), base_offset, config.segment_index_bytes // 12)
        self.txn_index = TransactionIndex(self._path(TXN_INDEX_SUFFIX), base_offset)
        self.created_ms = now_ms
        self._reset_contents()

    def _reset_contents(self) -> None:
        self.size_bytes = 0
        self.next_offset = self.base_offset
        self.max_timestamp_ms = NO_TIMESTAMP
        self.offset_of_max_timestamp = self.base_offset
        self.first_batch_timestamp_ms = NO_TIMESTAMP
        self._bytes_since_index_entry = 0

    def _path(self, kind: str) -> Path:
        return segment_path(self.directory, self.base_offset, kind + self.suffix)

    @property
    def log_path(self) -> Path:
        return self._path(LOG_SUFFIX)

    @property
    def info(self) -> SegmentInfo:
        return SegmentInfo(self.base_offset, self.next_offset, self.size_bytes, self.max_timestamp_ms)

    @property
    def is_empty(self) -> bool:
        return self.size_bytes == 0

    @property
    def index_is_full(self) -> bool:
        return self.offset_index.is_full or self.time_index.is_full

    # -- opening ------------------------------------------------------------------

    @classmethod
    def create(cls, directory: Path, base_offset: int, config: LogConfig, now_ms: int, suffix: str = "") -> LogSegment:
        """A new empty segment; files left at its names are emptied."""
        path = segment_path(directory, base_offset, LOG_SUFFIX + suffix)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        segment = cls(directory, base_offset, config, fd, suffix, now_ms)
        segment._create_indexes()
        segment.txn_index.delete()
        return segment

    @classmethod
    def open(
        cls, directory: Path, base_offset: int, config: LogConfig, now_ms: int, *, recover: bool
    ) -> tuple[LogSegment, int]:
        """An existing segment, and how many bytes recovery cut from its end.

        With `recover` every batch is checked and the indexes rebuilt; without,
        only the indexes and the tail after the last index entry are read, and
        recovery runs anyway if those do not agree with the file.
        """
        fd = os.open(segment_path(directory, base_offset, LOG_SUFFIX), os.O_RDWR)
        segment = cls(directory, base_offset, config, fd, "", now_ms)
        segment._load_txn_index()
        if not recover and segment._load_indexes():
            return segment, 0
        return segment, segment.recover()

    def _load_indexes(self) -> bool:
        """Take the stored indexes if they fit the file; False when the segment needs recovery."""
        offsets = OffsetIndex.load(self.offset_index.path, self.base_offset, self.offset_index.max_entries)
        times = TimeIndex.load(self.time_index.path, self.base_offset, self.time_index.max_entries)
        self.size_bytes = os.fstat(self._fd).st_size
        if offsets is None or times is None or not offsets.fits_log(self.size_bytes):
            return False
        self.offset_index, self.time_index = offsets, times
        try:
            self._load_tail_state()
        except SegmentCorruptError:
            return False
        return self.time_index.fits_log(self.next_offset)

    def _load_tail_state(self) -> None:
        """Next offset and largest timestamp from the time index and the batches after the last index entry."""
        size = self.size_bytes
        self._reset_contents()
        self.size_bytes = size
        if size == 0:
            return
        self.first_batch_timestamp_ms = self._header_at(0).max_timestamp
        if (last := self.time_index.last_entry) is not None:
            self.max_timestamp_ms, self.offset_of_max_timestamp = last
        start = self.offset_index.last_position
        last_header = None
        for _, header in iter_headers(self._fd, start, size):
            if header.max_timestamp > self.max_timestamp_ms:
                self.max_timestamp_ms, self.offset_of_max_timestamp = header.max_timestamp, header.last_offset
            last_header = header
        if last_header is None:
            raise SegmentCorruptError(f"{self.log_path.name} has no batch after its last index entry")
        indexed_offset = self.base_offset + self.offset_index.last_relative_offset
        if len(self.offset_index) and self._header_at(start).last_offset != indexed_offset:
            raise SegmentCorruptError(f"the last entry of {self.offset_index.path.name} does not point at its batch")
        self.next_offset = last_header.next_offset
        self._bytes_since_index_entry = size - start

    def _create_indexes(self) -> None:
        """Empty indexes, emptying any index files already there."""
        self.offset_index = OffsetIndex.create(self.offset_index.path, self.base_offset, self.offset_index.max_entries)
        self.time_index = TimeIndex.create(self.time_index.path, self.base_offset, self.time_index.max_entries)

    def _load_txn_index(self) -> None:
        """The segment's aborted transactions; an unsound index is dropped, and the broker's rebuild of
        the producers' state indexes again the aborts it replays (those after the newest snapshot)."""
        try:
            self.txn_index = TransactionIndex.load(self.txn_index.path, self.base_offset)
        except CorruptTxnIndexError:
            self.txn_index.delete()

    def _header_at(self, position: int) -> BatchHeader:
        buf = os.pread(self._fd, HEADER_SIZE, position)
        if len(buf) < HEADER_SIZE:
            raise SegmentCorruptError(f"{self.log_path.name} has no batch header at byte {position}")
        return read_header(buf)

    def recover(self) -> int:
        """Check every batch, cut the file at the first invalid byte, rebuild both indexes.

        The result is made durable at once: a segment below the recovery point
        is trusted as it is on disk next time. Returns the number of bytes cut.
        """
        file_size = os.fstat(self._fd).st_size
        self._reset_contents()
        self._create_indexes()
        for position, header in scan_valid_batches(self._fd, file_size, self.base_offset):
            self._track(position, header)
        if self.size_bytes < file_size:
            os.ftruncate(self._fd, self.size_bytes)
        self.txn_index.truncate_to(self.next_offset)
        self.flush()
        return file_size - self.size_bytes

    # -- appending ----------------------------------------------------------------

    def append(self, data: bytes | bytearray | memoryview, headers: Sequence[BatchHeader]) -> None:
        """Write whole batches: `data` is exactly the batches of `headers`, the first at its start.

        The headers' positions may be relative to a larger buffer `data` was cut from.
        """
        shift = headers[0].position
        require(
            headers[-1].end - shift == len(data),
            "%d bytes to append but their batch headers span %d",
            len(data),
            headers[-1].end - shift,
        )
        start = self.size_bytes
        write_all(self._fd, data, start)
        for header in headers:
            self._track(start + header.position - shift, header)

    def _track(self, position: int, header: BatchHeader) -> None:
        """Account for the batch at `position`: sizes, offsets, timestamps, index entries."""
        if position == 0:
            self.first_batch_timestamp_ms = header.max_timestamp
        if header.max_timestamp > self.max_timestamp_ms:
            self.max_timestamp_ms, self.offset_of_max_timestamp = header.max_timestamp, header.last_offset
        # Both indexes take an entry or neither, so the time index covers every indexed batch.
        if self._bytes_since_index_entry >= self._index_interval_bytes and position > 0 and not self.index_is_full:
            self.offset_index.append(header.last_offset, position)
            self.time_index.maybe_append(self.max_timestamp_ms, self.offset_of_max_timestamp)
            self._bytes_since_index_entry = 0
        self._bytes_since_index_entry += header.size
        self.size_bytes = position + header.size
        self.next_offset = header.next_offset

    def seal(self) -> None:
        """Record the largest timestamp in the time index, so a reload knows it without a scan."""
        self.time_index.maybe_append(self.max_timestamp_ms, self.offset_of_max_timestamp)

    # -- reading ------------------------------------------------------------------

    def translate_offset(self, offset: int) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch holding `offset` or a later one."""
        for position, header in iter_headers(self._fd, self.offset_index.lookup(offset), self.size_bytes):
            if header.last_offset >= offset:
                return position, header
        return None

    def read(self, offset: int, max_bytes: int, max_offset: int | None, min_one_batch: bool) -> SegmentRead:
        """Whole batches from the one holding `offset`, within `max_bytes` (see PartitionLog.read)."""
        found = self.translate_offset(offset)
        if found is None:
            return SegmentRead(b"", True)
        position, first = found
        if max_offset is not None and first.base_offset >= max_offset:
            return SegmentRead(b"", False)
        available = self.size_bytes - position
        chunk = os.pread(self._fd, min(max_bytes, available), position) if max_bytes > 0 else b""
        length = _whole_batches_length(chunk, max_offset)
        if length == 0:
            if not min_one_batch:
                return SegmentRead(b"", False)
            chunk = os.pread(self._fd, first.size, position)
            length = first.size
        records = chunk if length == len(chunk) else chunk[:length]
        return SegmentRead(records, position + length == self.size_bytes)

    def read_batch(self, position: int, size_bytes: int) -> bytes:
        return os.pread(self._fd, size_bytes, position)

    @property
    def modified_ms(self) -> int:
        return os.fstat(self._fd).st_mtime_ns // 1_000_000

    def batches_from(self, position: int = 0) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of the batches from byte `position` on."""
        return iter_headers(self._fd, position, self.size_bytes)

    # -- changing -----------------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove the batches holding `offset` and later ones; return the bytes removed."""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        position, _ = found
        removed = self.size_bytes - position
        os.ftruncate(self._fd, position)
        self.txn_index.truncate_to(offset)
        self.offset_index.truncate_to_position(position)
        self.time_index.truncate_to_offset(offset)
        self.size_bytes = position
        self._load_tail_state()
        return removed

    def flush(self, *, indexes: bool = True) -> None:
        """fsync the log file and, with `indexes`, write and fsync both indexes."""
        os.fsync(self._fd)
        if indexes:
            self.offset_index.write(fsync=True)
            self.time_index.write(fsync=True)
            self.txn_index.flush()

    def close(self, *, flush: bool = True) -> None:
        """Close the file; with `flush`, first seal and make the segment and its indexes durable."""
        if flush:
            self.seal()
            self.flush()
        os.close(self._fd)

    def delete(self) -> None:
        """Close and remove the segment's files, the log first (an index without a log is ignored)."""
        os.close(self._fd)
        self.log_path.unlink(missing_ok=True)
        self.offset_index.delete()
        self.time_index.delete()
        self.txn_index.delete()

    def delete_indexes(self) -> None:
        self.offset_index.delete()
        self.time_index.delete()

    def rename_to_live(self) -> None:
        """Give a segment the cleaner wrote its live names (the caller deleted the old indexes)."""
        live_log = segment_path(self.directory, self.base_offset, LOG_SUFFIX)
        os.replace(self.log_path, live_log)
        self.suffix = ""
        self.offset_index.rename(self._path(INDEX_SUFFIX))
        self.time_index.rename(self._path(TIME_INDEX_SUFFIX))


def _whole_batches_length(chunk: bytes, max_offset: int | None) -> int:
    """Bytes of the whole batches at the start of `chunk`, stopping before one at or past `max_offset`."""
    length = 0
    while length + LOG_OVERHEAD <= len(chunk):
        base_offset, batch_length = BATCH_PREFIX.unpack_from(chunk, length)
        end = length + LOG_OVERHEAD + batch_length
        if end > len(chunk) or (max_offset is not None and base_offset >= max_offset):
            break
        length = end
    return length


def write_all(fd: int, data: bytes | bytearray | memoryview, position: int) -> None:
    """Write every byte or none: a failed write is cut back off the file before the error goes up."""
    view = memoryview(data)
    written = 0
    try:
        while written < len(view):
            written += os.pwrite(fd, view[written:], position + written)
    except OSError:
        os.ftruncate(fd, position)
        raise
