"""The table of topic configs: Kafka's names and defaults, the log's own checks, AlterConfigs' operations."""

import pytest

from replog.core.log_config import LogConfig
from replog.core.topic_configs import (
    TOPIC_CONFIG_DEFAULTS,
    ConfigChange,
    ConfigOp,
    InvalidConfig,
    apply_config_changes,
    validate_topic_configs,
)


def test_topic_configs_are_stored_normalised():
    assert validate_topic_configs({"cleanup.policy": "delete, compact", "unclean.leader.election.enable": "TRUE",
                                   "compression.type": "ZSTD", "retention.ms": " -1 "}) == {
        "cleanup.policy": "compact,delete", "unclean.leader.election.enable": "true",
        "compression.type": "zstd", "retention.ms": "-1"}
    with pytest.raises(InvalidConfig, match="segment.bytes"):
        validate_topic_configs({"segment.bytes": "13"})
    assert {"min.insync.replicas", "unclean.leader.election.enable", "delete.retention.ms"} <= TOPIC_CONFIG_DEFAULTS.keys()


def test_the_log_configs_and_their_defaults_are_the_logs_own():
    assert TOPIC_CONFIG_DEFAULTS["segment.bytes"] == str(LogConfig().segment_bytes)
    assert TOPIC_CONFIG_DEFAULTS["retention.ms"] == str(LogConfig().retention_ms)
    assert LogConfig.from_topic_config(TOPIC_CONFIG_DEFAULTS) == LogConfig()


def test_alter_configs_sets_deletes_appends_and_subtracts_then_checks_the_result():
    current = {"retention.ms": "1000", "min.insync.replicas": "2"}
    changed = apply_config_changes(current, [
        ConfigChange("retention.ms", ConfigOp.DELETE),
        ConfigChange("min.insync.replicas", ConfigOp.SET, "3"),
        ConfigChange("cleanup.policy", ConfigOp.APPEND, "compact"),
    ])
    assert changed == {"min.insync.replicas": "3", "cleanup.policy": "compact,delete"}
    assert apply_config_changes(changed, [ConfigChange("cleanup.policy", ConfigOp.SUBTRACT, "delete")]) == {
        "min.insync.replicas": "3", "cleanup.policy": "compact"}


@pytest.mark.parametrize("changes, words", [
    ([ConfigChange("retention.days", ConfigOp.SET, "7")], "retention.days"),
    ([ConfigChange("segment.bytes", ConfigOp.SET, "12")], "segment.bytes"),
    ([ConfigChange("retention.ms", ConfigOp.APPEND, "5")], "not a list"),
    ([ConfigChange("cleanup.policy", ConfigOp.SUBTRACT, "delete")], "cleanup.policy"),
    ([ConfigChange("retention.ms", ConfigOp.SET)], "needs a value"),
    ([ConfigChange("retention.ms", ConfigOp.SET, "1"), ConfigChange("retention.ms", ConfigOp.DELETE)], "once"),
])
def test_a_bad_config_change_is_refused_with_one_sentence(changes, words):
    with pytest.raises(InvalidConfig, match=words):
        apply_config_changes({}, changes)
