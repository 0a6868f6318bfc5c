"""LogConfig: Kafka's topic config names, defaults and checks."""

import pytest

from replog.storage import LogConfig, LogConfigError


def test_defaults_are_kafkas():
    config = LogConfig()
    assert config.segment_bytes == 1 << 30
    assert config.segment_ms == config.retention_ms == 7 * 24 * 3_600_000
    assert (config.retention_bytes, config.cleanup_policy) == (-1, "delete")
    assert (config.max_message_bytes, config.index_interval_bytes) == (1_048_588, 4096)
    assert config.flush_messages == config.flush_ms == 2**63 - 1
    assert (config.message_timestamp_type, config.log_append_time) == ("CreateTime", False)
    assert config.message_timestamp_before_max_ms == 2**63 - 1  # Kafka 4's defaults (KIP-937, KIP-1030)
    assert config.message_timestamp_after_max_ms == 3_600_000


def test_topic_configs_map_by_kafka_name():
    config = LogConfig.from_topic_config(
        {
            "segment.bytes": "1048576",
            "retention.ms": "-1",
            "cleanup.policy": "delete,compact",
            "flush.messages": 1,
            "min.insync.replicas": "2",  # a replication config: not the log's business
            "message.timestamp.type": " LogAppendTime",
            "message.timestamp.before.max.ms": "86400000",
        }
    )
    assert (config.segment_bytes, config.retention_ms, config.flush_messages) == (1 << 20, -1, 1)
    assert config.log_append_time and config.message_timestamp_before_max_ms == 86_400_000
    assert config.cleanup_policy == "compact,delete" and config.compacts and config.deletes


@pytest.mark.parametrize(
    "configs, named",
    [
        ({"segment.bytes": "10"}, "segment.bytes"),
        ({"retention.ms": "-2"}, "retention.ms"),
        ({"cleanup.policy": "archive"}, "cleanup.policy"),
        ({"flush.ms": "soon"}, "flush.ms"),
        ({"message.timestamp.type": "logappendtime"}, "message.timestamp.type 'logappendtime' is not one of "
                                                      "CreateTime, LogAppendTime"),
        ({"message.timestamp.after.max.ms": "-1"}, "message.timestamp.after.max.ms"),
    ],
)
def test_bad_values_name_the_config(configs, named):
    with pytest.raises(LogConfigError, match=named):
        LogConfig.from_topic_config(configs)
