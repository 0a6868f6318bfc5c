"""One partition's driver: the replica core's work carried out over its log, in the documented order.

The broker runs one per hosted partition over the on-disk `PartitionLog`; the
simulator runs the very same class over a `MemoryLog`. Everything between the
core and storage happens here: each input goes to the core, then its `Ready`
is applied in order — log operations (checked against what the core
expected; after a truncation, the producers' state rebuilt from the log and
given back to the core), then the leader epoch checkpoint, then messages, then
completions — and the driver's `PartitionSink` hears what it must act on.

It reads no clock and does no I/O of its own: `now_ms` (monotonic, for the
core) comes with each call, the wall clock the log stamps appends with is a
callable given at construction, and the log and the epoch checkpoint are the
interfaces it was built with. A log that refuses an operation the core decided
takes the replica offline (KAFKA_STORAGE_ERROR), as Kafka does when a log
directory fails.
"""

from collections.abc import Callable, Iterable
from typing import Protocol

from .config import ReplicaConfig
from .epoch_cache import EpochEndOffset, EpochEntry
from .errors import ErrorCode
from .invariant import require
from .messages import (
    AlterPartitionResponse,
    AppendAsFollower,
    AppendAsLeader,
    Completion,
    DeleteRecordsBefore,
    DeleteRecordsRequest,
    FetchPlan,
    FetchRequest,
    FetchResponse,
    IsrChanged,
    ListedOffset,
    LogOp,
    PartitionState,
    ProduceRequest,
    ProposeIsr,
    SendFetch,
    TruncateFullyAndStartAt,
    TruncateTo,
)
from .producer_state import ProducerEntry, rebuild_with_completed
from .replica import PartitionReplica, Role
from .storage import LogStorage, ReadResult
from .topic_partition import TopicPartition

# One input makes a bounded amount of work: a core that keeps producing Ready is looping.
READY_ROUNDS_MAX = 64


class PartitionSink(Protocol):
    """What a partition's driver hands to the process around it."""

    def send_fetch(self, driver: "PartitionDriver", message: SendFetch) -> None: ...

    def propose_isr(self, driver: "PartitionDriver", message: ProposeIsr) -> None: ...

    def complete(self, driver: "PartitionDriver", completion: Completion) -> None:
        """The answer to a produce (CompleteProduce) or a DeleteRecords (CompleteDeleteRecords)."""
        ...

    def data_changed(self, driver: "PartitionDriver") -> None:
        """The log end offset, the high watermark or the role moved: held fetches look again,
        and the high watermark is due a checkpoint."""
        ...

    def isr_changed(self, driver: "PartitionDriver", change: IsrChanged) -> None: ...

    def role_changed(self, driver: "PartitionDriver", before: Role, state: PartitionState) -> None: ...

    def truncated(self, driver: "PartitionDriver", op: LogOp, log_end_offset_before: int) -> None:
        """The log was truncated (TruncateTo or TruncateFullyAndStartAt); it ended at the given offset. The
        replica's producers are rebuilt from the log by now."""
        ...

    def storage_failed(self, driver: "PartitionDriver", failure: "LogOpFailed") -> None: ...

    def log_start_moved(self, driver: "PartitionDriver") -> None:
        """DeleteRecords (the leader's, or a follower taking its leader's log start) moved the log start within
        a segment: only the log start checkpoint keeps the records before it from coming back after a crash."""
        ...


class LogOpFailed(Exception):
    """The log refused an operation the core decided, or did it elsewhere than the core expected."""

    def __init__(self, op: LogOp, error: ErrorCode, reason: str) -> None:
        super().__init__(f"{type(op).__name__} failed with {error.name}: {reason}")
        self.op = op
        self.error = error


def apply_log_op(log: LogStorage, op: LogOp, wall_ms: int) -> None:
    """Carry out one of the core's log operations; LogOpFailed when the log disagrees."""
    if isinstance(op, AppendAsLeader):
        info = log.append_as_leader(op.records, op.leader_epoch, wall_ms)
        if info.error != ErrorCode.NONE:
            raise LogOpFailed(op, info.error, info.reason)
        if (info.first_offset, info.last_offset) != (op.base_offset, op.last_offset):
            raise LogOpFailed(op, ErrorCode.KAFKA_STORAGE_ERROR,
                              f"appended at [{info.first_offset}, {info.last_offset}], the core expected "
                              f"[{op.base_offset}, {op.last_offset}]")
        log.index_aborted(op.aborted)
    elif isinstance(op, AppendAsFollower):
        info = log.append_as_follower(op.records, now_ms=wall_ms)
        if info.error != ErrorCode.NONE:
            raise LogOpFailed(op, info.error, info.reason)
        log.index_aborted(op.aborted)
    elif isinstance(op, TruncateTo):
        log.truncate_to(op.offset)
    elif isinstance(op, DeleteRecordsBefore):
        error = log.delete_records_before(op.offset)
        if error != ErrorCode.NONE:
            raise LogOpFailed(op, error, f"the log ends at {log.log_end_offset}, before offset {op.offset}")
    else:
        log.truncate_fully_and_start_at(op.offset)


def load_producers(log: LogStorage, now_ms: int) -> tuple[ProducerEntry, ...]:
    """The idempotent producers and open transactions a log holds: its newest producer snapshot at or below
    the log end, then the batches and markers after it (Kafka's rebuildProducerState), at a broker's start
    and after each truncation. The aborts replayed are indexed again, in case a crash lost their .txnindex
    entries (the index skips those it has)."""
    snapshot_offset, snapshot = log.producer_snapshot()
    producers, completed = rebuild_with_completed(snapshot, log.producer_appends(snapshot_offset), now_ms)
    log.index_aborted([entry for txn in completed if (entry := txn.aborted_txn()) is not None])
    return producers


def read_planned(log: LogStorage, plan: FetchPlan, max_bytes: int) -> ReadResult | None:
    """The leader's read step for a fetch's plan: whole batches in [read_offset, max_offset), or
    None when the plan has nothing to read."""
    if not plan.has_data:
        return None
    return log.read(plan.read_offset, min(plan.max_bytes, max_bytes), max_offset=plan.max_offset)


class PartitionDriver:
    def __init__(
        self,
        topic_partition: TopicPartition,
        replica: PartitionReplica,
        log: LogStorage,
        *,
        write_epoch_entries: Callable[[tuple[EpochEntry, ...]], None],
        wall_clock_ms: Callable[[], int],
        sink: PartitionSink,
    ) -> None:
        self.topic_partition = topic_partition
        self.replica = replica
        self.log = log
        self._write_epoch_entries = write_epoch_entries
        self._wall_clock_ms = wall_clock_ms
        self._sink = sink
        self._epoch_entries = replica.epoch_entries
        self._snapshot_segment = log.active_segment_base_offset
        # Counts the moves data_changed reports, so that a held fetch re-plans only partitions that moved.
        self.changes = 0

    @property
    def topic(self) -> str:
        return self.topic_partition.topic

    @property
    def partition(self) -> int:
        return self.topic_partition.partition

    @property
    def name(self) -> str:
        return str(self.topic_partition)

    @property
    def is_leader(self) -> bool:
        return self.replica.role is Role.LEADER

    # -- inputs: each goes to the core, then its work is carried out ------------------------

    def leader_and_isr(self, state: PartitionState, now_ms: int) -> ErrorCode:
        replica = self.replica
        before, epochs_before = replica.role, (replica.leader_epoch, replica.partition_epoch)
        error = replica.handle_leader_and_isr(state, now_ms)
        if not self.apply():
            return ErrorCode.KAFKA_STORAGE_ERROR
        if (replica.leader_epoch, replica.partition_epoch) != epochs_before or replica.role is not before:
            self._changed()  # fetches held under the old epoch answer now, with the new one's error
        if replica.role is not before:
            self._sink.role_changed(self, before, state)
        return error

    def stop(self, now_ms: int, error: ErrorCode = ErrorCode.NOT_LEADER_OR_FOLLOWER) -> None:
        """StopReplica, or closing: waiting producers get `error`, held fetches answer."""
        self.replica.stop(now_ms, error)
        self.apply()
        self._changed()

    def produce(self, request: ProduceRequest, now_ms: int) -> bool:
        """Append as leader; True when a CompleteProduce will follow (never for acks=0)."""
        answered = self.replica.handle_produce(request, now_ms)
        self.apply()
        return answered

    def delete_records(self, request: DeleteRecordsRequest, now_ms: int) -> None:
        """DeleteRecords as leader; a CompleteDeleteRecords follows, now or when the followers in sync or on
        live brokers have moved their log starts too."""
        self.replica.handle_delete_records(request, now_ms)
        self.apply()

    def alive_brokers(self, alive_brokers: Iterable[int]) -> None:
        """UpdateMetadata named the live brokers: DeleteRecords held only by a dead one's follower out of the ISR
        answer."""
        self.replica.handle_alive_brokers(alive_brokers)
        self.apply()

    def fetch(self, request: FetchRequest, now_ms: int) -> FetchPlan:
        """The core's plan for a fetch; a follower's fetch may move the HW and complete producers."""
        plan = self.replica.handle_fetch(request, now_ms)
        if self.replica.has_ready():
            self.apply()
        return plan

    def read(self, plan: FetchPlan, max_bytes: int) -> ReadResult | None:
        return read_planned(self.log, plan, max_bytes)

    def fetch_response(self, fetch_id: int, response: FetchResponse, now_ms: int) -> None:
        self.replica.handle_fetch_response(fetch_id, response, now_ms)
        self.apply()

    def fetch_failed(self, fetch_id: int, now_ms: int) -> None:
        self.replica.handle_fetch_failure(fetch_id, now_ms)
        self.apply()

    def alter_partition_response(self, proposal_id: int, response: AlterPartitionResponse, now_ms: int) -> None:
        self.replica.handle_alter_partition_response(proposal_id, response, now_ms)
        self.apply()

    def offsets_for_leader_epoch(self, current_leader_epoch: int, leader_epoch: int) -> tuple[ErrorCode, EpochEndOffset]:
        return self.replica.handle_offsets_for_leader_epoch(current_leader_epoch, leader_epoch)

    def list_offsets(self, current_leader_epoch: int, timestamp_ms: int,
                     offset_for_timestamp: Callable[[int], tuple[int, int] | None],
                     *, read_committed: bool = False) -> ListedOffset:
        """ListOffsets; the log is searched by timestamp only for a real timestamp."""
        found = offset_for_timestamp(timestamp_ms) if timestamp_ms >= 0 else None
        return self.replica.handle_list_offsets(current_leader_epoch, timestamp_ms, found,
                                                read_committed=read_committed)

    def reconfigure(self, config: ReplicaConfig) -> None:
        """A topic's config changed: producers a raised min.insync.replicas fails are answered."""
        self.replica.reconfigure(config)
        self.apply()

    def tick(self, now_ms: int) -> None:
        """Expire waiting producers, judge the ISR, retry fetches and proposals; flush by flush.ms."""
        self.replica.tick(now_ms)
        self.apply()
        self.log.maybe_flush(self._wall_clock_ms())

    def snapshot_producers(self) -> None:
        """Write the idempotent producers' state as of the log end (at a roll, and at a clean close)."""
        self.log.write_producer_snapshot(self.log.log_end_offset, self.replica.producers)
        self._snapshot_segment = self.log.active_segment_base_offset

    def advance_log_start_offset(self) -> None:
        """Retention removed segments: the core learns where the log starts now, and held fetches look again
        (a follower takes the new log start from its answer)."""
        self.replica.advance_log_start_offset(self.log.log_start_offset)
        self.apply()
        self._changed()

    # -- carrying out the core's work -------------------------------------------------------

    def apply(self) -> bool:
        """Apply every Ready the core has; False when the log failed, which took the replica offline."""
        try:
            self._apply_all()
        except LogOpFailed as failure:
            self._sink.storage_failed(self, failure)
            self.replica.stop(self.replica.now_ms, ErrorCode.KAFKA_STORAGE_ERROR)
            self._apply_all()
            self._changed()
            return False
        return True

    def _apply_all(self) -> None:
        for _ in range(READY_ROUNDS_MAX):
            if not self.replica.has_ready():
                return
            self._apply_ready()
        require(False, "%s: the core still has work after %d rounds", self.name, READY_ROUNDS_MAX)

    def _apply_ready(self) -> None:
        ready = self.replica.ready()
        if ready.log_ops:
            wall_ms = self._wall_clock_ms()
            truncations = []
            log_start_moved = False
            for op in ready.log_ops:
                before = self.log.log_end_offset
                apply_log_op(self.log, op, wall_ms)
                if isinstance(op, TruncateTo | TruncateFullyAndStartAt):
                    truncations.append((op, before))
                log_start_moved = log_start_moved or isinstance(op, DeleteRecordsBefore)
            require(self.log.log_end_offset == self.replica.log_end_offset,
                    "%s: the log ends at %d but the core says %d", self.name, self.log.log_end_offset,
                    self.replica.log_end_offset)
            if truncations:
                self._rebuild_producers()
            for op, before in truncations:
                self._sink.truncated(self, op, before)
            if log_start_moved:
                self._sink.log_start_moved(self)
            if self.log.active_segment_base_offset != self._snapshot_segment:
                self.snapshot_producers()  # a new segment: recovery need not read the ones before
        if ready.epoch_entries is not None and ready.epoch_entries != self._epoch_entries:
            self._write_epoch_entries(ready.epoch_entries)
            self._epoch_entries = ready.epoch_entries
        for message in ready.messages:
            if isinstance(message, SendFetch):
                self._sink.send_fetch(self, message)
            else:
                self._sink.propose_isr(self, message)
        for completion in ready.completions:
            self._sink.complete(self, completion)
        for change in ready.isr_changes:
            self._sink.isr_changed(self, change)
        if ready.log_ops or ready.high_watermark is not None:
            self._changed()

    def _rebuild_producers(self) -> None:
        """After a truncation the core has cut its producers' cache; what it cut may hide batches only the log
        still holds (a producer's five cached batches all gone, and the ones before them with them)."""
        if not self.replica.producers:
            return  # none known before: a truncation brings none back (Kafka skips the read as well)
        self.replica.restore_producers(load_producers(self.log, self.replica.now_ms), self.log.log_end_offset)

    def _changed(self) -> None:
        self.changes += 1
        self._sink.data_changed(self)
