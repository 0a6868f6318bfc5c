"""The client's view of the cluster: an immutable snapshot, replaced whole on every update.

Readers on any thread take `metadata.current` and never see it change under
them; only the I/O thread builds new snapshots. Leader epochs never go back
(KIP-320): an answer from a metadata replica that lags keeps the newer epoch
already known, unless the topic was re-created (its topic id changed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from replog.api.common.v1 import common_pb2
from replog.api.metadata.v1 import metadata_pb2
from replog.client.types import PartitionInfo, TopicDescription
from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition


def _empty() -> Mapping:
    return MappingProxyType({})


@dataclass(frozen=True)
class TopicError:
    error_code: ErrorCode
    message: str


@dataclass(frozen=True)
class ClusterMetadata:
    cluster_id: str = ""
    brokers: Mapping[int, str] = field(default_factory=_empty)  # broker id -> "host:port"
    racks: Mapping[int, str] = field(default_factory=_empty)  # broker id -> broker.rack, for brokers that set one
    controller_id: int = -1
    controller_address: str | None = None
    topics: Mapping[str, TopicDescription] = field(default_factory=_empty)
    # Topics the metadata service could not describe, with its reason.
    topic_errors: Mapping[str, TopicError] = field(default_factory=_empty)
    _partitions: Mapping[TopicPartition, PartitionInfo] = field(default_factory=_empty, repr=False, compare=False)
    _available: Mapping[str, tuple[int, ...]] = field(default_factory=_empty, repr=False, compare=False)

    # -- reading ---------------------------------------------------------------------------------

    def partition(self, tp: TopicPartition) -> PartitionInfo | None:
        return self._partitions.get(tp)

    def partition_count(self, topic: str) -> int | None:
        described = self.topics.get(topic)
        return len(described.partitions) if described is not None else None

    def leader_of(self, tp: TopicPartition) -> int:
        """The leader's broker id when it is known and its address too; else -1."""
        info = self._partitions.get(tp)
        if info is None or info.leader not in self.brokers:
            return -1
        return info.leader

    def leader_epoch_of(self, tp: TopicPartition) -> int:
        info = self._partitions.get(tp)
        return info.leader_epoch if info is not None else -1

    def available_partitions(self, topic: str) -> tuple[int, ...]:
        """Partitions of `topic` whose leader is a live broker."""
        return self._available.get(topic, ())

    # -- updating --------------------------------------------------------------------------------

    def with_response(self, response: metadata_pb2.MetadataResponse, *, all_topics: bool) -> ClusterMetadata:
        """The snapshot after a Metadata answer; `all_topics` when it was asked for every topic."""
        topics = {} if all_topics else dict(self.topics)
        errors = {} if all_topics else dict(self.topic_errors)
        for proto in response.topics:
            code = ErrorCode.of(proto.error_code)
            if code is ErrorCode.NONE:
                topics[proto.name] = _newest(topics.get(proto.name), topic_from_proto(proto))
                errors.pop(proto.name, None)
            else:
                topics.pop(proto.name, None)
                errors[proto.name] = TopicError(code, proto.error_message)
        controller = response.controller if response.HasField("controller") else None
        return _build(
            cluster_id=response.cluster_id,
            brokers={b.broker_id: f"{b.host}:{b.port}" for b in response.brokers},
            racks={b.broker_id: b.rack for b in response.brokers if b.rack},
            controller_id=response.controller_id,
            controller_address=f"{controller.host}:{controller.port}" if controller is not None else None,
            topics=topics,
            topic_errors=errors,
        )

    def with_leader_hint(
        self, tp: TopicPartition, leader_id: int, leader_epoch: int, endpoints: Iterable[common_pb2.BrokerEndpoint]
    ) -> ClusterMetadata:
        """Take a broker's word for a newer leader (KIP-951), saving a metadata round trip."""
        known = self._partitions.get(tp)
        if known is None or leader_id < 0 or leader_epoch <= known.leader_epoch:
            return self
        brokers, racks = dict(self.brokers), dict(self.racks)
        brokers.update({e.broker_id: f"{e.host}:{e.port}" for e in endpoints})
        racks.update({e.broker_id: e.rack for e in endpoints if e.rack})
        if leader_id not in brokers:
            return self
        described = self.topics[tp.topic]
        partitions = tuple(
            replace(p, leader=leader_id, leader_epoch=leader_epoch) if p.partition == tp.partition else p
            for p in described.partitions
        )
        topics = dict(self.topics)
        topics[tp.topic] = replace(described, partitions=partitions)
        return _build(
            cluster_id=self.cluster_id,
            brokers=brokers,
            racks=racks,
            controller_id=self.controller_id,
            controller_address=self.controller_address,
            topics=topics,
            topic_errors=self.topic_errors,
        )


def _build(**fields) -> ClusterMetadata:
    topics = fields["topics"]
    brokers = fields["brokers"]
    partitions = {
        TopicPartition(name, p.partition): p for name, described in topics.items() for p in described.partitions
    }
    available = {
        name: tuple(p.partition for p in described.partitions if p.leader in brokers)
        for name, described in topics.items()
    }
    return ClusterMetadata(
        cluster_id=fields["cluster_id"],
        brokers=MappingProxyType(dict(brokers)),
        racks=MappingProxyType(dict(fields["racks"])),
        controller_id=fields["controller_id"],
        controller_address=fields["controller_address"],
        topics=MappingProxyType(dict(topics)),
        topic_errors=MappingProxyType(dict(fields["topic_errors"])),
        _partitions=MappingProxyType(partitions),
        _available=MappingProxyType(available),
    )


def _newest(known: TopicDescription | None, fresh: TopicDescription) -> TopicDescription:
    """Keep partitions whose known leader epoch is newer than the fresh answer's."""
    if known is None or known.topic_id != fresh.topic_id:
        return fresh
    old = {p.partition: p for p in known.partitions}
    partitions = tuple(
        old[p.partition] if p.partition in old and old[p.partition].leader_epoch > p.leader_epoch else p
        for p in fresh.partitions
    )
    return replace(fresh, partitions=partitions)


def topic_from_proto(proto: metadata_pb2.TopicMetadata) -> TopicDescription:
    partitions = tuple(
        PartitionInfo(
            partition=p.partition,
            leader=p.leader,
            leader_epoch=p.leader_epoch,
            replicas=tuple(p.replicas),
            isr=tuple(p.isr),
            offline_replicas=tuple(p.offline_replicas),
        )
        for p in sorted(proto.partitions, key=lambda p: p.partition)
    )
    return TopicDescription(name=proto.name, topic_id=proto.topic_id, is_internal=proto.is_internal,
                            partitions=partitions)
