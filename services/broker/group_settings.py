"""The broker's settings for consumer groups and __consumer_offsets, under Kafka's names."""

from __future__ import annotations

from replog import config as configuration
from replog.config import Setting
from replog.core.group.assignor import ASSIGNORS
from replog.core.group.requests import GroupConfig

INT32_MAX = 2**31 - 1

GROUP_SETTINGS: tuple[Setting, ...] = (
    Setting("offsets.topic.num.partitions", configuration.integer(1, 10_000), 50,
            "partitions of __consumer_offsets, fixed when the topic is created"),
    Setting("offsets.topic.replication.factor", configuration.integer(1, 100), 3,
            "replicas of each __consumer_offsets partition (capped by the live brokers at creation)"),
    Setting("offsets.retention.minutes", configuration.integer(1, INT32_MAX), 10_080,
            "committed offsets of a group expire this long after it became empty (7 days)"),
    Setting("offsets.retention.check.interval.ms", configuration.integer(1, INT32_MAX), 600_000,
            "how often expired offsets are removed"),
    Setting("offsets.commit.timeout.ms", configuration.integer(1, INT32_MAX), 5_000,
            "longest an offset commit or group change waits to be replicated"),
    Setting("offset.metadata.max.bytes", configuration.integer(0, INT32_MAX), 4_096,
            "the largest metadata string a commit may carry"),
    Setting("group.consumer.session.timeout.ms", configuration.integer(1, INT32_MAX), 45_000,
            "a member that sends no heartbeat for this long leaves its group"),
    Setting("group.consumer.heartbeat.interval.ms", configuration.integer(1, INT32_MAX), 5_000,
            "how often members heartbeat"),
    Setting("group.consumer.max.size", configuration.integer(1, INT32_MAX), INT32_MAX,
            "the most members a group may have"),
    Setting("group.consumer.assignors", configuration.string, ",".join(ASSIGNORS),
            "the server assignors members may ask for (uniform, range); the first is the default"),
)


def group_config(config: configuration.Config) -> GroupConfig:
    assignors = tuple(name.strip() for name in config["group.consumer.assignors"].split(",") if name.strip())
    unknown = [name for name in assignors if name not in ASSIGNORS]
    if not assignors or unknown:
        raise configuration.ConfigError(
            f"group.consumer.assignors lists {', '.join(unknown) or 'nothing'}; the assignors are "
            f"{', '.join(ASSIGNORS)}")
    return GroupConfig(
        session_timeout_ms=config["group.consumer.session.timeout.ms"],
        heartbeat_interval_ms=config["group.consumer.heartbeat.interval.ms"],
        max_size=config["group.consumer.max.size"],
        assignors=assignors,
        offsets_retention_ms=config["offsets.retention.minutes"] * 60_000,
        offset_metadata_max_bytes=config["offset.metadata.max.bytes"],
    )
