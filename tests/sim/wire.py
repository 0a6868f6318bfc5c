"""The simulated RPCs: each request carries the id its answer comes back with.

A request also names the incarnation of the process that sent it (`caller`),
and its answer goes back to that incarnation only, as an RPC answer returns on
the caller's own connection: a restarted broker never sees answers meant for
its previous life (whose fetch and proposal ids it reuses).
"""

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
    caller: int = 0


@dataclass(frozen=True)
class FetchReply:
    fetch_id: int
    response: FetchResponse
    caller: int = 0


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
    caller: int = 0


@dataclass(frozen=True)
class AlterPartitionReply:
    proposal_id: int
    response: AlterPartitionResponse
    caller: int = 0


@dataclass(frozen=True)
class LeaderAndIsr:
    """Fenced by the receiver's broker epoch, as Kafka's LeaderAndIsr request is."""

    state: PartitionState
    broker_epoch: int
