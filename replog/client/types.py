"""The values the client hands out and takes in."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from replog.core.topic_partition import TopicPartition

Headers = tuple[tuple[str, "bytes | None"], ...]


class RecordMetadata(NamedTuple):
    """Where an acknowledged record landed. offset is -1 with acks=0."""

    topic: str
    partition: int
    offset: int
    timestamp: int  # ms since the Unix epoch (the batch's create time, or the broker's LogAppendTime)


class ConsumerRecord(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int  # ms since the Unix epoch
    key: bytes | None
    value: bytes | None
    headers: Headers
    leader_epoch: int  # the epoch of the leader that appended it (-1 when unknown)


@dataclass(frozen=True)
class NewTopic:
    """A topic to create: num_partitions and replication_factor, or replica_assignment.

    replica_assignment maps each partition to its replicas, preferred leader
    first ({0: [1, 2], 1: [2, 3]}); -1 for the counts takes the cluster defaults.
    """

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    replica_assignment: dict[int, list[int]] | None = None
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CreatedTopic:
    name: str
    topic_id: str
    num_partitions: int
    replication_factor: int


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int  # broker id, -1 when none
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()


@dataclass(frozen=True)
class TopicDescription:
    name: str
    topic_id: str
    is_internal: bool
    partitions: tuple[PartitionInfo, ...]
