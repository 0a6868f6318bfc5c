"""A partition log's settings, named after Kafka's topic configs.

Each field maps one topic config (`segment.bytes` -> `segment_bytes`) and keeps
Kafka's default, so a topic created without configs behaves as Kafka's would.
It lives in the core because two sides read it: the broker builds a partition's
log from it (`replog.storage`), and the controller's table of topic configs
(`replog.core.topic_configs`) takes its defaults and checks from it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
DAY_MS = 24 * 60 * 60 * 1000

CLEANUP_POLICIES = ("delete", "compact", "compact,delete")
# message.timestamp.type: the producer's time (CreateTime) or the leader's when it appends (LogAppendTime).
CREATE_TIME, LOG_APPEND_TIME = "CreateTime", "LogAppendTime"
TIMESTAMP_TYPES = (CREATE_TIME, LOG_APPEND_TIME)
HOUR_MS = 60 * 60 * 1000
# compression.type: the codec the leader stores batches in, or "producer" to keep the producer's.
PRODUCER_COMPRESSION = "producer"
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", PRODUCER_COMPRESSION)


class LogConfigError(ValueError):
    """A topic config value the log cannot work with; the message names it."""


@dataclasses.dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = 1024 * 1024 * 1024  # segment.bytes
    segment_ms: int = 7 * DAY_MS  # segment.ms
    segment_index_bytes: int = 10 * 1024 * 1024  # segment.index.bytes
    index_interval_bytes: int = 4096  # index.interval.bytes
    retention_ms: int = 7 * DAY_MS  # retention.ms; -1: keep forever
    retention_bytes: int = -1  # retention.bytes; -1: no size limit
    cleanup_policy: str = "delete"  # cleanup.policy
    delete_retention_ms: int = DAY_MS  # delete.retention.ms: how long tombstones stay
    flush_messages: int = INT64_MAX  # flush.messages; 1 fsyncs every append
    flush_ms: int = INT64_MAX  # flush.ms
    max_message_bytes: int = 1024 * 1024 + 12  # max.message.bytes (one batch)
    message_timestamp_type: str = CREATE_TIME  # message.timestamp.type
    # How far a CreateTime record's time may lie before or after the leader's clock (KIP-937).
    message_timestamp_before_max_ms: int = INT64_MAX  # message.timestamp.before.max.ms
    message_timestamp_after_max_ms: int = HOUR_MS  # message.timestamp.after.max.ms
    compression_type: str = PRODUCER_COMPRESSION  # compression.type

    def __post_init__(self) -> None:
        _at_least("segment.bytes", self.segment_bytes, 14, INT32_MAX)
        _at_least("segment.ms", self.segment_ms, 1)
        _at_least("segment.index.bytes", self.segment_index_bytes, 12, INT32_MAX)
        _at_least("index.interval.bytes", self.index_interval_bytes, 0, INT32_MAX)
        _at_least("retention.ms", self.retention_ms, -1)
        _at_least("retention.bytes", self.retention_bytes, -1)
        _at_least("delete.retention.ms", self.delete_retention_ms, 0)
        _at_least("flush.messages", self.flush_messages, 1)
        _at_least("flush.ms", self.flush_ms, 0)
        _at_least("max.message.bytes", self.max_message_bytes, 0, INT32_MAX)
        _at_least("message.timestamp.before.max.ms", self.message_timestamp_before_max_ms, 0)
        _at_least("message.timestamp.after.max.ms", self.message_timestamp_after_max_ms, 0)
        if self.compression_type not in COMPRESSION_TYPES:
            raise LogConfigError(f"compression.type {self.compression_type!r} is not one of "
                                 f"{', '.join(COMPRESSION_TYPES)}")
        if self.message_timestamp_type not in TIMESTAMP_TYPES:
            raise LogConfigError(f"message.timestamp.type {self.message_timestamp_type!r} is not one of "
                                 f"{', '.join(TIMESTAMP_TYPES)}")
        if self.cleanup_policy not in CLEANUP_POLICIES:
            raise LogConfigError(
                f"cleanup.policy {self.cleanup_policy!r} is not one of {', '.join(CLEANUP_POLICIES)}"
            )

    @property
    def deletes(self) -> bool:
        """Whether retention (retention.ms / retention.bytes) removes old segments."""
        return "delete" in self.cleanup_policy.split(",")

    @property
    def compacts(self) -> bool:
        return "compact" in self.cleanup_policy.split(",")

    @property
    def log_append_time(self) -> bool:
        """Whether the leader stamps each batch with its own clock (message.timestamp.type=LogAppendTime)."""
        return self.message_timestamp_type == LOG_APPEND_TIME

    @classmethod
    def from_topic_config(cls, configs: Mapping[str, str | int]) -> LogConfig:
        """Build from Kafka-named topic configs; names this log does not use are ignored."""
        values: dict[str, str | int] = {}
        for name, value in configs.items():
            field_name = _FIELD_BY_CONFIG.get(name)
            if field_name is None:
                continue
            values[field_name] = str(value).strip() if field_name in _TEXT_FIELDS else _parse_int(name, value)
        if "compression_type" in values:
            values["compression_type"] = str(values["compression_type"]).lower()
        if "cleanup_policy" in values:
            values["cleanup_policy"] = _normalise_policy(str(values["cleanup_policy"]))
        return cls(**values)


_TEXT_FIELDS = frozenset({"cleanup_policy", "message_timestamp_type", "compression_type"})
_FIELD_BY_CONFIG = {field.name.replace("_", "."): field.name for field in dataclasses.fields(LogConfig)}


def _parse_int(name: str, value: str | int) -> int:
    if isinstance(value, int):
        return value
    try:
        return int(value.strip())
    except ValueError:
        raise LogConfigError(f"{name} must be a whole number, not {value!r}") from None


def _normalise_policy(text: str) -> str:
    """Kafka accepts "delete,compact" as well as "compact,delete"; keep one spelling."""
    parts = sorted({part.strip() for part in text.split(",") if part.strip()})
    return ",".join(parts)


def _at_least(name: str, value: int, minimum: int, maximum: int = INT64_MAX) -> None:
    if not minimum <= value <= maximum:
        raise LogConfigError(f"{name} is {value}; it must be between {minimum} and {maximum}")
