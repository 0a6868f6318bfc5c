"""The active controller's view of the cluster, loaded from ZooKeeper when it takes over.

Only the controller writes topic state, so after the initial load this view
changes only through the driver, right after each successful ZooKeeper write.
The core's rules see it through `image()` (the live brokers) and
`partition_state()` (one partition's state with its replicas).

A topic marked for deletion leaves `assignments`, `configs` and `states` and
waits in `deleting` until its replicas are gone: nothing elects leaders for it,
and no broker is told to host it again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from replog.core.cluster_image import ClusterImage
from replog.core.errors import ErrorCode
from replog.core.messages import PartitionState
from replog.core.outcome import Rejection
from replog.core.partition_change import PartitionChange
from replog.core.topic_configs import unclean_leader_election_enabled
from replog.core.topic_partition import TopicPartition
from replog.zk.records import LeaderAndIsr, TopicAssignment
from replog.zk.store import BrokerRegistration, ControllerLease, StateWrite, TopicSnapshot, VersionedState


@dataclasses.dataclass
class ControllerContext:
    lease: ControllerLease
    brokers: dict[int, BrokerRegistration]  # live brokers
    assignments: dict[str, TopicAssignment] = dataclasses.field(default_factory=dict)
    assignment_versions: dict[str, int] = dataclasses.field(default_factory=dict)  # of each topic znode
    configs: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    states: dict[TopicPartition, VersionedState] = dataclasses.field(default_factory=dict)
    deleting: dict[str, TopicAssignment] = dataclasses.field(default_factory=dict)  # marked for deletion
    # Brokers in controlled shutdown, with the broker epoch that asked: never elected or added to an ISR.
    shutting_down: dict[int, int] = dataclasses.field(default_factory=dict)

    @property
    def controller_epoch(self) -> int:
        return self.lease.epoch

    def add_topic(self, snapshot: TopicSnapshot) -> None:
        self.assignments[snapshot.name] = snapshot.assignment
        self.assignment_versions[snapshot.name] = snapshot.assignment_zk_version
        self.configs[snapshot.name] = dict(snapshot.config)
        for partition, state in snapshot.states.items():
            self.states[TopicPartition(snapshot.name, partition)] = state

    def mark_deleting(self, topic: str) -> None:
        """The topic is marked for deletion: it leaves the view and waits in `deleting`."""
        self.deleting[topic] = self.assignments.pop(topic)
        self.assignment_versions.pop(topic, None)
        self.configs.pop(topic, None)
        for partition in partitions_of(topic, self.deleting[topic]):
            self.states.pop(partition, None)

    def topic_names(self) -> set[str]:
        """Every topic name taken, including those being deleted."""
        return self.assignments.keys() | self.deleting.keys()

    def partitions(self) -> Iterator[TopicPartition]:
        """Every partition that has a state, in topic and partition order."""
        return iter(sorted(self.states))

    def topic_partitions(self, topic: str) -> list[TopicPartition]:
        return [tp for tp in partitions_of(topic, self.assignments[topic]) if tp in self.states]

    def replicas(self, partition: TopicPartition) -> tuple[int, ...]:
        return self.assignments[partition.topic].replicas(partition.partition)

    def partition_state(self, partition: TopicPartition) -> PartitionState:
        """The partition's state as the core's rules take it."""
        return self.states[partition].state.to_core(self.replicas(partition))

    def state_write(self, change: PartitionChange) -> StateWrite:
        """The write of a change's new state, on condition that its znode is still the version this view read."""
        return StateWrite(change.partition, LeaderAndIsr.from_core(change.after, self.controller_epoch),
                          self.states[change.partition].zk_version)

    def written(self, write: StateWrite, zk_version: int) -> None:
        """A state write went through: the view takes it."""
        self.states[write.partition] = VersionedState(write.state, zk_version)

    def adding(self, partition: TopicPartition) -> tuple[int, ...]:
        return self.assignments[partition.topic].adding_replicas.get(partition.partition, ())

    def removing(self, partition: TopicPartition) -> tuple[int, ...]:
        return self.assignments[partition.topic].removing_replicas.get(partition.partition, ())

    def reassigning(self) -> list[TopicPartition]:
        """Partitions with a reassignment in progress."""
        return sorted(TopicPartition(topic, p) for topic, assignment in self.assignments.items()
                      for p in assignment.adding_replicas.keys() | assignment.removing_replicas.keys())

    def topic_id(self, topic: str) -> str:
        return self.assignments[topic].topic_id

    def unclean_allowed(self, topic: str) -> bool:
        return unclean_leader_election_enabled(self.configs.get(topic, {}))

    def hosted_by(self, broker_id: int) -> list[TopicPartition]:
        return [tp for tp in self.partitions() if broker_id in self.replicas(tp)]

    def offline_count(self) -> int:
        return sum(1 for v in self.states.values() if not v.state.has_leader or v.state.leader not in self.brokers)

    def offline_replicas(self) -> dict[int, int]:
        """Per broker that is registered or holds replicas: the replicas it holds while not registered."""
        offline = dict.fromkeys(self.brokers, 0)
        for partition in self.partitions():
            for broker_id in self.replicas(partition):
                if broker_id not in self.brokers:
                    offline[broker_id] = offline.get(broker_id, 0) + 1
        return offline

    def stale_broker_epoch(self, broker_id: int, broker_epoch: int) -> Rejection | None:
        """STALE_BROKER_EPOCH when a broker's request names an epoch older than its registration,
        or the broker is not live: the request comes from an earlier incarnation."""
        registration = self.brokers.get(broker_id)
        if registration is not None and broker_epoch >= registration.broker_epoch:
            return None
        known = registration.broker_epoch if registration else "none: not registered"
        return Rejection(ErrorCode.STALE_BROKER_EPOCH,
                         f"broker {broker_id}'s epoch {broker_epoch} is not its current one ({known})")

    def image(self) -> ClusterImage:
        """The live brokers, their epochs and racks, and those shutting down: what the core's rules decide over."""
        return ClusterImage(broker_epochs={b: r.broker_epoch for b, r in self.brokers.items()},
                            racks={b: r.rack for b, r in self.brokers.items() if r.rack},
                            shutting_down=self.shutting_down.keys())


def partitions_of(topic: str, assignment: TopicAssignment) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in sorted(assignment.partitions)]
