"""The JSON files Kafka's tools take (`{"partitions": [{"topic": ..., "partition": ..., ...}], "version": 1}`),
read and checked: an AdminError names the file, the entry and what is wrong, before any request is made."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from replog.cli.numbers import INT32_MAX, out_of_range
from replog.client import AdminError, TopicPartition
from replog.core.errors import ErrorCode


def file_error(option: str, path: str, problem: str) -> AdminError:
    return AdminError(f"{option} {path}: {problem}", ErrorCode.INVALID_REQUEST)


def read_json(option: str, path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    except OSError as error:
        raise AdminError(f"cannot read {option} {path}: {error.strerror}", ErrorCode.INVALID_REQUEST) from None
    except (ValueError, UnicodeDecodeError) as error:
        raise file_error(option, path, f"not JSON: {error}") from None


def entries(option: str, path: str, key: str, shape: str) -> list:
    """The non-empty list under `key` of the file's top-level object."""
    document = read_json(option, path)
    found = document.get(key) if isinstance(document, dict) else None
    if not isinstance(found, list) or not found:
        raise file_error(option, path, f"it must hold a non-empty {json.dumps(key)} list, as in {shape}")
    return found


def partition_entries(option: str, path: str, shape: str, required: Collection[str],
                      optional: Collection[str] = ()) -> list[tuple[int, TopicPartition, dict]]:
    """Each entry of the file's "partitions" list as (index, partition, entry): an object with "topic",
    "partition" and the `required` keys, perhaps `optional` ones, each partition once."""
    keys = {"topic", "partition", *required}
    seen: set[TopicPartition] = set()
    found = []
    for index, entry in enumerate(entries(option, path, "partitions", shape)):
        if not isinstance(entry, dict) or not keys <= entry.keys() <= keys | set(optional):
            wanted = ", ".join(json.dumps(k) for k in ("topic", "partition", *required))
            raise file_error(option, path, f"partitions[{index}] must have {wanted}"
                             + (f" (and may have {', '.join(json.dumps(k) for k in optional)})" if optional else "")
                             + f", not {json.dumps(entry)}")
        topic, partition = entry["topic"], entry["partition"]
        if not isinstance(topic, str) or not topic or not is_whole(partition):
            raise file_error(option, path, f"partitions[{index}] needs a topic name and a whole number for its "
                             f"partition, not {json.dumps(entry)}")
        problem = out_of_range(partition, 0, INT32_MAX)
        if problem:
            raise file_error(option, path, f"partitions[{index}]'s partition: {problem}")
        tp = TopicPartition(topic, partition)
        if tp in seen:
            raise file_error(option, path, f"it names {tp} twice")
        seen.add(tp)
        found.append((index, tp, entry))
    return found


def is_whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
