"""One partition on this broker: the pure replica core, its on-disk log, and the glue between.

The core decides; this class carries out its `Ready` in the documented order —
log operations, then checkpoints, then messages, then completions — and
hands messages and completions to the broker through a `Sink`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Protocol

from replog.core.epoch_cache import EpochEntry
from replog.core.errors import ErrorCode
from replog.core.invariant import require
from replog.core.messages import (
    AppendAsFollower,
    AppendAsLeader,
    CompleteProduce,
    LogOp,
    ProposeIsr,
    SendFetch,
    TruncateFullyAndStartAt,
    TruncateTo,
)
from replog.core.replica import PartitionReplica, Role
from replog.broker import metrics
from replog.storage import PartitionLog

log = logging.getLogger("replog.broker")


class Sink(Protocol):
    """What a partition hands to the broker after carrying out its log work."""

    def send_fetch(self, partition: PartitionDriver, message: SendFetch) -> None: ...
    def propose_isr(self, partition: PartitionDriver, message: ProposeIsr) -> None: ...
    def complete_produce(self, completion: CompleteProduce) -> None: ...
    def data_changed(self, partition: PartitionDriver) -> None: ...


class StorageFailure(Exception):
    """The log refused an operation the core had decided: the replica must go offline."""


class PartitionDriver:
    def __init__(self, topic: str, partition: int, replica: PartitionReplica, partition_log: PartitionLog,
                 sink: Sink) -> None:
        self.topic = topic
        self.partition = partition
        self.replica = replica
        self.log = partition_log
        self._sink = sink
        self._epoch_entries = replica.epoch_entries
        self._isr = replica.isr
        # Long-polling fetches that read this partition, woken when its log end offset or HW moves.
        self.fetch_waiters: set[asyncio.Future[None]] = set()
        self.changes = 0  # counts those moves, so that a fetch re-plans only the partitions that moved

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def is_leader(self) -> bool:
        return self.replica.role is Role.LEADER

    def apply_ready(self) -> None:
        """Carry out everything the core has decided so far (log times are the Unix clock's)."""
        wall_ms = time.time_ns() // 1_000_000
        while self.replica.has_ready():
            ready = self.replica.ready()
            data_changed = bool(ready.log_ops) or ready.high_watermark is not None
            for op in ready.log_ops:
                self._apply_log_op(op, wall_ms)
            require(self.log.log_end_offset == self.replica.log_end_offset,
                    "%s: the log ends at %d but the core says %d", self.name,
                    self.log.log_end_offset, self.replica.log_end_offset)
            if ready.epoch_entries is not None and ready.epoch_entries != self._epoch_entries:
                self.log.leader_epoch_checkpoint.write((e.epoch, e.start_offset) for e in ready.epoch_entries)
                self._epoch_entries = ready.epoch_entries
            for message in ready.messages:
                if isinstance(message, SendFetch):
                    self._sink.send_fetch(self, message)
                else:
                    self._sink.propose_isr(self, message)
            for completion in ready.completions:
                self._sink.complete_produce(completion)
            if data_changed:
                self._sink.data_changed(self)
        self._log_isr_change()

    def _apply_log_op(self, op: LogOp, now_ms: int) -> None:
        if isinstance(op, AppendAsLeader):
            info = self.log.append_as_leader(op.records, op.leader_epoch, now_ms)
            if info.error != ErrorCode.NONE or info.first_offset != op.base_offset:
                raise StorageFailure(f"{self.name}: leader append at {op.base_offset} failed: "
                                     f"{info.error.name} {info.reason}")
        elif isinstance(op, AppendAsFollower):
            info = self.log.append_as_follower(op.records, now_ms=now_ms)
            if info.error != ErrorCode.NONE:
                raise StorageFailure(f"{self.name}: follower append failed: {info.error.name} {info.reason}")
        elif isinstance(op, TruncateTo):
            before = self.log.log_end_offset
            self.log.truncate_to(op.offset)
            if before != self.log.log_end_offset:
                log.info("%s truncated from %d to %d (leader epoch %d)", self.name, before,
                         self.log.log_end_offset, self.replica.leader_epoch)
        elif isinstance(op, TruncateFullyAndStartAt):
            log.info("%s truncated fully, now starting at %d", self.name, op.offset)
            self.log.truncate_fully_and_start_at(op.offset)

    def _log_isr_change(self) -> None:
        isr = self.replica.isr
        if isr == self._isr:
            return
        log.info("%s ISR %s -> %s (leader epoch %d, partition epoch %d)", self.name,
                 list(self._isr), list(isr), self.replica.leader_epoch, self.replica.partition_epoch)
        if self.is_leader and set(isr) < set(self._isr):
            metrics.ISR_SHRINKS.inc()
        elif self.is_leader and set(isr) > set(self._isr):
            metrics.ISR_EXPANDS.inc()
        self._isr = isr


def epoch_entries_from(pairs: list[tuple[int, int]]) -> tuple[EpochEntry, ...]:
    return tuple(EpochEntry(epoch, start) for epoch, start in pairs)
