"""The topic configs a topic may set, under Kafka's names, with Kafka's defaults.

Pure (stdlib only). The controller validates configs against this table when a
topic is created; `/config/topics/<topic>` then holds only the configs the
topic set, and every other one takes the default below.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
DAY_MS = 24 * 60 * 60 * 1000

CLEANUP_POLICIES = ("compact", "delete")
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")


class InvalidConfig(ValueError):
    """One sentence saying which config is wrong and what it accepts."""


@dataclasses.dataclass(frozen=True)
class TopicConfigDef:
    name: str
    default: str
    normalise: Callable[[str, str], str]  # (name, text) -> value to store; raises InvalidConfig
    doc: str


def _integer(minimum: int, maximum: int) -> Callable[[str, str], str]:
    def normalise(name: str, text: str) -> str:
        try:
            value = int(text.strip())
        except ValueError:
            raise InvalidConfig(f"{name} must be a whole number, not {text!r}") from None
        if not minimum <= value <= maximum:
            raise InvalidConfig(f"{name} must be between {minimum} and {maximum}, not {value}")
        return str(value)

    return normalise


def _boolean(name: str, text: str) -> str:
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise InvalidConfig(f"{name} must be true or false, not {text!r}")
    return value


def _cleanup_policy(name: str, text: str) -> str:
    policies = sorted({part.strip() for part in text.split(",") if part.strip()})
    if not policies or any(p not in CLEANUP_POLICIES for p in policies):
        raise InvalidConfig(f"{name} must be delete, compact or compact,delete, not {text!r}")
    return ",".join(policies)


def _compression_type(name: str, text: str) -> str:
    value = text.strip().lower()
    if value not in COMPRESSION_TYPES:
        raise InvalidConfig(f"{name} must be one of {', '.join(COMPRESSION_TYPES)}, not {text!r}")
    return value


TOPIC_CONFIGS: Mapping[str, TopicConfigDef] = {
    d.name: d
    for d in (
        TopicConfigDef("min.insync.replicas", "1", _integer(1, INT32_MAX),
                       "fewest ISR members for an acks=all write to be accepted"),
        TopicConfigDef("unclean.leader.election.enable", "false", _boolean,
                       "elect a replica outside the ISR when no ISR member is alive (may lose records)"),
        TopicConfigDef("retention.ms", str(7 * DAY_MS), _integer(-1, INT64_MAX),
                       "how long to keep a segment after its last record, in ms; -1 keeps forever"),
        TopicConfigDef("retention.bytes", "-1", _integer(-1, INT64_MAX),
                       "largest size of a partition's log before old segments go; -1: no limit"),
        TopicConfigDef("segment.bytes", str(1024**3), _integer(14, INT32_MAX),
                       "size at which a segment is rolled, in bytes"),
        TopicConfigDef("segment.ms", str(7 * DAY_MS), _integer(1, INT64_MAX),
                       "age at which a segment is rolled, in ms"),
        TopicConfigDef("cleanup.policy", "delete", _cleanup_policy,
                       "delete (by retention), compact (by key), or both"),
        TopicConfigDef("flush.messages", str(INT64_MAX), _integer(1, INT64_MAX),
                       "fsync after this many records; 1 fsyncs every batch"),
        TopicConfigDef("flush.ms", str(INT64_MAX), _integer(0, INT64_MAX),
                       "fsync at least this often, in ms"),
        TopicConfigDef("max.message.bytes", str(1024 * 1024 + 12), _integer(0, INT32_MAX),
                       "largest record batch the leader accepts, in bytes"),
        TopicConfigDef("compression.type", "producer", _compression_type,
                       "compression of stored batches; producer keeps what the producer sent"),
        TopicConfigDef("delete.retention.ms", str(DAY_MS), _integer(0, INT64_MAX),
                       "how long tombstones stay in a compacted topic, in ms"),
    )
}


def validate_topic_configs(configs: Mapping[str, str]) -> dict[str, str]:
    """The configs as they are stored; InvalidConfig names the first unknown or invalid one."""
    stored: dict[str, str] = {}
    for name in sorted(configs):
        definition = TOPIC_CONFIGS.get(name)
        if definition is None:
            raise InvalidConfig(
                f"unknown topic config {name!r}; known topic configs: {', '.join(sorted(TOPIC_CONFIGS))}")
        stored[name] = definition.normalise(name, configs[name])
    return stored


def effective(configs: Mapping[str, str], name: str) -> str:
    """A topic's value of one config: its own, else the default."""
    return configs.get(name, TOPIC_CONFIGS[name].default)


def unclean_leader_election_enabled(configs: Mapping[str, str]) -> bool:
    return effective(configs, "unclean.leader.election.enable") == "true"
