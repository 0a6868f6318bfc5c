"""BrokerService messages <-> core types: the one place where the broker's protobuf meets the core.

Regions: the requests the active controller builds for brokers (LeaderAndIsr,
UpdateMetadata, StopReplica, and the endpoints they carry), from the
controller's records of partition states and broker registrations.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple, Protocol

from replog.api.broker.v1 import broker_pb2
from replog.api.common.v1 import common_pb2
from replog.core.topic_partition import TopicPartition
from replog.zk.records import LeaderAndIsr

# -- controller -> broker requests, as the controller builds them -----------------------------------

# StopReplica's leader epoch for a topic being deleted: the broker stops whatever epoch it has.
DELETION_LEADER_EPOCH = -2


class Registration(Protocol):
    """Where a live broker listens, as its registration says."""

    broker_id: int
    host: str
    port: int
    rack: str | None


class ControllerHeader(NamedTuple):
    """What every controller request carries: who sends it, fenced by the controller epoch, for which
    incarnation of the broker (its broker epoch)."""

    controller_id: int
    controller_epoch: int
    broker_epoch: int


def broker_endpoint(registration: Registration) -> common_pb2.BrokerEndpoint:
    return common_pb2.BrokerEndpoint(broker_id=registration.broker_id, host=registration.host,
                                     port=registration.port, rack=registration.rack or "")


def leader_and_isr_state(
    partition: TopicPartition, topic_id: str, state: LeaderAndIsr, replicas: Sequence[int], *, is_new: bool,
    adding: Sequence[int] = (), removing: Sequence[int] = (),
) -> broker_pb2.LeaderAndIsrPartitionState:
    return broker_pb2.LeaderAndIsrPartitionState(
        topic=partition.topic, topic_id=topic_id, partition=partition.partition,
        controller_epoch=state.controller_epoch, leader=state.leader, leader_epoch=state.leader_epoch,
        isr=state.isr, partition_epoch=state.partition_epoch, replicas=replicas, is_new=is_new,
        adding_replicas=adding, removing_replicas=removing,
    )


def update_metadata_state(
    partition: TopicPartition, topic_id: str, state: LeaderAndIsr, replicas: Sequence[int],
    live: Iterable[int],
) -> broker_pb2.UpdateMetadataPartitionState:
    alive = set(live)
    return broker_pb2.UpdateMetadataPartitionState(
        topic=partition.topic, topic_id=topic_id, partition=partition.partition,
        controller_epoch=state.controller_epoch, leader=state.leader, leader_epoch=state.leader_epoch,
        isr=state.isr, partition_epoch=state.partition_epoch, replicas=replicas,
        offline_replicas=[b for b in replicas if b not in alive],
    )


def stop_replica_partition(
    partition: TopicPartition, *, delete: bool, leader_epoch: int = DELETION_LEADER_EPOCH
) -> broker_pb2.StopReplicaPartition:
    return broker_pb2.StopReplicaPartition(topic=partition.topic, partition=partition.partition,
                                           leader_epoch=leader_epoch, delete_partition=delete)


def leader_and_isr_request(
    header: ControllerHeader, states: Iterable[broker_pb2.LeaderAndIsrPartitionState],
    live_leaders: Iterable[common_pb2.BrokerEndpoint],
) -> broker_pb2.LeaderAndIsrRequest:
    return broker_pb2.LeaderAndIsrRequest(**header._asdict(), partition_states=list(states),
                                          live_leaders=list(live_leaders))


def update_metadata_request(
    header: ControllerHeader, states: Iterable[broker_pb2.UpdateMetadataPartitionState],
    live_brokers: Iterable[common_pb2.BrokerEndpoint],
) -> broker_pb2.UpdateMetadataRequest:
    return broker_pb2.UpdateMetadataRequest(**header._asdict(), partition_states=list(states),
                                            live_brokers=list(live_brokers))


def stop_replica_request(
    header: ControllerHeader, partitions: Iterable[broker_pb2.StopReplicaPartition]
) -> broker_pb2.StopReplicaRequest:
    return broker_pb2.StopReplicaRequest(**header._asdict(), partitions=list(partitions))
