"""What this broker knows of the cluster from the controller's UpdateMetadata and LeaderAndIsr requests:
which partitions exist, who leads each, and where the live brokers listen.

A request for a partition this broker does not host is answered
NOT_LEADER_OR_FOLLOWER when the partition exists (the client's metadata is
stale: it refreshes and goes to the leader) and UNKNOWN_TOPIC_OR_PARTITION when
it does not (Kafka's MetadataCache draws the same line). Both are retriable: a
partition created a moment ago may not have reached this broker yet. The group
coordinator finds a group's coordinator and the topics a subscription may name
here too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from replog.core.errors import ErrorCode
from replog.core.messages import NO_LEADER, BrokerEndpoint
from replog.core.topic_partition import TopicPartition


class MetadataCache:
    def __init__(self) -> None:
        self._leaders: dict[TopicPartition, int] = {}
        self._partition_counts: dict[str, int] = {}
        self.brokers: dict[int, BrokerEndpoint] = {}

    def learn(self, partitions: Iterable[tuple[TopicPartition, int]]) -> None:
        """Partitions that exist, each with its leader (NO_LEADER while it has none)."""
        for tp, leader in partitions:
            self._leaders[tp] = leader
            self._partition_counts[tp.topic] = max(self._partition_counts.get(tp.topic, 0), tp.partition + 1)

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        """Partitions of a topic being deleted."""
        for tp in partitions:
            self._leaders.pop(tp, None)
            self._partition_counts.pop(tp.topic, None)

    def set_brokers(self, endpoints: Iterable[BrokerEndpoint]) -> None:
        """Every live broker (UpdateMetadata)."""
        self.brokers = {endpoint.broker_id: endpoint for endpoint in endpoints}

    def add_brokers(self, endpoints: Iterable[BrokerEndpoint]) -> None:
        """Some live brokers (LeaderAndIsr names the leaders it mentions)."""
        for endpoint in endpoints:
            self.brokers[endpoint.broker_id] = endpoint

    def address_of(self, broker_id: int) -> str | None:
        endpoint = self.brokers.get(broker_id)
        return endpoint.address if endpoint is not None else None

    def __contains__(self, key: TopicPartition) -> bool:
        return key in self._leaders

    def leader_of(self, key: TopicPartition) -> BrokerEndpoint | None:
        """The live broker leading the partition, if there is one and it is known."""
        leader = self._leaders.get(key, NO_LEADER)
        return self.brokers.get(leader) if leader != NO_LEADER else None

    def topic_exists(self, topic: str) -> bool:
        return topic in self._partition_counts

    @property
    def partition_counts(self) -> Mapping[str, int]:
        """Every topic and its partition count: the topics image the group coordinator resolves
        subscriptions against."""
        return self._partition_counts

    def not_hosted(self, key: TopicPartition) -> ErrorCode:
        """The error for a request about a partition this broker has no replica of."""
        return ErrorCode.NOT_LEADER_OR_FOLLOWER if key in self._leaders else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
