"""The JSON values of the topic znodes (DESIGN §7), as plain immutable data.

This module is pure (stdlib and replog.core only): the conversions between a
partition state znode and the core's `PartitionState` live here, next to the
record. The shapes follow Kafka's
ZooKeeper-era znodes, with the partition epoch added to the state:

    /brokers/topics/<topic>                       TopicAssignment
        {"version": 3, "topic_id": "...", "partitions": {"0": [1, 2, 3]},
         "adding_replicas": {}, "removing_replicas": {}}
    /brokers/topics/<topic>/partitions/<p>/state  LeaderAndIsr
        {"version": 1, "leader": 1, "leader_epoch": 0, "isr": [1, 2, 3],
         "controller_epoch": 4, "partition_epoch": 0}
    /config/topics/<topic>                        topic configs
        {"version": 1, "config": {"min.insync.replicas": "2"}}
    /partition_state_notification                 StateChanges
        {"version": 1, "partitions": {"orders": {"0": {"leader": 2, ...}}}}
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from replog.core.messages import PartitionState
from replog.core.topic_partition import TopicPartition

NO_LEADER = -1

TOPIC_VERSION = 3
PARTITION_STATE_VERSION = 1
TOPIC_CONFIG_VERSION = 1
STATE_CHANGES_VERSION = 1


class RecordError(ValueError):
    """A znode holds something that is not the JSON replog writes there."""


@dataclasses.dataclass(frozen=True)
class TopicAssignment:
    """A topic's id and the replicas of each partition (preferred leader first)."""

    topic_id: str
    partitions: Mapping[int, tuple[int, ...]]
    adding_replicas: Mapping[int, tuple[int, ...]] = dataclasses.field(default_factory=dict)
    removing_replicas: Mapping[int, tuple[int, ...]] = dataclasses.field(default_factory=dict)

    def replicas(self, partition: int) -> tuple[int, ...]:
        return self.partitions[partition]

    def to_json(self) -> bytes:
        return _dump({
            "version": TOPIC_VERSION,
            "topic_id": self.topic_id,
            "partitions": _replica_map_to_json(self.partitions),
            "adding_replicas": _replica_map_to_json(self.adding_replicas),
            "removing_replicas": _replica_map_to_json(self.removing_replicas),
        })

    @classmethod
    def from_json(cls, data: bytes) -> TopicAssignment:
        fields = _load(data, "topic")
        try:
            return cls(
                topic_id=str(fields["topic_id"]),
                partitions=_replica_map_from_json(fields["partitions"]),
                adding_replicas=_replica_map_from_json(fields.get("adding_replicas", {})),
                removing_replicas=_replica_map_from_json(fields.get("removing_replicas", {})),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise RecordError(f"topic znode is malformed: {error!r}") from None


@dataclasses.dataclass(frozen=True)
class LeaderAndIsr:
    """Leadership of one partition, as the controller decided it.

    The partition epoch grows by one with every change of this state (leader,
    ISR); AlterPartition requests must name the current one.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    partition_epoch: int

    @property
    def has_leader(self) -> bool:
        return self.leader != NO_LEADER

    def to_core(self, replicas: Sequence[int]) -> PartitionState:
        """The state as the core's rules take it, with the replicas the topic znode lists."""
        return PartitionState(leader=self.leader, leader_epoch=self.leader_epoch, isr=tuple(self.isr),
                              partition_epoch=self.partition_epoch, replicas=tuple(replicas))

    @classmethod
    def from_core(cls, state: PartitionState, controller_epoch: int) -> LeaderAndIsr:
        """The record of a state the controller of `controller_epoch` decided (its replicas go to the
        topic znode)."""
        return cls(leader=state.leader, leader_epoch=state.leader_epoch, isr=tuple(state.isr),
                   controller_epoch=controller_epoch, partition_epoch=state.partition_epoch)

    def to_json(self) -> bytes:
        return _dump({"version": PARTITION_STATE_VERSION, **_state_fields(self)})

    @classmethod
    def from_json(cls, data: bytes) -> LeaderAndIsr:
        fields = _load(data, "partition state")
        try:
            return _state_from_fields(fields)
        except (KeyError, TypeError, ValueError) as error:
            raise RecordError(f"partition state znode is malformed: {error!r}") from None


def _state_fields(state: LeaderAndIsr) -> dict[str, Any]:
    return {"leader": state.leader, "leader_epoch": state.leader_epoch, "isr": list(state.isr),
            "controller_epoch": state.controller_epoch, "partition_epoch": state.partition_epoch}


def _state_from_fields(fields: Mapping[str, Any]) -> LeaderAndIsr:
    return LeaderAndIsr(
        leader=int(fields["leader"]),
        leader_epoch=int(fields["leader_epoch"]),
        isr=tuple(int(b) for b in fields["isr"]),
        controller_epoch=int(fields["controller_epoch"]),
        partition_epoch=int(fields.get("partition_epoch", 0)),
    )


@dataclasses.dataclass(frozen=True)
class StateChanges:
    """The partition states one controller write set, as /partition_state_notification carries them.

    Written in the same multi as the states themselves, so a reader learns a whole
    batch from one znode instead of from a watch per state.
    """

    states: Mapping[TopicPartition, LeaderAndIsr]

    def to_json(self) -> bytes:
        topics: dict[str, dict[str, Any]] = {}
        for partition, state in self.states.items():
            topics.setdefault(partition.topic, {})[str(partition.partition)] = _state_fields(state)
        return _dump({"version": STATE_CHANGES_VERSION, "partitions": topics})

    @classmethod
    def from_json(cls, data: bytes) -> StateChanges:
        fields = _load(data, "partition state notification")
        try:
            return cls({TopicPartition(topic, int(p)): _state_from_fields(state)
                        for topic, partitions in dict(fields.get("partitions", {})).items()
                        for p, state in dict(partitions).items()})
        except (KeyError, TypeError, ValueError) as error:
            raise RecordError(f"partition state notification is malformed: {error!r}") from None


def topic_config_to_json(config: Mapping[str, str]) -> bytes:
    return _dump({"version": TOPIC_CONFIG_VERSION, "config": dict(sorted(config.items()))})


def topic_config_from_json(data: bytes) -> dict[str, str]:
    fields = _load(data, "topic config")
    config = fields.get("config", {})
    if not isinstance(config, dict):
        raise RecordError("topic config znode is malformed: 'config' is not an object")
    return {str(k): str(v) for k, v in config.items()}


def _replica_map_to_json(replicas: Mapping[int, tuple[int, ...]]) -> dict[str, list[int]]:
    return {str(p): list(replicas[p]) for p in sorted(replicas)}


def _replica_map_from_json(value: Any) -> dict[int, tuple[int, ...]]:
    return {int(p): tuple(int(b) for b in brokers) for p, brokers in dict(value).items()}


def _dump(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _load(data: bytes, what: str) -> dict[str, Any]:
    try:
        fields = json.loads(data)
    except (ValueError, TypeError) as error:
        raise RecordError(f"{what} znode is not JSON: {error}") from None
    if not isinstance(fields, dict):
        raise RecordError(f"{what} znode is not a JSON object")
    return fields
