"""The simulated RPCs: each request carries the id its answer comes back with.

A request also names the incarnation of the process that sent it (`caller`),
and its answer goes back to that incarnation only, as an RPC answer returns on
the caller's own connection: a restarted broker never sees answers meant for
its previous life (whose fetch and proposal ids it reuses). Messages about one
partition name it (`partition`, 0 in a one-partition run).
"""

from dataclasses import dataclass
from typing import Any

from replog.core.messages import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    CompleteProduce,
    FetchRequest,
    FetchResponse,
    PartitionState,
    ProduceRequest,
)
from replog.core.txn.aborted import AbortedTxn
from replog.core.txn.requests import AddPartitionsRequest, AddPartitionsResponse

CONTROLLER = "controller"
TXN_COORDINATOR = "txn-coordinator"


@dataclass(frozen=True)
class Fetch:
    fetch_id: int
    request: FetchRequest
    caller: int = 0
    partition: int = 0


@dataclass(frozen=True)
class FetchReply:
    fetch_id: int
    response: FetchResponse
    caller: int = 0
    partition: int = 0
    # For a consumer: the partition's last stable offset, and (read_committed) the aborted
    # transactions overlapping what was read.
    last_stable_offset: int = -1
    aborted: tuple[AbortedTxn, ...] = ()


@dataclass(frozen=True)
class Produce:
    """A produce request, or (its `request.marker` set) WriteTxnMarkers for one partition."""

    request: ProduceRequest
    partition: int = 0
    transactional_id: str | None = None


@dataclass(frozen=True)
class ProduceReply:
    completion: CompleteProduce
    partition: int = 0


@dataclass(frozen=True)
class AlterPartition:
    proposal_id: int
    request: AlterPartitionRequest
    caller: int = 0
    partition: int = 0


@dataclass(frozen=True)
class AlterPartitionReply:
    proposal_id: int
    response: AlterPartitionResponse
    caller: int = 0
    partition: int = 0


@dataclass(frozen=True)
class LeaderAndIsr:
    """Fenced by the receiver's broker epoch, as Kafka's LeaderAndIsr request is."""

    state: PartitionState
    broker_epoch: int
    partition: int = 0


@dataclass(frozen=True)
class UpdateMetadata:
    """The live brokers, to every live broker; fenced by the receiver's broker epoch as LeaderAndIsr is."""

    live_brokers: frozenset[int]
    broker_epoch: int


@dataclass(frozen=True)
class VerifyTxn:
    """A partition leader asks the transaction coordinator (AddPartitionsToTxn, verify-only, KIP-890), or, for a
    producer on transactions v2, has it add the partition (KIP-890 part 2)."""

    question_id: int
    request: AddPartitionsRequest
    caller: int = 0


@dataclass(frozen=True)
class VerifyTxnReply:
    question_id: int
    response: AddPartitionsResponse
    caller: int = 0


@dataclass(frozen=True)
class TxnCall:
    """A producer's call to the transaction coordinator: InitProducerId, AddPartitionsToTxn or EndTxn."""

    call_id: Any
    request: Any


@dataclass(frozen=True)
class TxnCallReply:
    call_id: Any
    response: Any
