"""Bounds on what one request may ask, against bad or hostile input: each a setting with a safe
default, each refused before anything is done with one sentence that names the setting."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class RequestLimits:
    """The settings of replog.config's LIMIT_SETTINGS, which hold their defaults."""

    partitions_per_request_max: int
    records_per_batch_max: int
    topic_name_length_max: int
    group_id_length_max: int


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
