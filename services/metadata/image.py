"""The metadata image: an immutable view of the cluster, replaced whole on every change."""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping

from replog.zk.records import LeaderAndIsr, TopicAssignment
from replog.zk.store import BrokerRegistration, ControllerInfo


@dataclasses.dataclass(frozen=True)
class PartitionImage:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class TopicImage:
    name: str
    topic_id: str
    partitions: tuple[PartitionImage, ...]

    @classmethod
    def build(cls, name: str, assignment: TopicAssignment, states: Mapping[int, LeaderAndIsr]) -> TopicImage:
        """The topic's partitions whose state is known, in partition order."""
        return cls(name, assignment.topic_id, tuple(
            PartitionImage(p, states[p].leader, states[p].leader_epoch, assignment.replicas(p), states[p].isr)
            for p in sorted(assignment.partitions) if p in states
        ))


@dataclasses.dataclass(frozen=True)
class MetadataImage:
    version: int = 0
    cluster_id: str = ""
    brokers: tuple[BrokerRegistration, ...] = ()
    controller: ControllerInfo | None = None
    topics: Mapping[str, TopicImage] = dataclasses.field(default_factory=lambda: types.MappingProxyType({}))

    @property
    def live_broker_ids(self) -> frozenset[int]:
        return frozenset(b.broker_id for b in self.brokers)

    def with_brokers(self, brokers: dict[int, BrokerRegistration]) -> MetadataImage:
        ordered = tuple(brokers[i] for i in sorted(brokers))
        return dataclasses.replace(self, version=self.version + 1, brokers=ordered)

    def with_controller(self, controller: ControllerInfo | None) -> MetadataImage:
        return dataclasses.replace(self, version=self.version + 1, controller=controller)

    def with_topics(self, changed: Mapping[str, TopicImage | None]) -> MetadataImage:
        """Replace (or, for None, drop) the named topics."""
        topics = dict(self.topics)
        for name, topic in changed.items():
            if topic is None:
                topics.pop(name, None)
            else:
                topics[name] = topic
        ordered = {name: topics[name] for name in sorted(topics)}
        return dataclasses.replace(self, version=self.version + 1, topics=types.MappingProxyType(ordered))
