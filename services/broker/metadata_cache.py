"""Which partitions exist, as the controller's UpdateMetadata and LeaderAndIsr requests told this broker.

A request for a partition this broker does not host is answered
NOT_LEADER_OR_FOLLOWER when the partition exists (the client's metadata is
stale: it refreshes and goes to the leader) and UNKNOWN_TOPIC_OR_PARTITION when
it does not (Kafka's MetadataCache draws the same line). Both are retriable: a
partition created a moment ago may not have reached this broker yet.
"""

from __future__ import annotations

from collections.abc import Iterable

from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition


class MetadataCache:
    def __init__(self) -> None:
        self._partitions: set[TopicPartition] = set()

    def learn(self, partitions: Iterable[TopicPartition]) -> None:
        self._partitions.update(partitions)

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        self._partitions.difference_update(partitions)

    def __contains__(self, key: TopicPartition) -> bool:
        return key in self._partitions

    def not_hosted(self, key: TopicPartition) -> ErrorCode:
        """The error for a request about a partition this broker has no replica of."""
        return ErrorCode.NOT_LEADER_OR_FOLLOWER if key in self._partitions else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
