"""A partition's files read as they lie on disk, for `replog dump-log` (what kafka-dump-log.sh is to Kafka).

Each reader yields one dict per entry it finds, `{"kind": ..., ...}`:

    .log        a "batch" per batch; with `records`, a "record" (or a "marker") per record after it
    .index      an "index" entry per offset index entry
    .timeindex  a "timeindex" entry per time index entry
    .txnindex   an "aborted" transaction per entry
    .snapshot   a "producer" per producer of the snapshot

and a "problem" for what is not sound: a batch that does not check out (its CRC, its header, bytes that
end mid-batch), offsets that go back, an index entry that points at no batch of its segment. Reading stops
at the first unsound batch, where recovery would cut the segment. Nothing is written: a file is read as it
is, even one a broker has open.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import struct
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from replog.core.group import records as group_records
from replog.core.topic_partition import TopicPartition
from replog.core.txn import records as txn_records
from replog.core.txn.markers import ControlType
from replog.protocol import CorruptBatchError, decode_body
from replog.protocol.checks import Problem, check_batch
from replog.protocol.control import control_type_id, decode_marker_value
from replog.protocol.header import BatchHeader
from replog.protocol.layout import BATCH_LENGTH_OFFSET, LOG_OVERHEAD, NO_SEQUENCE
from replog.storage.batches import ANY_SIZE
from replog.storage.files import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, parse_segment_name
from replog.storage.index import OffsetIndex, TimeIndex
from replog.storage.producer_snapshots import SNAPSHOT_SUFFIX
from replog.storage.txn_index import ENTRY as TXN_ENTRY
from replog.storage.txn_index import TXN_INDEX_SUFFIX

_LENGTH = struct.Struct(">i")
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
        yield from _segment(path, records or payloads or decoder is not None, payloads, decoder)
    elif suffix == INDEX_SUFFIX:
        yield from _offset_index(path, base_offset, check_index)
    elif suffix == TIME_INDEX_SUFFIX:
        yield from _time_index(path, base_offset, check_index)
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


def segment_batches(path: Path) -> Iterator[SegmentBatch | dict]:
    """Each sound batch of a segment file in order, then a problem where the file stops being sound, if it
    does. The file is read a batch at a time: a segment may be a gigabyte, and a running broker's may grow
    or be truncated meanwhile."""
    try:
        handle = open(path, "rb")
    except OSError as error:
        raise DumpError(f"cannot read {path}: {error.strerror}") from None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        position = 0
        next_offset = None
        while position < size:
            prefix = os.pread(handle.fileno(), LOG_OVERHEAD, position)
            if len(prefix) < LOG_OVERHEAD:
                yield _problem(f"byte {position}", f"the last {len(prefix)} bytes are not a whole batch")
                return
            length = _LENGTH.unpack_from(prefix, BATCH_LENGTH_OFFSET)[0]
            if position + LOG_OVERHEAD + length > size:
                yield _problem(f"byte {position}", f"a batch of {LOG_OVERHEAD + length} bytes is said to start here, "
                                                   f"but {size - position} bytes remain: a torn write")
                return
            data = os.pread(handle.fileno(), LOG_OVERHEAD + max(length, 0), position)
            checked = check_batch(memoryview(data), 0, ANY_SIZE, walk=True)
            if isinstance(checked, Problem):
                yield _problem(f"byte {position}", f"{_placed(checked.reason, position)}; the {size - position} "
                                                   "bytes from here are not read (recovery cuts a segment there)")
                return
            if next_offset is not None and checked.base_offset < next_offset:
                yield _problem(f"byte {position}", f"the batch starts at offset {checked.base_offset}, before the "
                                                   f"previous batch's end {next_offset}")
            yield SegmentBatch(position, checked, data)
            next_offset = checked.next_offset
            position += checked.size


def _placed(reason: str, position: int) -> str:
    """A checker's sentence about a batch read on its own (at byte 0) about the batch where it is in the file."""
    return reason.replace("at byte 0", f"at byte {position}")


def _segment(path: Path, records: bool, payloads: bool, decoder: str | None) -> Iterator[dict]:
    for found in segment_batches(path):
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
        else header.base_sequence + header.last_offset_delta,
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
            else header.base_sequence + record.offset - header.base_offset,
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


def _segment_beside(path: Path) -> list[SegmentBatch] | None:
    beside = path.with_suffix(LOG_SUFFIX)
    if not beside.is_file():
        return None
    return [found for found in segment_batches(beside) if not isinstance(found, dict)]


def _offset_index(path: Path, base_offset: int, check: bool) -> Iterator[dict]:
    entries, torn = _entries(path, OffsetIndex.ENTRY)
    batches = _segment_beside(path) if check else None
    if check and batches is None:
        yield _problem(path.name, f"no {path.with_suffix(LOG_SUFFIX).name} beside it to check it against")
    at = {batch.position: batch.header for batch in batches or ()}
    previous = None
    for number, (relative, position) in enumerate(entries):
        yield {"kind": "index", "offset": base_offset + relative, "position": position}
        if previous is not None and (relative <= previous[0] or position <= previous[1]):
            yield _problem(f"entry {number}", "its offset and position do not both follow the previous entry's")
        previous = relative, position
        if batches is not None:
            header = at.get(position)
            if header is None:
                yield _problem(f"entry {number}", f"no batch of the segment starts at byte {position}")
            elif header.last_offset != base_offset + relative:
                yield _problem(f"entry {number}", f"the batch at byte {position} ends at offset "
                                                  f"{header.last_offset}, not {base_offset + relative}")
    if torn:
        yield torn


def _time_index(path: Path, base_offset: int, check: bool) -> Iterator[dict]:
    entries, torn = _entries(path, TimeIndex.ENTRY)
    batches = _segment_beside(path) if check else None
    if check and batches is None:
        yield _problem(path.name, f"no {path.with_suffix(LOG_SUFFIX).name} beside it to check it against")
    largest_by_offset = {}
    largest = -1
    for batch in batches or ():
        largest = max(largest, batch.header.max_timestamp)
        largest_by_offset[batch.header.last_offset] = largest
    previous = None
    for number, (timestamp, relative) in enumerate(entries):
        offset = base_offset + relative
        yield {"kind": "timeindex", "timestamp": timestamp, "offset": offset}
        if previous is not None and (timestamp <= previous[0] or relative < previous[1]):
            yield _problem(f"entry {number}", "its timestamp does not grow or its offset goes back")
        previous = timestamp, relative
        if batches is not None and largest_by_offset.get(offset) != timestamp:
            yield _problem(f"entry {number}", f"the largest timestamp up to offset {offset} is "
                                              f"{largest_by_offset.get(offset, 'unknown: no batch ends there')}, "
                                              f"not {timestamp}")
    if torn:
        yield torn


def _txn_index(path: Path, base_offset: int) -> Iterator[dict]:
    entries, torn = _entries(path, TXN_ENTRY)
    for number, (version, producer_id, first_offset, last_offset, last_stable_offset) in enumerate(entries):
        yield {"kind": "aborted", "version": version, "producer_id": producer_id, "first_offset": first_offset,
               "last_offset": last_offset, "last_stable_offset": last_stable_offset}
        if last_offset < base_offset or first_offset > last_offset:
            yield _problem(f"entry {number}", f"offsets {first_offset}..{last_offset} are not a transaction "
                                              f"ending in a segment that starts at {base_offset}")
    if torn:
        yield torn


def _snapshot(path: Path, offset: int) -> Iterator[dict]:
    try:
        document = json.loads(_read_bytes(path))
        producers = document["producers"]
        version = document["version"]
    except (ValueError, KeyError, TypeError) as error:
        yield _problem(path.name, f"not a producer snapshot: {error}")
        return
    if document.get("offset") != offset:
        yield _problem(path.name, f"it says it is of offset {document.get('offset')}, its name {offset}")
    for producer in producers:
        batches = producer.get("batches", [])
        yield {"kind": "producer", "snapshot_version": version, "producer_id": producer.get("producer_id"),
               "producer_epoch": producer.get("epoch"), "coordinator_epoch": producer.get("coordinator_epoch", -1),
               "current_txn_first_offset": producer.get("current_txn_first_offset", -1),
               "batches": [{"first_sequence": b[0], "last_sequence": b[1], "first_offset": b[2], "last_offset": b[3]}
                           for b in batches]}
