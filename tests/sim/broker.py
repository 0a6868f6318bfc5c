"""A simulated broker: the production `PartitionDriver` over a `MemoryLog`, on the simulated network.

Everything between the core and storage is the broker's own code
(replog.core.partition_driver); what is simulated is only what a process does
around it: the network (this node is the driver's `PartitionSink`), the disk
(a MemoryLog that loses its unflushed tail in a crash), the clock, and the
long poll. Held fetches follow the broker's rule (services/broker/fetch.py): a
fetch with nothing to answer (`FetchPlan.quiet`) waits until its partition
moves or its max wait passes.
"""

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from replog.core.config import ReplicaConfig
from replog.core.epoch_cache import EpochEntry
from replog.core.invariant import InvariantViolation
from replog.core.log import MemoryLog, fetch_response
from replog.core.messages import (
    AppendAsLeader,
    CompleteProduce,
    FetchPlan,
    IsrChanged,
    LogOp,
    PartitionState,
    ProposeIsr,
    SendFetch,
    TruncateFullyAndStartAt,
    TruncateTo,
)
from replog.core.partition_driver import LogOpFailed, PartitionDriver
from replog.core.producer_state import rebuild
from replog.core.replica import PartitionReplica, Role
from replog.core.storage import AppendInfo
from replog.core.topic_partition import TopicPartition

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

TOPIC_PARTITION = TopicPartition("simulated", 0)
# Looking at held fetches after one input ends within this many rounds, or the node is looping.
PROCESS_ROUNDS_MAX = 64


@dataclass
class Disk:
    """What survives a crash: the log up to its recovery point, and the checkpoints."""

    log: MemoryLog
    epoch_entries: tuple[EpochEntry, ...] = ()
    high_watermark: int = 0


class CheckedLog:
    """The disk's log as the driver sees it, with the checker shown each change before it is made."""

    def __init__(self, node: "BrokerNode") -> None:
        self._node = node
        self._log = node.disk.log

    def __getattr__(self, name: str) -> Any:
        return getattr(self._log, name)

    def append_as_leader(self, batches: Any, leader_epoch: int, now_ms: int) -> AppendInfo:
        base_offset = self._log.log_end_offset
        count = sum(len(batch.records) for batch in batches)
        self._node.sim.checker.before_log_op(self._node, AppendAsLeader(batches, leader_epoch, base_offset,
                                                                        base_offset + count - 1))
        return self._log.append_as_leader(batches, leader_epoch, now_ms)

    def truncate_to(self, offset: int) -> bool:
        self._node.sim.checker.before_log_op(self._node, TruncateTo(offset))
        return self._log.truncate_to(offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self._node.sim.checker.before_log_op(self._node, TruncateFullyAndStartAt(offset))
        self._log.truncate_fully_and_start_at(offset)


def _snapshot_and_batches(log: MemoryLog):
    offset, snapshot = log.producer_snapshot()
    return snapshot, log.producer_appends(offset)


@dataclass
class _HeldFetch:
    source: object
    message: Fetch
    changes: int  # the driver's change count when last planned


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
        # Behave like a broker before KIP-101, to show what leader epochs prevent.
        self.legacy_hw_truncation = legacy_hw_truncation
        self.disk = Disk(MemoryLog(flush_interval_ms=flush_interval_ms))
        self.up = True
        self.incarnation = 0
        self.broker_epoch: int | None = None
        # Set by a crash that lost records; cleared when the controller takes the
        # broker back into the ISR (it has caught up again).
        self.lossy = False
        self.crashed_at_ms = 0
        self._held: list[_HeldFetch] = []
        self.driver = self._start_driver()

    @property
    def replica(self) -> PartitionReplica:
        return self.driver.replica

    # -- life and death -------------------------------------------------------

    def _start_driver(self) -> PartitionDriver:
        log = self.disk.log
        replica = PartitionReplica(
            self.broker_id,
            self.config,
            log_start_offset=log.log_start_offset,
            log_end_offset=log.log_end_offset,
            epoch_entries=self.disk.epoch_entries,
            high_watermark=self.disk.high_watermark,
            now_ms=self.sim.now_ms,
            producer_entries=rebuild(*_snapshot_and_batches(log), self.sim.now_ms),
        )
        driver = PartitionDriver(
            TOPIC_PARTITION, replica, CheckedLog(self),
            write_epoch_entries=self._write_epoch_entries, wall_clock_ms=lambda: self.sim.now_ms, sink=self,
        )
        self.sim.schedule(self.sim.now_ms + self.sim.tick_ms, self._tick, self.incarnation)
        return driver

    def _write_epoch_entries(self, entries: tuple[EpochEntry, ...]) -> None:
        self.disk.epoch_entries = entries

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
        self.driver = self._start_driver()
        self.driver.apply()  # a checkpoint naming epochs the crash lost is rewritten
        self.sim.checker.on_restart(self)
        self._process()

    @property
    def flushed(self) -> bool:
        log = self.disk.log
        return log.recovery_point >= log.log_end_offset

    def _tick(self, incarnation: int) -> None:
        if incarnation != self.incarnation:
            return
        self.sim.schedule(self.sim.now_ms + self.sim.tick_ms, self._tick, incarnation)
        self.driver.tick(self.sim.now_ms)
        self._process()

    # -- inputs ---------------------------------------------------------------

    def receive(self, source: object, message: object) -> None:
        now_ms = self.sim.now_ms
        driver = self.driver
        if isinstance(message, Fetch):
            self._answer_or_hold(source, message, driver.fetch(message.request, now_ms))
        elif isinstance(message, LeaderAndIsr):
            if message.broker_epoch != self.broker_epoch:
                return  # meant for an earlier incarnation of this broker
            if self.legacy_hw_truncation:
                driver = self._truncate_to_high_watermark_before_following(message.state)
            driver.leader_and_isr(message.state, now_ms)
            self.sim.checker.on_leader_and_isr(self)
        elif isinstance(message, FetchReply | AlterPartitionReply) and message.caller != self.incarnation:
            return  # an answer to a call made before this process (re)started
        elif isinstance(message, FetchReply):
            driver.fetch_response(message.fetch_id, message.response, now_ms)
        elif isinstance(message, Produce):
            driver.produce(message.request, now_ms)
        elif isinstance(message, AlterPartitionReply):
            driver.alter_partition_response(message.proposal_id, message.response, now_ms)
        else:
            raise TypeError(f"broker {self.broker_id} got {message!r}")
        self._process()

    def _truncate_to_high_watermark_before_following(self, state: PartitionState) -> PartitionDriver:
        """The pre-KIP-101 rule: a replica that becomes a follower truncates its log
        to its own high watermark, then fetches from there."""
        replica = self.replica
        becomes_follower = state.leader != self.broker_id and state.leader_epoch > replica.leader_epoch
        high_watermark = replica.high_watermark
        if not becomes_follower or self.disk.log.log_end_offset <= high_watermark:
            return self.driver
        CheckedLog(self).truncate_to(high_watermark)
        self.disk.epoch_entries = tuple(e for e in self.disk.epoch_entries if e.start_offset < high_watermark)
        self.incarnation += 1  # a fresh replica reuses fetch and proposal ids
        self.driver = self._start_driver()
        return self.driver

    # -- PartitionSink: what the driver hands over ----------------------------

    def send_fetch(self, driver: PartitionDriver, message: SendFetch) -> None:
        request = replace(message.request, replica_epoch=self.broker_epoch or -1)
        fetch = Fetch(message.fetch_id, request, self.incarnation)
        self.sim.network.send(self.broker_id, message.leader_id, fetch, self.sim.now_ms)

    def propose_isr(self, driver: PartitionDriver, message: ProposeIsr) -> None:
        self.sim.on_proposal_sent(message.request)
        proposal = AlterPartition(message.proposal_id, message.request, self.incarnation)
        self.sim.network.send(self.broker_id, CONTROLLER, proposal, self.sim.now_ms)

    def complete_produce(self, driver: PartitionDriver, completion: CompleteProduce) -> None:
        self.sim.checker.on_completion(self, completion)
        producer = completion.request_id[0]
        self.sim.network.send(self.broker_id, producer, ProduceReply(completion), self.sim.now_ms)

    def data_changed(self, driver: PartitionDriver) -> None:
        # The HW checkpoint follows every move; held fetches look again once the input is handled.
        self.disk.high_watermark = driver.replica.high_watermark

    def isr_changed(self, driver: PartitionDriver, change: IsrChanged) -> None:
        pass

    def role_changed(self, driver: PartitionDriver, before: Role, state: PartitionState) -> None:
        pass

    def truncated(self, driver: PartitionDriver, op: LogOp, log_end_offset_before: int) -> None:
        pass

    def storage_failed(self, driver: PartitionDriver, failure: LogOpFailed) -> None:
        raise InvariantViolation(f"broker {self.broker_id}'s memory log refused {failure}")

    # -- the long poll --------------------------------------------------------

    def _process(self) -> None:
        """Look again at held fetches whose partition moved, until none answers any more."""
        for _ in range(PROCESS_ROUNDS_MAX):
            moved = [held for held in self._held if held.changes != self.driver.changes]
            if not moved:
                return
            for held in moved:
                plan = self.driver.fetch(held.message.request, self.sim.now_ms)
                held.changes = self.driver.changes
                if not plan.quiet:
                    self._held.remove(held)
                    self._answer(held.source, held.message, plan)
        raise InvariantViolation(f"broker {self.broker_id} keeps finding work")

    def _answer_or_hold(self, source: object, message: Fetch, plan: FetchPlan) -> None:
        if not plan.quiet or message.request.max_wait_ms == 0:
            self._answer(source, message, plan)
            return
        self._held.append(_HeldFetch(source, message, self.driver.changes))
        self.sim.schedule(self.sim.now_ms + message.request.max_wait_ms, self._expire_held, self.incarnation, message)

    def _answer(self, source: object, message: Fetch, plan: FetchPlan) -> None:
        response = fetch_response(plan, self.driver.read(plan, plan.max_bytes))
        reply = FetchReply(message.fetch_id, response, message.caller)
        self.sim.network.send(self.broker_id, source, reply, self.sim.now_ms)

    def _expire_held(self, incarnation: int, message: Fetch) -> None:
        held = next((h for h in self._held if h.message is message), None)
        if incarnation != self.incarnation or held is None:
            return
        self._held.remove(held)
        self._answer(held.source, message, self.driver.fetch(message.request, self.sim.now_ms))
        self._process()
