"""A partition's files read as they lie on disk, for `replog dump-log` (what kafka-dump-log.sh is to Kafka).

Each reader yields one dict per entry it finds, `{"kind": ..., ...}`:

    .log        a "batch" per batch; with `records`, a "record" (or a "marker") per record after it
    .index      an "index" entry per offset index entry
    .timeindex  a "timeindex" entry per time index entry
    .txnindex   an "aborted" transaction per entry
    .snapshot   a "producer" per producer of the snapshot

and a "problem" for what is not sound, by the rules the broker reads its files with: a batch that does
not check out (its CRC, its header, bytes that end mid-batch) or cannot stand where it is (offsets that go
back, beyond what the index can hold), index entries out of order or pointing at no batch of their
segment, a .txnindex entry the broker would not trust, a snapshot it would not load. A segment is read up
to where recovery would cut it. Nothing is written: a file is read as it is, even one a broker has open,
whose newest segment may then end in a batch being written.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import os
import struct
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from replog.core.group import records as group_records
from replog.core.producer_state import last_sequence
from replog.core.topic_partition import TopicPartition
from replog.core.txn import records as txn_records
from replog.core.txn.aborted import AbortedTxn
from replog.core.txn.markers import ControlType
from replog.protocol import CorruptBatchError, decode_body
from replog.protocol.checks import Problem, check_batch
from replog.protocol.control import control_type_id, decode_marker_value
from replog.protocol.header import BatchHeader
from replog.protocol.layout import BATCH_LENGTH_MIN, LOG_OVERHEAD, NO_SEQUENCE
from replog.storage.batches import ANY_SIZE, BATCH_PREFIX, misplaced
from replog.storage.files import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, parse_segment_name
from replog.storage.index import OffsetIndex, TimeIndex, entries_follow
from replog.storage.producer_snapshots import SNAPSHOT_SUFFIX, parse_snapshot
from replog.storage.txn_index import ENTRY as TXN_ENTRY
from replog.storage.txn_index import TXN_INDEX_SUFFIX, entry_problem

SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, SNAPSHOT_SUFFIX)
MARKERS = (ControlType.ABORT, ControlType.COMMIT)


class DumpError(Exception):
    """A file `replog dump-log` cannot read at all; one sentence."""


def dump(path: Path, *, records: bool = False, payloads: bool = False, decoder: str | None = None,
         check_index: bool = False) -> Iterator[dict]:
    """The entries of one file of a partition directory, by its suffix. With `records`, a segment's records
    too, and with `payloads` their keys, values and headers' values; with `decoder` (a key of DECODERS), each
    record read as a record of that internal topic; with `check_index`, each index entry is checked against
    the segment beside it."""
    base_offset, suffix = check_file(path)
    if suffix == LOG_SUFFIX:
        yield from _segment(path, base_offset, records or payloads or decoder is not None, payloads, decoder)
    elif suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
        yield from _sparse_index(path, base_offset, check_index, time_index=suffix == TIME_INDEX_SUFFIX)
    elif suffix == TXN_INDEX_SUFFIX:
        yield from _txn_index(path, base_offset)
    else:
        yield from _snapshot(path, base_offset)


def check_file(path: Path) -> tuple[int, str]:
    """The base offset and suffix a partition file's name gives; DumpError for a name that is none, or no file."""
    parsed = parse_segment_name(path.name)
    if parsed is None or parsed[1] not in SUFFIXES:
        raise DumpError(f"{path} is not a file of a partition's log: its name should be a 20-digit offset and one "
                        f"of {', '.join(SUFFIXES)}")
    if not path.is_file():
        raise DumpError(f"{path} does not exist" if not path.exists() else f"{path} is not a file")
    return parsed


def _problem(at: str, text: str) -> dict:
    return {"kind": "problem", "at": at, "problem": text}


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise DumpError(f"cannot read {path}: {error.strerror}") from None


@dataclasses.dataclass(frozen=True)
class SegmentBatch:
    position: int  # in the file
    header: BatchHeader  # as read from `data`, where the batch starts at 0
    data: bytes


def segment_batches(path: Path, base_offset: int) -> Iterator[SegmentBatch | dict]:
    """Each sound batch of the segment of `base_offset` in order, then a problem where recovery would cut the
    file, if it would. The file is read a batch at a time: a segment may be a gigabyte, and a running
    broker's may grow or be truncated meanwhile."""
    try:
        handle = open(path, "rb")
    except OSError as error:
        raise DumpError(f"cannot read {path}: {error.strerror}") from None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        position = 0
        next_offset = base_offset
        while position < size:
            prefix = os.pread(handle.fileno(), LOG_OVERHEAD, position)
            if len(prefix) < LOG_OVERHEAD:
                yield _cut(position, size, f"the last {len(prefix)} bytes are not a whole batch")
                return
            _, length = BATCH_PREFIX.unpack(prefix)
            if length < BATCH_LENGTH_MIN:
                yield _cut(position, size, f"a batch length of {length} is below {BATCH_LENGTH_MIN}, what a batch's "
                                           "header takes")
                return
            if position + LOG_OVERHEAD + length > size:
                yield _cut(position, size, f"a batch of {LOG_OVERHEAD + length} bytes starts here, but "
                                           f"{size - position} bytes remain: a torn write")
                return
            data = os.pread(handle.fileno(), LOG_OVERHEAD + length, position)
            checked = check_batch(memoryview(data), 0, ANY_SIZE, walk=True)
            if isinstance(checked, Problem):
                yield _cut(position, size, _placed(checked.reason, position))
                return
            out_of_place = misplaced(checked, next_offset, base_offset)
            if out_of_place:
                yield _cut(position, size, out_of_place)
                return
            yield SegmentBatch(position, checked, data)
            next_offset = checked.next_offset
            position += checked.size


def _cut(position: int, size: int, reason: str) -> dict:
    return _problem(f"byte {position}", f"{reason}; the {size - position} bytes from here are not read "
                                        "(recovery cuts the segment there)")


def _placed(reason: str, position: int) -> str:
    """A checker's sentence about a batch read on its own, where it starts at byte 0, about the batch where it
    is in the file."""
    return reason.replace("batch at byte 0 ", f"batch at byte {position} ")


def _segment(path: Path, base_offset: int, records: bool, payloads: bool, decoder: str | None) -> Iterator[dict]:
    for found in segment_batches(path, base_offset):
        if isinstance(found, dict):
            yield found
            continue
        yield _batch(found)
        if records:
            yield from _records(found, payloads, decoder)


def _batch(batch: SegmentBatch) -> dict:
    header = batch.header
    return {
        "kind": "batch", "base_offset": header.base_offset, "last_offset": header.last_offset,
        "count": header.records_count, "position": batch.position, "size": header.size,
        "timestamp_type": "LogAppendTime" if header.is_log_append_time else "CreateTime",
        "max_timestamp": header.max_timestamp, "partition_leader_epoch": header.partition_leader_epoch,
        "producer_id": header.producer_id, "producer_epoch": header.producer_epoch,
        "base_sequence": header.base_sequence,
        "last_sequence": NO_SEQUENCE if header.base_sequence == NO_SEQUENCE
        else last_sequence(header.base_sequence, header.last_offset_delta + 1),
        "transactional": header.is_transactional, "control": header.is_control,
        "compression": header.compression.name.lower(), "crc": f"0x{header.crc:08x}",
    }


def _records(batch: SegmentBatch, payloads: bool, decoder: str | None) -> Iterator[dict]:
    header = batch.header
    try:
        decoded = decode_body(batch.data, header)
    except CorruptBatchError as error:
        yield _problem(f"byte {batch.position}", f"its records do not decode: {_placed(str(error), batch.position)}")
        return
    for record in decoded:
        if header.is_control:
            yield _marker(header, record)
            continue
        entry = {
            "kind": "record", "offset": record.offset, "timestamp": record.timestamp,
            "sequence": NO_SEQUENCE if header.base_sequence == NO_SEQUENCE
            else last_sequence(header.base_sequence, record.offset - header.base_offset + 1),
            "key_size": _size(record.key), "value_size": _size(record.value),
            "header_keys": [name for name, _ in record.headers],
        }
        if payloads:
            entry.update(key=_text(record.key), value=_text(record.value),
                         headers=[[name, _text(value)] for name, value in record.headers])
        if decoder is not None:
            topic, read = DECODERS[decoder]
            try:
                entry["decoded"] = plain(read(record.key or b"", record.value))
            except ValueError as error:
                yield entry
                yield _problem(f"offset {record.offset}", f"not a record of {topic}: {error}")
                continue
        yield entry


def _marker(header: BatchHeader, record) -> dict:
    try:
        type_id = control_type_id(record.key)
        epoch = decode_marker_value(record.value) if type_id in MARKERS else None
    except ValueError as error:
        return _problem(f"offset {record.offset}", f"the control record is no transaction marker: {error}")
    return {"kind": "marker", "offset": record.offset, "timestamp": record.timestamp,
            "marker": ControlType(type_id).name if type_id in MARKERS else f"control type {type_id}",
            "producer_id": header.producer_id, "coordinator_epoch": epoch}


def plain(value: Any) -> Any:
    """A decoded record as JSON's types: dataclasses as objects, enums by name, sets and tuples as lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: plain(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, TopicPartition):
        return str(value)
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, frozenset | set):
        return sorted((plain(item) for item in value), key=str)
    if isinstance(value, tuple | list):
        return [plain(item) for item in value]
    return value


def _group_record(key: bytes, value: bytes | None) -> dict:
    record = group_records.decode(key, value)
    decoded = plain(record)
    decoded["type"] = GROUP_RECORD_TYPES.get(record.type, record.type)
    return decoded


GROUP_RECORD_TYPES = {number: name for name, number in vars(group_records.RecordType).items() if name.isupper()}
# Readers of the internal topics' records, by the option that names them (kafka-dump-log's), with the topic.
DECODERS = {"offsets": ("__consumer_offsets", _group_record),
            "transaction-log": ("__transaction_state", txn_records.decode)}


def _size(data: bytes | None) -> int:
    return -1 if data is None else len(data)


def _text(data: bytes | None) -> str | None:
    """Bytes as text: UTF-8, with any other byte written as a \\x escape."""
    return None if data is None else data.decode("utf-8", errors="backslashreplace")


def _entries(path: Path, layout: struct.Struct) -> tuple[list[tuple], dict | None]:
    data = _read_bytes(path)
    whole = len(data) - len(data) % layout.size
    torn = None if whole == len(data) else _problem(
        f"byte {whole}", f"the last {len(data) - whole} bytes are not a whole {layout.size}-byte entry")
    return list(layout.iter_unpack(data[:whole])), torn


def _batches_beside(path: Path, check: bool) -> tuple[dict[int, BatchHeader] | None, dict | None]:
    """The headers of the sound batches of the segment beside an index, by position, when `check` asks for
    them; else, or when there is no segment to read, None and what stood in the way."""
    if not check:
        return None, None
    beside = path.with_suffix(LOG_SUFFIX)
    if not beside.is_file():
        return None, _problem(path.name, f"no {beside.name} beside it to check it against")
    try:
        written = beside.stat()
        return _segment_headers(beside, written.st_size, written.st_mtime_ns), None
    except OSError as error:
        return None, _problem(path.name, f"it cannot be checked: cannot read {beside}: {error.strerror}")
    except DumpError as error:
        return None, _problem(path.name, f"it cannot be checked: {error}")


@functools.lru_cache(maxsize=1)
def _segment_headers(path: Path, size: int, mtime_ns: int) -> dict[int, BatchHeader]:
    """The sound batches' headers of a segment by position, read once for its .index and its .timeindex
    (which a directory lists one after the other); the segment's size and time tell a changed file."""
    return {batch.position: batch.header for batch in segment_batches(path, check_file(path)[0])
            if isinstance(batch, SegmentBatch)}


def _sparse_index(path: Path, base_offset: int, check: bool, *, time_index: bool) -> Iterator[dict]:
    """An .index or a .timeindex: its entries, each followed by what is wrong with it."""
    headers, unchecked = _batches_beside(path, check)
    entries, torn = _entries(path, TimeIndex.ENTRY if time_index else OffsetIndex.ENTRY)
    judge = _time_entry_problem(headers) if time_index else _offset_entry_problem(headers)
    for number, (key, value) in enumerate(entries):
        if time_index:
            entry = {"kind": "timeindex", "timestamp": key, "offset": base_offset + value}
        else:
            entry = {"kind": "index", "offset": base_offset + key, "position": value}
        yield entry
        if number and not entries_follow(entries[number - 1], (key, value)):
            yield _problem(f"entry {number}", f"its {'timestamp' if time_index else 'offset'} is not above the "
                                              f"previous entry's or its {'offset' if time_index else 'position'} "
                                              "is below it")
        problem = judge(entry) if headers is not None else None
        if problem:
            yield _problem(f"entry {number}", problem)
    yield from filter(None, (torn, unchecked))


def _offset_entry_problem(headers: dict[int, BatchHeader] | None) -> Callable[[dict], str | None]:
    def judge(entry: dict) -> str | None:
        header = headers.get(entry["position"])
        if header is None:
            return f"no batch of the segment starts at byte {entry['position']}"
        if header.last_offset != entry["offset"]:
            return f"the batch at byte {entry['position']} ends at offset {header.last_offset}, not {entry['offset']}"
        return None

    return judge


def _time_entry_problem(headers: dict[int, BatchHeader] | None) -> Callable[[dict], str | None]:
    largest_by_offset = {}
    largest = -1
    for header in (headers or {}).values():
        largest = max(largest, header.max_timestamp)
        largest_by_offset[header.last_offset] = largest

    def judge(entry: dict) -> str | None:
        if largest_by_offset.get(entry["offset"]) == entry["timestamp"]:
            return None
        largest_there = largest_by_offset.get(entry["offset"], "unknown: no batch ends there")
        return f"the largest timestamp up to offset {entry['offset']} is {largest_there}, not {entry['timestamp']}"

    return judge


def _txn_index(path: Path, base_offset: int) -> Iterator[dict]:
    entries, torn = _entries(path, TXN_ENTRY)
    previous = None
    for number, (version, *fields) in enumerate(entries):
        entry = AbortedTxn(*fields)
        yield {"kind": "aborted", "version": version, "producer_id": entry.producer_id,
               "first_offset": entry.first_offset, "last_offset": entry.last_offset,
               "last_stable_offset": entry.last_stable_offset}
        problem = entry_problem(version, entry, base_offset, previous)
        if problem:
            yield _problem(f"entry {number}", f"the entry {problem}")
        previous = entry
    if torn:
        yield torn


def _snapshot(path: Path, offset: int) -> Iterator[dict]:
    data = _read_bytes(path)
    try:
        producers = parse_snapshot(data, offset)
    except ValueError as error:
        yield _problem(path.name, f"not a producer snapshot: {error}")
        return
    for producer in producers:
        yield {"kind": "producer", "producer_id": producer.producer_id, "producer_epoch": producer.epoch,
               "coordinator_epoch": producer.coordinator_epoch,
               "current_txn_first_offset": producer.current_txn_first_offset,
               "batches": [dataclasses.asdict(batch) for batch in producer.batches]}
