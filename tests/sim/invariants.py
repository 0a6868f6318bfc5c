"""The invariants of DESIGN §11, checked as the simulation runs.

Hooks see each log operation before the log applies it, each produce
completion, each consumed batch; `after_event` looks at every live replica
after every event. Checks are incremental (a replica's log is compared with
the committed log only where its high watermark has moved), so that hundreds
of seeds fit in the test budget.

"Clean" runs (no unclean election, and never a crash of the last ISR member
that still had every acknowledged record) must keep all of them. A run with
an unclean election keeps only the checks that hold even then.
"""

from bisect import bisect_left, insort
from typing import TYPE_CHECKING

from replog.core.epoch_cache import EpochEndOffset
from replog.core.errors import ErrorCode
from replog.core.log import MemoryBatch
from replog.core.messages import ACKS_ALL, AppendAsLeader, CompleteProduce, LogOp, TruncateFullyAndStartAt, TruncateTo
from replog.core.replica import Role

if TYPE_CHECKING:
    from .broker import BrokerNode
    from .clients import Consumer
    from .simulation import Simulation


class InvariantBroken(AssertionError):
    pass


class Checker:
    def __init__(self, sim: "Simulation", *, clean: bool = True, raise_on_violation: bool = True) -> None:
        self.sim = sim
        self.clean = clean
        self.raise_on_violation = raise_on_violation
        self.violations: list[str] = []
        # (broker, offset, batches removed) for every truncation, for scenarios to inspect.
        self.truncations: list[tuple[int, int, int]] = []
        self.leader_of_epoch: dict[int, tuple[int, int]] = {}
        self.committed: dict[int, MemoryBatch] = {}
        self.acknowledged: dict[int, MemoryBatch] = {}
        self._acknowledged_offsets: list[int] = []
        self._last_acknowledged_offset = -1
        self._last_assigned: dict[int, int] = {}
        self._high_watermark_seen: dict[int, int] = {}
        self._verified_to: dict[int, int] = {}

    def fail(self, message: str) -> None:
        message = f"t={self.sim.now_ms}ms: {message}"
        if self.raise_on_violation:
            raise InvariantBroken(message)
        self.violations.append(message)

    # -- at most one leader per leader epoch ----------------------------------

    def on_leader_and_isr(self, node: "BrokerNode") -> None:
        replica = node.replica
        if replica.role is not Role.LEADER:
            return
        me = (node.broker_id, node.incarnation)
        other = self.leader_of_epoch.setdefault(replica.leader_epoch, me)
        if other != me:
            self.fail(f"two leaders for epoch {replica.leader_epoch}: broker {other} and broker {me}")

    # -- offsets handed out, and what truncation may remove -------------------

    def before_log_op(self, node: "BrokerNode", op: LogOp) -> None:
        if isinstance(op, AppendAsLeader):
            last = self._last_assigned.get(op.leader_epoch, -1)
            if op.base_offset <= last:
                self.fail(f"leader {node.broker_id} gave offset {op.base_offset} again in epoch {op.leader_epoch}")
            self._last_assigned[op.leader_epoch] = op.last_offset
        elif isinstance(op, TruncateTo | TruncateFullyAndStartAt):
            removed = len(node.disk.log.batches_between(op.offset, node.disk.log.log_end_offset))
            self.truncations.append((node.broker_id, op.offset, removed))
            if self.clean:
                self._check_truncation(node, op.offset)

    def _check_truncation(self, node: "BrokerNode", offset: int) -> None:
        broker = node.broker_id
        high_watermark = self._high_watermark_seen.get(broker, 0)
        if offset < high_watermark:
            self.fail(f"broker {broker} truncates to {offset}, below its high watermark {high_watermark}")
        log = node.disk.log
        for base_offset in self._acknowledged_offsets[bisect_left(self._acknowledged_offsets, offset) :]:
            if log.batch_at(base_offset) == self.acknowledged[base_offset]:
                self.fail(
                    f"broker {broker} truncates to {offset}, losing the acknowledged write at {base_offset} "
                    f"(ISR {self.sim.controller.state.isr})"
                )

    # -- acknowledged writes --------------------------------------------------

    def on_completion(self, node: "BrokerNode", completion: CompleteProduce) -> None:
        if completion.error != ErrorCode.NONE or completion.request_id[2] != ACKS_ALL:
            return
        base_offset = completion.base_offset
        batch = node.disk.log.batch_at(base_offset)
        if batch is None:
            self.fail(f"leader {node.broker_id} acknowledged offset {base_offset}, which its log lacks")
            return
        if self.clean and base_offset <= self._last_acknowledged_offset:
            self.fail(f"acknowledged offset {base_offset} after acknowledging {self._last_acknowledged_offset}")
        self._last_acknowledged_offset = max(self._last_acknowledged_offset, batch.last_offset)
        if base_offset not in self.acknowledged:
            insort(self._acknowledged_offsets, base_offset)
        self.acknowledged[base_offset] = batch

    # -- high watermarks and agreement below them -----------------------------

    def on_restart(self, node: "BrokerNode") -> None:
        # A crash may lose the tail of the log and of the HW checkpoint: the new
        # incarnation is checked from what it starts with.
        self._high_watermark_seen[node.broker_id] = node.replica.high_watermark
        self._verified_to[node.broker_id] = node.replica.log_start_offset

    def after_event(self) -> None:
        for node in self.sim.brokers.values():
            if node.up:
                self._check_replica(node)

    def _check_replica(self, node: "BrokerNode") -> None:
        broker, replica = node.broker_id, node.replica
        high_watermark = replica.high_watermark
        seen = self._high_watermark_seen.get(broker, 0)
        if high_watermark < seen:
            if self.clean:
                self.fail(f"broker {broker}'s high watermark went back from {seen} to {high_watermark}")
            self._verified_to[broker] = min(self._verified_to.get(broker, 0), high_watermark)
        self._high_watermark_seen[broker] = high_watermark
        if high_watermark > replica.log_end_offset or replica.log_end_offset != node.disk.log.log_end_offset:
            self.fail(
                f"broker {broker}: HW {high_watermark}, LEO {replica.log_end_offset}, "
                f"log end offset on disk {node.disk.log.log_end_offset}"
            )
        verified_to = self._verified_to.get(broker, 0)
        if high_watermark <= verified_to:
            return
        if self.clean:
            for batch in node.disk.log.batches_between(verified_to, high_watermark):
                self._check_committed(f"broker {broker}", batch)
        self._verified_to[broker] = high_watermark

    def _check_committed(self, who: str, batch: MemoryBatch) -> None:
        committed = self.committed.setdefault(batch.base_offset, batch)
        if committed != batch:
            self.fail(f"{who} has {batch} below its high watermark where another replica has {committed}")

    # -- consumers ------------------------------------------------------------

    def on_consume(self, consumer: "Consumer", batch: MemoryBatch) -> None:
        if batch.base_offset < consumer.position:
            self.fail(f"{consumer.address} at {consumer.position} was given offset {batch.base_offset}")
        if self.clean:
            self._check_committed(consumer.address, batch)

    def on_consumer_truncation(self, consumer: "Consumer", diverging: EpochEndOffset) -> None:
        if self.clean:
            self.fail(f"{consumer.address} at {consumer.position} saw committed records truncated: {diverging}")

    # -- at the end, once the cluster has healed and settled ------------------

    def final_check(self) -> None:
        sim = self.sim
        logs = {broker: node.disk.log.batches for broker, node in sim.brokers.items()}
        reference_broker, reference = next(iter(logs.items()))
        for broker, batches in logs.items():
            if batches != reference:
                self.fail(f"logs differ after healing: broker {broker} vs broker {reference_broker}")
        by_offset = {batch.base_offset: batch for batch in reference}
        if self.clean:
            for base_offset, batch in self.acknowledged.items():
                if by_offset.get(base_offset) != batch:
                    self.fail(f"acknowledged write {batch} is lost: the log has {by_offset.get(base_offset)}")
            for producer in sim.producers:
                for ack in producer.acknowledged:
                    batch = by_offset.get(ack.base_offset)
                    if ack.acks == ACKS_ALL and (batch is None or batch.records != (ack.payload,)):
                        self.fail(f"{producer.address}'s acknowledged {ack} is lost: the log has {batch}")
        for consumer in sim.consumers:
            for base_offset, batch in consumer.records.items():
                if self.clean and by_offset.get(base_offset) != batch:
                    self.fail(f"{consumer.address} read {batch}, the log has {by_offset.get(base_offset)}")
            end_offset = reference[-1].last_offset + 1 if reference else 0
            if consumer.position != end_offset:
                self.fail(f"{consumer.address} stopped at {consumer.position}, the log ends at {end_offset}")
