"""A segment's sparse indexes, as Kafka lays them out on disk.

    .index      relative offset int32 | position int32     (8 bytes an entry)
    .timeindex  timestamp int64 | relative offset int32    (12 bytes an entry)

Offsets are relative to the segment's base offset; all numbers big-endian.
The entries live in memory (arrays, searched with bisect) and reach the file
when the segment is flushed, rolled or closed: an index only has to be durable
for segments below the recovery point, and every segment at or above it is
re-indexed by recovery after a crash.
"""

from __future__ import annotations

import array
import bisect
import os
import struct
from pathlib import Path
from typing import ClassVar, Self

INT32_MAX = 2**31 - 1


def entries_follow(previous: tuple[int, int], entry: tuple[int, int]) -> bool:
    """Whether an index entry (key, value) may follow `previous`: its key above, its value not below."""
    return entry[0] > previous[0] and entry[1] >= previous[1]


class _SparseIndex:
    ENTRY: ClassVar[struct.Struct]
    KEY_TYPECODE: ClassVar[str]
    VALUE_TYPECODE: ClassVar[str]

    def __init__(self, path: Path, base_offset: int, max_entries: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max_entries
        self._keys = array.array(self.KEY_TYPECODE)
        self._values = array.array(self.VALUE_TYPECODE)
        self._entries_in_file = 0

    @classmethod
    def create(cls, path: Path, base_offset: int, max_entries: int) -> Self:
        """An empty index; any file at `path` is emptied."""
        index = cls(path, base_offset, max_entries)
        with open(path, "wb"):
            pass
        return index

    @classmethod
    def load(cls, path: Path, base_offset: int, max_entries: int) -> Self | None:
        """The index stored at `path`, or None when it is missing or structurally unsound."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        if len(data) % cls.ENTRY.size:
            return None
        index = cls(path, base_offset, max_entries)
        for key, value in cls.ENTRY.iter_unpack(data):
            index._keys.append(key)
            index._values.append(value)
        index._entries_in_file = len(index._keys)
        return index if index._is_sound() else None

    def __len__(self) -> int:
        return len(self._keys)

    @property
    def is_full(self) -> bool:
        return len(self._keys) >= self.max_entries

    def _is_sound(self) -> bool:
        keys, values = self._keys, self._values
        return all(entries_follow((keys[i], values[i]), (keys[i + 1], values[i + 1])) for i in range(len(keys) - 1))

    def _append(self, key: int, value: int) -> None:
        if self.is_full:
            return  # a sparse index may skip entries; the segment rolls before its next append
        if self._keys and (key <= self._keys[-1] or value < self._values[-1]):
            previous = (self._keys[-1], self._values[-1])
            raise ValueError(f"index entry ({key}, {value}) of {self.path.name} does not follow {previous}")
        self._keys.append(key)
        self._values.append(value)

    def _keep_first(self, count: int) -> None:
        del self._keys[count:]
        del self._values[count:]
        if self._entries_in_file > count:
            os.truncate(self.path, count * self.ENTRY.size)
            self._entries_in_file = count

    def write(self, *, fsync: bool) -> None:
        """Append the entries not yet in the file; with `fsync`, make the file durable."""
        pending = range(self._entries_in_file, len(self._keys))
        if not pending and not fsync:
            return
        data = b"".join(self.ENTRY.pack(self._keys[i], self._values[i]) for i in pending)
        with open(self.path, "r+b") as file:
            file.seek(self._entries_in_file * self.ENTRY.size)
            file.write(data)
            file.truncate()
            file.flush()
            if fsync:
                os.fsync(file.fileno())
        self._entries_in_file = len(self._keys)

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)

    def rename(self, path: Path) -> None:
        os.replace(self.path, path)
        self.path = path


class OffsetIndex(_SparseIndex):
    """Maps the last offset of an indexed batch to the batch's byte position."""

    ENTRY = struct.Struct(">ii")
    KEY_TYPECODE = "i"
    VALUE_TYPECODE = "i"

    def append(self, offset: int, position: int) -> None:
        self._append(offset - self.base_offset, position)

    def lookup(self, offset: int) -> int:
        """Position of the last indexed batch ending at or before `offset`; 0 when there is none.

        The batch holding `offset` starts at or after that position.
        """
        slot = bisect.bisect_right(self._keys, offset - self.base_offset) - 1
        return self._values[slot] if slot >= 0 else 0

    @property
    def last_position(self) -> int:
        return self._values[-1] if self._values else 0

    @property
    def last_relative_offset(self) -> int:
        return self._keys[-1] if self._keys else -1

    def truncate_to_position(self, position: int) -> None:
        """Drop the entries of batches at or after byte `position`."""
        self._keep_first(bisect.bisect_left(self._values, position))

    def fits_log(self, log_size_bytes: int) -> bool:
        return not self._values or (self._keys[0] >= 0 and self._values[-1] < log_size_bytes)


class TimeIndex(_SparseIndex):
    """Maps the largest timestamp seen so far to the offset where it was reached."""

    ENTRY = struct.Struct(">qi")
    KEY_TYPECODE = "q"
    VALUE_TYPECODE = "i"

    def maybe_append(self, timestamp_ms: int, offset: int) -> None:
        """Record a new largest timestamp; timestamps that are not larger add nothing."""
        if timestamp_ms < 0 or (self._keys and timestamp_ms <= self._keys[-1]):
            return
        self._append(timestamp_ms, offset - self.base_offset)

    @property
    def last_entry(self) -> tuple[int, int] | None:
        """(largest timestamp, its offset) or None when empty."""
        if not self._keys:
            return None
        return self._keys[-1], self.base_offset + self._values[-1]

    def offset_before(self, timestamp_ms: int) -> int | None:
        """The offset of the last entry whose timestamp is below `timestamp_ms`, if any.

        No record up to that offset has a timestamp of `timestamp_ms` or more.
        """
        slot = bisect.bisect_left(self._keys, timestamp_ms) - 1
        return self.base_offset + self._values[slot] if slot >= 0 else None

    def truncate_to_offset(self, offset: int) -> None:
        """Drop the entries whose offset is at or after `offset`."""
        relative = offset - self.base_offset
        count = len(self._values)
        while count and self._values[count - 1] >= relative:
            count -= 1
        self._keep_first(count)

    def fits_log(self, next_offset: int) -> bool:
        return not self._values or (self._values[0] >= 0 and self.base_offset + self._values[-1] < next_offset)
