"""Producers' state on disk: `<offset>.snapshot` files beside a partition's segments.

A snapshot holds every producer the partition knew, with its epoch, its last
five batches (sequences, offsets and maxTimestamp), the coordinator epoch of
its latest marker and the first offset of its open transaction, as of the log
end `offset` it is named after (Kafka names its producer snapshots the same
way, and keeps the same fields). Version 2 added the last two; a version 1
snapshot reads as producers with no transaction open. Version 3 added the
batches' maxTimestamp; older batches read without one (-1). A restarted
broker loads the latest snapshot at or below the log end and reads only the
batches after it, instead of the whole log. Snapshots are written when a
segment rolls and when the log closes; a truncation deletes those past the new
log end; the two newest are kept.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from replog.core.producer_state import (
    NO_OFFSET,
    NO_PRODUCER_ID,
    CachedBatch,
    LogItem,
    ProducerAppend,
    ProducerEntry,
    last_sequence,
)
from replog.core.txn.markers import TxnMarker
from replog.protocol import decode_batch, iter_headers
from replog.protocol.control import decode_marker
from replog.storage.files import TEMP_SUFFIX, fsync_directory

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
SNAPSHOTS_KEPT = 2
READ_BYTES = 1 << 20


class ProducerSnapshots:
    def __init__(self, directory: Path) -> None:
        self._directory = directory

    def _offsets(self) -> list[int]:
        offsets = []
        for path in self._directory.glob(f"*{SNAPSHOT_SUFFIX}"):
            try:
                offsets.append(int(path.name.removesuffix(SNAPSHOT_SUFFIX)))
            except ValueError:
                continue
        return sorted(offsets)

    def _path(self, offset: int) -> Path:
        return self._directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"

    def write(self, offset: int, entries: Sequence[ProducerEntry]) -> None:
        document = {"version": SNAPSHOT_VERSION, "offset": offset, "producers": [
            {"producer_id": e.producer_id, "epoch": e.epoch,
             "batches": [[b.first_sequence, b.last_sequence, b.first_offset, b.last_offset, b.max_timestamp]
                         for b in e.batches],
             "coordinator_epoch": e.coordinator_epoch, "current_txn_first_offset": e.current_txn_first_offset}
            for e in entries]}
        path = self._path(offset)
        temporary = path.with_name(path.name + TEMP_SUFFIX)
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(document, handle, separators=(",", ":"))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
        fsync_directory(self._directory)
        for old in self._offsets()[:-SNAPSHOTS_KEPT]:
            self._path(old).unlink(missing_ok=True)

    def latest(self, at_most: int) -> tuple[int, tuple[ProducerEntry, ...]] | None:
        """The newest snapshot at or below `at_most` that reads back whole; None without one."""
        for offset in reversed(self._offsets()):
            if offset > at_most:
                continue
            entries = self._read(offset)
            if entries is not None:
                return offset, entries
        return None

    def _read(self, offset: int) -> tuple[ProducerEntry, ...] | None:
        try:
            return parse_snapshot(self._path(offset).read_bytes(), offset)
        except (OSError, ValueError):
            return None  # torn or foreign: an older snapshot (or the log itself) serves

    def delete_after(self, offset: int) -> None:
        """A truncation to `offset`: snapshots of a longer log no longer hold."""
        for old in self._offsets():
            if old > offset:
                self._path(old).unlink(missing_ok=True)


def parse_snapshot(data: bytes, offset: int) -> tuple[ProducerEntry, ...]:
    """The producers of the snapshot named after `offset`; ValueError saying why the bytes are none."""
    document = json.loads(data)  # a JSONDecodeError is a ValueError
    if not isinstance(document, dict):
        raise ValueError("it is not a JSON object")
    if document.get("version") not in READABLE_VERSIONS:
        raise ValueError(f"its version is {document.get('version')!r}; this build reads {READABLE_VERSIONS}")
    if document.get("offset") != offset:
        raise ValueError(f"it says it holds the producers at offset {document.get('offset')!r}, its name {offset}")
    try:
        return tuple(
            ProducerEntry(int(p["producer_id"]), int(p["epoch"]),
                          tuple(CachedBatch(*(int(v) for v in batch)) for batch in p["batches"]), 0,
                          int(p.get("coordinator_epoch", -1)), int(p.get("current_txn_first_offset", NO_OFFSET)))
            for p in document["producers"])
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"its producers are not a snapshot's list of producers ({type(error).__name__}: "
                         f"{error})") from None


def producer_appends(read, from_offset: int, end_offset: int) -> Iterator[LogItem]:
    """The producers' batches and transaction markers in [from_offset, end_offset) of a log, from their
    headers (and a marker's one record).

    `read` is the log's read(offset, max_bytes, max_offset=...)."""
    offset = from_offset
    while offset < end_offset:
        result = read(offset, READ_BYTES, max_offset=end_offset)
        if not result.records:
            return
        for header in iter_headers(result.records):
            if header.producer_id != NO_PRODUCER_ID:
                item = _producer_item(result.records, header)
                if item is not None:
                    yield item, header.base_offset, header.last_offset
            offset = header.last_offset + 1


def _producer_item(records, header) -> ProducerAppend | TxnMarker | None:
    if header.is_control:
        return decode_marker(decode_batch(records, header.position))
    return ProducerAppend(header.producer_id, header.producer_epoch, header.base_sequence,
                          last_sequence(header.base_sequence, header.last_offset_delta + 1), header.is_transactional,
                          max_timestamp=header.max_timestamp)
