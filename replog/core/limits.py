"""Bounds on what one request may ask, against bad or hostile input: each a setting with a safe
default, each refused before anything is done with one sentence that names the setting."""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterator

from replog.core.topic_plan import TOPIC_NAME_LENGTH_MAX

# RecordBatch v2: the batch length is a big-endian int32 at offset 8 (after base offset), and
# the record count an int32 at offset 57.
_LENGTH_AT, _COUNT_AT, _HEADER_BYTES = 8, 57, 61


@dataclasses.dataclass(frozen=True)
class RequestLimits:
    partitions_per_request_max: int = 10_000
    records_per_batch_max: int = 1_000_000
    topic_name_length_max: int = TOPIC_NAME_LENGTH_MAX
    group_id_length_max: int = 255


def record_counts(records: bytes) -> Iterator[int]:
    """The record count of each batch in a partition's records, as far as the headers read."""
    position = 0
    while position + _HEADER_BYTES <= len(records):
        (length,) = struct.unpack_from(">i", records, position + _LENGTH_AT)
        (count,) = struct.unpack_from(">i", records, position + _COUNT_AT)
        yield count
        if length <= 0:
            return
        position += 12 + length


def check_names(topics: list[str], groups: list[str], limits: RequestLimits) -> str | None:
    for name in topics:
        if len(name) > limits.topic_name_length_max:
            return (f"a topic name of {len(name)} characters is longer than max.topic.name.length="
                    f"{limits.topic_name_length_max}")
    for name in groups:
        if len(name) > limits.group_id_length_max:
            return (f"a group id of {len(name)} characters is longer than max.group.id.length="
                    f"{limits.group_id_length_max}")
    return None


def check_partitions(count: int, limits: RequestLimits) -> str | None:
    if count > limits.partitions_per_request_max:
        return (f"the request names {count} partitions, more than max.partitions.per.request="
                f"{limits.partitions_per_request_max}")
    return None


def check_records(counts: list[int], limits: RequestLimits) -> str | None:
    for count in counts:
        if count > limits.records_per_batch_max or count < 0:
            return (f"a record batch holds {count} records, more than max.records.per.batch="
                    f"{limits.records_per_batch_max}")
    return None
