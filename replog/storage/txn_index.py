"""A segment's aborted-transaction index, `<base offset>.txnindex`, in Kafka's layout.

    version int16 (0) | producer id int64 | first offset int64 | last offset int64 |
    last stable offset int64                                    (34 bytes an entry, big-endian)

One entry per transaction aborted by a marker in the segment, in the order of
their markers (last offsets increase). A read_committed fetch collects the
entries overlapping its range, segment after segment, until an entry's last
stable offset reaches the fetch's upper bound (core.txn.aborted). Entries are
appended as markers are, reach the disk when the index is flushed with its
segment, and are dropped past a truncation point. On load a torn last entry
(a crash in the middle of an append) is cut off; an entry of an unknown
version, below the segment's base offset or out of order makes the index
unsound (`CorruptTxnIndexError`), and recovery rebuilds it from the segment's
markers.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from pathlib import Path

from replog.core.invariant import require
from replog.core.txn.aborted import AbortedTxn, collect_aborted

TXN_INDEX_SUFFIX = ".txnindex"
ENTRY = struct.Struct(">hqqqq")
ENTRY_VERSION = 0


class CorruptTxnIndexError(ValueError):
    """A .txnindex whose entries cannot be trusted."""


class TransactionIndex:
    def __init__(self, path: Path, base_offset: int, entries: Iterable[AbortedTxn] = ()) -> None:
        self.path = path
        self.base_offset = base_offset
        self._entries = list(entries)

    @classmethod
    def load(cls, path: Path, base_offset: int) -> TransactionIndex:
        """The index at `path` (empty when there is none), its torn last entry cut off."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return cls(path, base_offset)
        whole = len(data) - len(data) % ENTRY.size
        if whole != len(data):
            with open(path, "r+b") as handle:
                handle.truncate(whole)
        entries = []
        for number, (version, *fields) in enumerate(ENTRY.iter_unpack(data[:whole])):
            entry = AbortedTxn(*fields)
            problem = entry_problem(version, entry, base_offset, entries[-1] if entries else None)
            if problem:
                raise CorruptTxnIndexError(f"{path}: entry {number} {problem}")
            entries.append(entry)
        return cls(path, base_offset, entries)

    def entries(self) -> tuple[AbortedTxn, ...]:
        return tuple(self._entries)

    def append(self, entry: AbortedTxn) -> None:
        """An ABORT marker at `entry.last_offset` was appended to the segment."""
        require(entry.last_offset >= self.base_offset, "aborted transaction %s below segment %d", entry,
                self.base_offset)
        require(not self._entries or entry.last_offset > self._entries[-1].last_offset,
                "aborted transaction %s does not follow %s", entry, self._entries[-1] if self._entries else None)
        with open(self.path, "ab") as handle:
            handle.write(ENTRY.pack(ENTRY_VERSION, entry.producer_id, entry.first_offset, entry.last_offset,
                                    entry.last_stable_offset))
        self._entries.append(entry)

    def collect(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        """The aborted transactions overlapping [fetch_offset, upper_bound_offset), and whether no later
        segment's index can hold more (see core.txn.aborted.collect_aborted)."""
        return collect_aborted(self._entries, fetch_offset, upper_bound_offset)

    def truncate_to(self, offset: int) -> None:
        """The segment ends at `offset` now: forget the transactions aborted at or past it."""
        kept = [entry for entry in self._entries if entry.last_offset < offset]
        if len(kept) == len(self._entries):
            return
        self._entries = kept
        if self.path.exists():
            with open(self.path, "r+b") as handle:
                handle.truncate(len(kept) * ENTRY.size)

    def flush(self) -> None:
        if not self.path.exists():
            return
        with open(self.path, "rb+") as handle:
            os.fsync(handle.fileno())

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)

    def replace(self, path: Path) -> None:
        """Take the place of the index at `path` in one step (the cleaner's swap); an empty index leaves no
        file there."""
        if self.path.exists():
            os.replace(self.path, path)
        else:
            path.unlink(missing_ok=True)
        self.path = path


def entry_problem(version: int, entry: AbortedTxn, base_offset: int, previous: AbortedTxn | None) -> str:
    """Why an entry of the .txnindex of a segment at `base_offset` cannot be trusted; "" when it can."""
    if version != ENTRY_VERSION:
        return f"has version {version}; this build reads {ENTRY_VERSION}"
    if entry.last_offset < base_offset:
        return f"ends at offset {entry.last_offset}, below the segment's base offset {base_offset}"
    if not entry.first_offset <= entry.last_offset:
        return f"starts at {entry.first_offset}, after its end {entry.last_offset}"
    if previous is not None and entry.last_offset <= previous.last_offset:
        return f"ends at {entry.last_offset}, not after the entry before ({previous.last_offset})"
    return ""
