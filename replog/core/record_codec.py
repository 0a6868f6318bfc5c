"""The big-endian layout the coordinators' records share: int8/16/32/64, strings as an int16 length
(-1 for none) and UTF-8, lists as an int32 count.

`Reader` is strict: a record that ends early, runs past its end, holds a count
that cannot fit, or leaves bytes over raises the caller's error class (a
ValueError) with one sentence, never a struct.error or an IndexError.
"""

import struct
from collections.abc import Mapping

from .invariant import require

# partitions as they travel in records: topic -> partition indexes
Partitions = Mapping[str, frozenset[int]]


class Writer:
    def __init__(self, what: str) -> None:
        self._what = what
        self._parts: list[bytes] = []

    def int8(self, value: int) -> None:
        self._parts.append(struct.pack(">b", value))

    def int16(self, value: int) -> None:
        self._parts.append(struct.pack(">h", value))

    def int32(self, value: int) -> None:
        self._parts.append(struct.pack(">i", value))

    def int64(self, value: int) -> None:
        self._parts.append(struct.pack(">q", value))

    def string(self, value: str | None) -> None:
        if value is None:
            self.int16(-1)
            return
        data = value.encode()
        require(len(data) < 2**15, "a string of %d bytes does not fit a %s", len(data), self._what)
        self.int16(len(data))
        self._parts.append(data)

    def strings(self, values: tuple[str, ...]) -> None:
        self.int32(len(values))
        for value in values:
            self.string(value)

    def partitions(self, value: Partitions) -> None:
        self.int32(len(value))
        for topic in sorted(value):
            self.string(topic)
            indexes = sorted(value[topic])
            self.int32(len(indexes))
            for index in indexes:
                self.int32(index)

    def bytes(self) -> bytes:
        return b"".join(self._parts)


class Reader:
    def __init__(self, data: bytes, error: type[ValueError], what: str) -> None:
        self._data = memoryview(data)
        self._position = 0
        self._error = error
        self._what = what

    def _take(self, fmt: str, size: int) -> int:
        if self._position + size > len(self._data):
            raise self._error(f"a {self._what} ends early, at byte {self._position}")
        (value,) = struct.unpack_from(fmt, self._data, self._position)
        self._position += size
        return value

    def int8(self) -> int:
        return self._take(">b", 1)

    def int16(self) -> int:
        return self._take(">h", 2)

    def int32(self) -> int:
        return self._take(">i", 4)

    def int64(self) -> int:
        return self._take(">q", 8)

    def string(self) -> str | None:
        length = self.int16()
        if length < 0:
            return None
        if self._position + length > len(self._data):
            raise self._error(f"a string in a {self._what} runs past its end")
        try:
            value = bytes(self._data[self._position:self._position + length]).decode()
        except UnicodeDecodeError as error:
            raise self._error(f"a string in a {self._what} is not UTF-8: {error}") from None
        self._position += length
        return value

    def text(self) -> str:
        value = self.string()
        if value is None:
            raise self._error(f"a {self._what} lacks a string it needs")
        return value

    def strings(self) -> tuple[str, ...]:
        return tuple(self.text() for _ in range(self.count()))

    def partitions(self) -> dict[str, frozenset[int]]:
        result = {}
        for _ in range(self.count()):
            topic = self.text()
            result[topic] = frozenset(self.int32() for _ in range(self.count()))
        return result

    def count(self) -> int:
        count = self.int32()
        if count < 0 or count > len(self._data):
            raise self._error(f"a {self._what} has a count of {count}")
        return count

    def done(self) -> None:
        if self._position != len(self._data):
            raise self._error(f"a {self._what} has {len(self._data) - self._position} bytes too many")
