"""The invariants of DESIGN §11, checked as the simulation runs.

Hooks see each log operation before the log applies it, each produce
completion, each consumed batch; `after_event` looks at every live replica
after every event. Checks are incremental (a replica's log is compared with
the committed log only where its high watermark has moved), so that hundreds
of seeds fit in the test budget.

There is one checker per partition; `tests/sim/txn_invariants.py` adds the
transactions' checks, which span partitions.

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
    def __init__(self, sim: "Simulation", partition: int = 0, *, clean: bool = True,
                 raise_on_violation: bool = True) -> None:
        self.sim = sim
        self.partition = partition
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
        # Acknowledgements of writes acknowledged before: retries of idempotent batches (and markers).
        self.retries_answered = 0
        # The highest offset a DeleteRecords was answered for without an error: no replica may start below it.
        self.deleted_before = 0
        # (broker, (partition, producer id, epoch), answer) for every verification a leader heard.
        self.verifications: list[tuple[int, tuple[int, int, int], ErrorCode]] = []

    def fail(self, message: str) -> None:
        message = f"t={self.sim.now_ms}ms: partition {self.partition}: {message}"
        if self.raise_on_violation:
            raise InvariantBroken(message)
        self.violations.append(message)

    # -- at most one leader per leader epoch ----------------------------------

    def on_leader_and_isr(self, node: "BrokerNode") -> None:
        replica = node.drivers[self.partition].replica
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
            log = node.disks[self.partition].log
            removed = len(log.batches_between(op.offset, log.log_end_offset))
            self.truncations.append((node.broker_id, op.offset, removed))
            if self.clean:
                self._check_truncation(node, op.offset)

    def _check_truncation(self, node: "BrokerNode", offset: int) -> None:
        broker = node.broker_id
        high_watermark = self._high_watermark_seen.get(broker, 0)
        if offset < high_watermark:
            self.fail(f"broker {broker} truncates to {offset}, below its high watermark {high_watermark}")
        log = node.disks[self.partition].log
        for base_offset in self._acknowledged_offsets[bisect_left(self._acknowledged_offsets, offset) :]:
            if log.batch_at(base_offset) == self.acknowledged[base_offset]:
                self.fail(
                    f"broker {broker} truncates to {offset}, losing the acknowledged write at {base_offset} "
                    f"(ISR {self.sim.controller.states[self.partition].isr})"
                )

    # -- acknowledged writes --------------------------------------------------

    def on_completion(self, node: "BrokerNode", completion: CompleteProduce) -> None:
        if completion.error != ErrorCode.NONE or completion.request_id[2] != ACKS_ALL:
            return
        base_offset = completion.base_offset
        batch = node.disks[self.partition].log.batch_at(base_offset)
        if batch is None:
            self.fail(f"leader {node.broker_id} acknowledged offset {base_offset}, which its log lacks")
            return
        if self.acknowledged.get(base_offset) == batch:
            self.retries_answered += 1
        # An idempotent producer's retry is answered with the offsets its batch got the first time,
        # which may lie below later acknowledgements: only other writes are acknowledged in order.
        if self.clean and batch.producer_id == -1 and base_offset <= self._last_acknowledged_offset:
            self.fail(f"acknowledged offset {base_offset} after acknowledging {self._last_acknowledged_offset}")
        self._last_acknowledged_offset = max(self._last_acknowledged_offset, batch.last_offset)
        if base_offset not in self.acknowledged:
            insort(self._acknowledged_offsets, base_offset)
        self.acknowledged[base_offset] = batch

    # -- high watermarks and agreement below them -----------------------------

    def on_verification(self, node: "BrokerNode", asking: tuple[int, int, int], error: ErrorCode) -> None:
        self.verifications.append((node.broker_id, asking, error))

    def on_restart(self, node: "BrokerNode") -> None:
        # A crash may lose the tail of the log and of the HW checkpoint: the new
        # incarnation is checked from what it starts with.
        replica = node.drivers[self.partition].replica
        self._high_watermark_seen[node.broker_id] = replica.high_watermark
        self._verified_to[node.broker_id] = replica.log_start_offset

    def after_event(self) -> None:
        for node in self.sim.brokers.values():
            if node.up:
                self._check_replica(node)

    def _check_replica(self, node: "BrokerNode") -> None:
        broker, replica, log = node.broker_id, node.drivers[self.partition].replica, node.disks[self.partition].log
        high_watermark = replica.high_watermark
        seen = self._high_watermark_seen.get(broker, 0)
        if high_watermark < seen:
            if self.clean:
                self.fail(f"broker {broker}'s high watermark went back from {seen} to {high_watermark}")
            self._verified_to[broker] = min(self._verified_to.get(broker, 0), high_watermark)
        self._high_watermark_seen[broker] = high_watermark
        if high_watermark > replica.log_end_offset or replica.log_end_offset != log.log_end_offset:
            self.fail(
                f"broker {broker}: HW {high_watermark}, LEO {replica.log_end_offset}, "
                f"log end offset on disk {log.log_end_offset}"
            )
        verified_to = self._verified_to.get(broker, 0)
        if high_watermark <= verified_to:
            return
        if self.clean:
            for batch in log.batches_between(verified_to, high_watermark):
                self._check_committed(f"broker {broker}", batch)
        self._verified_to[broker] = high_watermark

    def _check_committed(self, who: str, batch: MemoryBatch) -> None:
        committed = self.committed.get(batch.base_offset)
        if committed is None:
            self.committed[batch.base_offset] = batch
            self.sim.on_committed(self.partition, batch)
        elif committed != batch:
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
        # What DeleteRecords took is gone on purpose: the batches wholly before a log start. A deletion that was
        # not answered (its leader lost the leadership first) may have reached some replicas and not others.
        starts = {broker: node.disks[self.partition].log.log_start_offset for broker, node in sim.brokers.items()}
        start = max(starts.values())
        deleted = self.deleted_before
        if min(starts.values()) < deleted:
            self.fail(f"DeleteRecords before {deleted} was answered, but the logs start at {starts}")
        logs = {broker: tuple(batch for batch in node.disks[self.partition].log.batches if batch.last_offset >= start)
                for broker, node in sim.brokers.items()}
        reference_broker, reference = next(iter(logs.items()))
        for broker, batches in logs.items():
            if batches != reference:
                self.fail(f"logs differ after healing: broker {broker} vs broker {reference_broker}")
        by_offset = {batch.base_offset: batch for batch in reference}
        if self.clean:
            for base_offset, batch in self.acknowledged.items():
                if batch.last_offset < start:
                    continue
                if by_offset.get(base_offset) != batch:
                    self.fail(f"acknowledged write {batch} is lost: the log has {by_offset.get(base_offset)}")
            for producer in sim.producers:
                if producer.partition != self.partition:
                    continue
                for ack in producer.acknowledged:
                    if ack.base_offset < start:
                        continue  # one-record batches: deleted
                    batch = by_offset.get(ack.base_offset)
                    if ack.acks == ACKS_ALL and (batch is None or batch.records != (ack.payload,)):
                        self.fail(f"{producer.address}'s acknowledged {ack} is lost: the log has {batch}")
        for consumer in sim.consumers:
            if consumer.partition != self.partition:
                continue
            for base_offset, batch in consumer.records.items():
                if self.clean and batch.last_offset >= start and by_offset.get(base_offset) != batch:
                    self.fail(f"{consumer.address} read {batch}, the log has {by_offset.get(base_offset)}")
            end_offset = reference[-1].last_offset + 1 if reference else start
            # A read_committed consumer stops at the last stable offset (txn_invariants checks what it read).
            if consumer.position != end_offset and not consumer.read_committed:
                self.fail(f"{consumer.address} stopped at {consumer.position}, the log ends at {end_offset}")
