"""The simulated RPCs: each request carries the id its answer comes back with."""

from dataclasses import dataclass
from replog.core.messages import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    CompleteProduce,
    FetchRequest,
    FetchResponse,
    PartitionState,
    ProduceRequest,
)

CONTROLLER = "controller"


@dataclass(frozen=True)
class Fetch:
    fetch_id: int
    request: FetchRequest


@dataclass(frozen=True)
class FetchReply:
    fetch_id: int
    response: FetchResponse


@dataclass(frozen=True)
class Produce:
    request: ProduceRequest


@dataclass(frozen=True)
class ProduceReply:
    completion: CompleteProduce


@dataclass(frozen=True)
class AlterPartition:
    proposal_id: int
    request: AlterPartitionRequest


@dataclass(frozen=True)
class AlterPartitionReply:
    proposal_id: int
    response: AlterPartitionResponse


@dataclass(frozen=True)
class LeaderAndIsr:
    """Fenced by the receiver's broker epoch, as Kafka's LeaderAndIsr request is."""

    state: PartitionState
    broker_epoch: int
