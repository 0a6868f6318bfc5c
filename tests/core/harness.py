"""Core tests drive a replica directly and look at each Ready it gives; its log operations go to a
MemoryLog through the production driver's one log-apply path (replog.core.partition_driver)."""

from dataclasses import dataclass, field, replace

from replog.core.config import ReplicaConfig
from replog.core.log import MemoryBatch, MemoryLog, fetch_response
from replog.core.messages import (
    ACKS_ALL,
    CompleteProduce,
    FetchResponse,
    PartitionState,
    ProduceRequest,
    ProposeIsr,
    Ready,
    SendFetch,
)
from replog.core.partition_driver import apply_log_op, read_planned
from replog.core.replica import PartitionReplica

REPLICAS = (1, 2, 3)


def partition_state(
    leader: int, leader_epoch: int = 1, isr: tuple[int, ...] = REPLICAS, partition_epoch: int = 0,
    replicas: tuple[int, ...] = REPLICAS,
) -> PartitionState:
    return PartitionState(leader, leader_epoch, isr, partition_epoch, replicas)


def produce(request_id: object, *payloads: bytes, acks: int = ACKS_ALL, timeout_ms: int = 1_000, epoch: int = -1):
    records = (MemoryBatch(payloads or (str(request_id).encode(),)),)
    return ProduceRequest(request_id, records, len(records[0].records), acks, timeout_ms, epoch)


@dataclass
class Node:
    broker_id: int
    config: ReplicaConfig = field(default_factory=ReplicaConfig)
    log: MemoryLog = field(default_factory=MemoryLog)
    broker_epoch: int = 1
    replica: PartitionReplica = field(init=False)
    fetches: list[SendFetch] = field(default_factory=list)
    proposals: list[ProposeIsr] = field(default_factory=list)
    completions: list[CompleteProduce] = field(default_factory=list)
    epoch_checkpoint: tuple = ()
    high_watermark_checkpoint: int = 0

    def __post_init__(self) -> None:
        self.replica = PartitionReplica(self.broker_id, self.config)

    def restart(self, now_ms: int = 0) -> None:
        """A new incarnation from what is on disk: the log and the checkpoints."""
        self.broker_epoch += 1
        self.fetches.clear()
        self.proposals.clear()
        self.replica = PartitionReplica(
            self.broker_id,
            self.config,
            log_start_offset=self.log.log_start_offset,
            log_end_offset=self.log.log_end_offset,
            epoch_entries=self.epoch_checkpoint,
            high_watermark=self.high_watermark_checkpoint,
            now_ms=now_ms,
        )
        self.apply(now_ms)

    def apply(self, now_ms: int = 0) -> Ready:
        """Carry out the replica's Ready the way a driver must: persist, send, complete."""
        ready = self.replica.ready()
        for op in ready.log_ops:
            apply_log_op(self.log, op, now_ms)
        if ready.epoch_entries is not None:
            self.epoch_checkpoint = ready.epoch_entries
        if ready.high_watermark is not None:
            self.high_watermark_checkpoint = ready.high_watermark
        for message in ready.messages:
            (self.fetches if isinstance(message, SendFetch) else self.proposals).append(message)
        self.completions.extend(ready.completions)
        return ready

    def take_fetch(self) -> SendFetch:
        assert self.fetches, f"broker {self.broker_id} has no fetch to send"
        return self.fetches.pop()

    def completion(self, request_id: object) -> CompleteProduce | None:
        return next((c for c in self.completions if c.request_id == request_id), None)


@dataclass
class RecordingSink:
    """A PartitionSink that keeps what a driver hands over to send or answer, and ignores its events."""

    fetches: list[SendFetch] = field(default_factory=list)
    proposals: list[ProposeIsr] = field(default_factory=list)
    completions: list[CompleteProduce] = field(default_factory=list)

    def send_fetch(self, driver, message: SendFetch) -> None:
        self.fetches.append(message)

    def propose_isr(self, driver, message: ProposeIsr) -> None:
        self.proposals.append(message)

    def complete(self, driver, completion: CompleteProduce) -> None:
        self.completions.append(completion)

    def __getattr__(self, name):
        return lambda *args: None


def answer(leader: Node, plan) -> FetchResponse:
    """What the leader sends back for `plan`: its read step over its log."""
    return fetch_response(plan, read_planned(leader.log, plan, plan.max_bytes))


def replicate(follower: Node, leader: Node, now_ms: int = 0) -> FetchResponse:
    """One fetch round trip from `follower` to `leader`, both applying their Ready."""
    follower.apply(now_ms)
    fetch = follower.take_fetch()
    request = replace(fetch.request, replica_epoch=follower.broker_epoch)
    plan = leader.replica.handle_fetch(request, now_ms)
    leader.apply(now_ms)
    response = answer(leader, plan)
    follower.replica.handle_fetch_response(fetch.fetch_id, response, now_ms)
    follower.apply(now_ms)
    return response


def catch_up(follower: Node, leader: Node, now_ms: int = 0, rounds_max: int = 50) -> None:
    """Fetch until another fetch would change nothing: the follower has the leader's
    log, and the high watermark both can know."""
    def progress() -> tuple[int, int, int]:
        return follower.replica.log_end_offset, follower.replica.high_watermark, leader.replica.high_watermark

    for _ in range(rounds_max):
        before = progress()
        replicate(follower, leader, now_ms)
        if progress() == before and follower.replica.log_end_offset == leader.replica.log_end_offset:
            return
    raise AssertionError(f"broker {follower.broker_id} did not catch up in {rounds_max} fetches")
