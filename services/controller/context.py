"""The active controller's view of the cluster, loaded from ZooKeeper when it takes over.

Only the controller writes topic state, so after the initial load this view
changes only through the driver, right after each successful ZooKeeper write.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from replog.controller.topic_configs import unclean_leader_election_enabled
from replog.zk.records import TopicAssignment, TopicPartition
from replog.zk.store import BrokerRegistration, ControllerLease, TopicSnapshot, VersionedState


@dataclasses.dataclass
class ControllerContext:
    lease: ControllerLease
    brokers: dict[int, BrokerRegistration]  # live brokers
    assignments: dict[str, TopicAssignment] = dataclasses.field(default_factory=dict)
    configs: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    states: dict[TopicPartition, VersionedState] = dataclasses.field(default_factory=dict)

    @property
    def controller_epoch(self) -> int:
        return self.lease.epoch

    def add_topic(self, snapshot: TopicSnapshot) -> None:
        self.assignments[snapshot.name] = snapshot.assignment
        self.configs[snapshot.name] = dict(snapshot.config)
        for partition, state in snapshot.states.items():
            self.states[TopicPartition(snapshot.name, partition)] = state

    def partitions(self) -> Iterator[TopicPartition]:
        """Every partition that has a state, in topic and partition order."""
        return iter(sorted(self.states))

    def replicas(self, partition: TopicPartition) -> tuple[int, ...]:
        return self.assignments[partition.topic].replicas(partition.partition)

    def topic_id(self, topic: str) -> str:
        return self.assignments[topic].topic_id

    def unclean_allowed(self, topic: str) -> bool:
        return unclean_leader_election_enabled(self.configs.get(topic, {}))

    def hosted_by(self, broker_id: int) -> list[TopicPartition]:
        return [tp for tp in self.partitions() if broker_id in self.replicas(tp)]

    def offline_count(self) -> int:
        return sum(1 for v in self.states.values() if not v.state.has_leader or v.state.leader not in self.brokers)

    def racks(self) -> dict[int, str | None]:
        return {b: r.rack for b, r in self.brokers.items()}
