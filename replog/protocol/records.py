"""One record as clients see it: absolute offset and timestamp, key, value, headers."""

from typing import NamedTuple


class Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


_new_tuple = tuple.__new__


def make_record(offset: int, timestamp: int, key, value, headers) -> Record:
    """Build a Record for the decoder without the keyword handling of `Record(...)`."""
    return _new_tuple(Record, (offset, timestamp, key, value, headers))
