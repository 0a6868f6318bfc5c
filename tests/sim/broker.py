"""A simulated broker: one partition's core, its disk, and the driver loop around them.

The driver is what a real broker's would be, minus the I/O: feed an input to
the core, then apply each Ready in order (log operations, checkpoints, sends,
completions), then answer or hold fetches. Held fetches model the long poll:
they are looked at again whenever the replica's log end offset, high watermark
or role moves, and answered at the latest at their max_wait_ms.
"""

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from replog.core.config import ReplicaConfig
from replog.core.epoch_cache import EpochEntry
from replog.core.errors import ErrorCode
from replog.core.invariant import InvariantViolation
from replog.core.log import MemoryLog, apply_log_ops
from replog.core.messages import FetchPlan, ProposeIsr, Ready, SendFetch, TruncateTo
from replog.core.replica import PartitionReplica

from .wire import (
    CONTROLLER,
    AlterPartition,
    AlterPartitionReply,
    Fetch,
    FetchReply,
    LeaderAndIsr,
    Produce,
    ProduceReply,
)

if TYPE_CHECKING:
    from .simulation import Simulation

# A driver that keeps finding work after this many rounds is looping.
PROCESS_ROUNDS_MAX = 64


@dataclass
class Disk:
    """What survives a crash: the log up to its recovery point, and the checkpoints."""

    log: MemoryLog = field(default_factory=MemoryLog)
    epoch_entries: tuple[EpochEntry, ...] = ()
    high_watermark: int = 0


@dataclass
class _HeldFetch:
    source: object
    message: Fetch
    deadline_ms: int
    high_watermark: int
    seen: tuple


class BrokerNode:
    def __init__(
        self,
        sim: "Simulation",
        broker_id: int,
        config: ReplicaConfig,
        flush_interval_ms: int,
        *,
        legacy_hw_truncation: bool = False,
    ) -> None:
        self.sim = sim
        self.broker_id = broker_id
        self.config = config
        self.flush_interval_ms = flush_interval_ms
        # Behave like a broker before KIP-101, to show what leader epochs prevent.
        self.legacy_hw_truncation = legacy_hw_truncation
        self.disk = Disk()
        self.up = True
        self.incarnation = 0
        self.broker_epoch: int | None = None
        # Set by a crash that lost records; cleared when the controller takes the
        # broker back into the ISR (it has caught up again).
        self.lossy = False
        self.crashed_at_ms = 0
        self._held: list[_HeldFetch] = []
        self._last_flush_ms = 0
        self.replica = self._start_replica()

    # -- life and death -------------------------------------------------------

    def _start_replica(self) -> PartitionReplica:
        log = self.disk.log
        replica = PartitionReplica(
            self.broker_id,
            self.config,
            log_start_offset=log.log_start_offset,
            log_end_offset=log.log_end_offset,
            epoch_entries=self.disk.epoch_entries,
            high_watermark=self.disk.high_watermark,
            now_ms=self.sim.now_ms,
        )
        self.sim.schedule(self.sim.now_ms + self.sim.tick_ms, self._tick, self.incarnation)
        return replica

    def crash(self) -> int:
        """The process dies: unflushed records are lost; returns how many batches."""
        self.up = False
        self.crashed_at_ms = self.sim.now_ms
        self.incarnation += 1
        self.broker_epoch = None
        self._held.clear()
        lost = self.disk.log.crash()
        self.lossy = self.lossy or lost > 0
        return lost

    def restart(self) -> None:
        self.up = True
        self.replica = self._start_replica()
        self.sim.checker.on_restart(self)
        self._process()

    @property
    def flushed(self) -> bool:
        log = self.disk.log
        return log.recovery_point >= log.log_end_offset

    def _tick(self, incarnation: int) -> None:
        if incarnation != self.incarnation:
            return
        now_ms = self.sim.now_ms
        self.sim.schedule(now_ms + self.sim.tick_ms, self._tick, incarnation)
        self.replica.tick(now_ms)
        if self.flush_interval_ms and now_ms - self._last_flush_ms >= self.flush_interval_ms:
            self.disk.log.flush()
            self._last_flush_ms = now_ms
        self._process()

    # -- inputs ---------------------------------------------------------------

    def receive(self, source: object, message: object) -> None:
        now_ms = self.sim.now_ms
        replica = self.replica
        if isinstance(message, Fetch):
            plan = replica.handle_fetch(message.request, now_ms)
            self._process()
            self._answer_or_hold(source, message, plan)
            return
        if isinstance(message, LeaderAndIsr):
            if message.broker_epoch != self.broker_epoch:
                return  # meant for an earlier incarnation of this broker
            if self.legacy_hw_truncation:
                replica = self._truncate_to_high_watermark_before_following(message)
            replica.handle_leader_and_isr(message.state, now_ms)
            self.sim.checker.on_leader_and_isr(self)
        elif isinstance(message, FetchReply | AlterPartitionReply) and message.caller != self.incarnation:
            return  # an answer to a call made before this process (re)started
        elif isinstance(message, FetchReply):
            replica.handle_fetch_response(message.fetch_id, message.response, now_ms)
        elif isinstance(message, Produce):
            replica.handle_produce(message.request, now_ms)
        elif isinstance(message, AlterPartitionReply):
            replica.handle_alter_partition_response(message.proposal_id, message.response, now_ms)
        else:
            raise TypeError(f"broker {self.broker_id} got {message!r}")
        self._process()

    def _truncate_to_high_watermark_before_following(self, message: LeaderAndIsr) -> PartitionReplica:
        """The pre-KIP-101 rule: a replica that becomes a follower truncates its log
        to its own high watermark, then fetches from there."""
        state, replica = message.state, self.replica
        becomes_follower = state.leader != self.broker_id and state.leader_epoch > replica.leader_epoch
        high_watermark = replica.high_watermark
        if not becomes_follower or self.disk.log.log_end_offset <= high_watermark:
            return replica
        self.sim.checker.before_log_op(self, TruncateTo(high_watermark))
        self.disk.log.truncate_to(high_watermark)
        self.disk.epoch_entries = tuple(e for e in self.disk.epoch_entries if e.start_offset < high_watermark)
        self.incarnation += 1  # a fresh replica reuses fetch and proposal ids
        self.replica = self._start_replica()
        return self.replica

    # -- the driver loop ------------------------------------------------------

    def _process(self) -> None:
        for _ in range(PROCESS_ROUNDS_MAX):
            if self.replica.has_ready():
                self._apply(self.replica.ready())
            elif not self._wake_held():
                return
        raise InvariantViolation(f"broker {self.broker_id} keeps finding work")

    def _apply(self, ready: Ready) -> None:
        sim, now_ms, log = self.sim, self.sim.now_ms, self.disk.log
        for op in ready.log_ops:
            sim.checker.before_log_op(self, op)
            apply_log_ops(log, (op,), now_ms)
        if ready.log_ops and self.flush_interval_ms == 0:
            log.flush()
        if ready.epoch_entries is not None:
            self.disk.epoch_entries = ready.epoch_entries
        if ready.high_watermark is not None:
            self.disk.high_watermark = ready.high_watermark
        for message in ready.messages:
            if isinstance(message, SendFetch):
                request = replace(message.request, replica_epoch=self.broker_epoch or -1)
                fetch = Fetch(message.fetch_id, request, self.incarnation)
                sim.network.send(self.broker_id, message.leader_id, fetch, now_ms)
            elif isinstance(message, ProposeIsr):
                sim.on_proposal_sent(message.request)
                proposal = AlterPartition(message.proposal_id, message.request, self.incarnation)
                sim.network.send(self.broker_id, CONTROLLER, proposal, now_ms)
        for completion in ready.completions:
            sim.checker.on_completion(self, completion)
            producer = completion.request_id[0]
            sim.network.send(self.broker_id, producer, ProduceReply(completion), now_ms)

    def _state_seen(self) -> tuple:
        replica = self.replica
        return (replica.role, replica.leader_epoch, replica.log_end_offset, replica.high_watermark)

    def _answer_or_hold(self, source: object, message: Fetch, plan: FetchPlan, held: _HeldFetch | None = None) -> bool:
        now_ms = self.sim.now_ms
        answer = (
            plan.has_data
            or plan.error != ErrorCode.NONE
            or plan.diverging_epoch is not None
            or message.request.max_wait_ms == 0
            or (held is not None and (now_ms >= held.deadline_ms or plan.high_watermark != held.high_watermark))
        )
        if answer:
            response = self.disk.log.fetch_response(plan)
            reply = FetchReply(message.fetch_id, response, message.caller)
            self.sim.network.send(self.broker_id, source, reply, now_ms)
            return True
        if held is None:
            deadline_ms = now_ms + message.request.max_wait_ms
            held = _HeldFetch(source, message, deadline_ms, plan.high_watermark, self._state_seen())
            self._held.append(held)
            self.sim.schedule(deadline_ms, self._expire_held, self.incarnation, held)
        else:
            held.seen = self._state_seen()
        return False

    def _wake_held(self) -> bool:
        """Look again at held fetches the replica has moved on from; True if that made work."""
        seen = self._state_seen()
        woken = False
        for held in [held for held in self._held if held.seen != seen]:
            plan = self.replica.handle_fetch(held.message.request, self.sim.now_ms)
            if self.replica.has_ready():
                self._apply(self.replica.ready())
            if self._answer_or_hold(held.source, held.message, plan, held):
                self._held.remove(held)
                woken = True
        return woken or self.replica.has_ready()

    def _expire_held(self, incarnation: int, held: _HeldFetch) -> None:
        if incarnation != self.incarnation or held not in self._held:
            return
        self._held.remove(held)
        plan = self.replica.handle_fetch(held.message.request, self.sim.now_ms)
        self._process()
        reply = FetchReply(held.message.fetch_id, self.disk.log.fetch_response(plan), held.message.caller)
        self.sim.network.send(self.broker_id, held.source, reply, self.sim.now_ms)
