"""Which partition of `__consumer_offsets` a group's coordinator leads: where Kafka would put it
(offsets.topic.num.partitions, by the group id's Java hash; see key_placement)."""

from ..key_placement import java_abs, java_string_hash, partition_for

OFFSETS_TOPIC = "__consumer_offsets"

__all__ = ["OFFSETS_TOPIC", "java_abs", "java_string_hash", "partition_for"]
