"""One record as clients see it: absolute offset and timestamp, key, value, headers."""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


_new = object.__new__
_set_offset = Record.offset.__set__
_set_timestamp = Record.timestamp.__set__
_set_key = Record.key.__set__
_set_value = Record.value.__set__
_set_headers = Record.headers.__set__


def make_record(offset: int, timestamp: int, key, value, headers) -> Record:
    """Build a Record for the decoder, a third of the cost of `Record(...)`.

    A frozen dataclass's __init__ goes through object.__setattr__ by name for
    each field; writing the slots through their descriptors skips that, and
    the decoder builds one Record per record it reads.
    """
    record = _new(Record)
    _set_offset(record, offset)
    _set_timestamp(record, timestamp)
    _set_key(record, key)
    _set_value(record, value)
    _set_headers(record, headers)
    return record
