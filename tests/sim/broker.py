"""A simulated broker: the production `PartitionDriver` over a `MemoryLog`, on the simulated network.

Everything between the core and storage is the broker's own code
(replog.core.partition_driver); what is simulated is only what a process does
around it: the network (this node is the driver's `PartitionSink`), the disk
(a MemoryLog that loses its unflushed tail in a crash), the clock, and the
long poll. Held fetches follow the broker's rule (services/broker/fetch.py): a
fetch with nothing to answer (`FetchPlan.quiet`) waits until its partition
moves or its max wait passes.

A broker hosts one replica of every partition of the simulated topic, each its
own driver over its own disk. For transactions it plays the broker's part
around the driver (services/broker/produce.py): a transactional batch that
`needs_verification` waits for the coordinator's verify-only
AddPartitionsToTxn (batches of one producer, epoch and partition share one
question and are appended in the order they came); WriteTxnMarkers arrive as
produce requests carrying their marker; a consumer's fetch answer carries the
last stable offset and, for read_committed, the aborted transactions of what
it read.
"""

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from replog.core.config import ReplicaConfig
from replog.core.epoch_cache import EpochEntry
from replog.core.errors import ErrorCode
from replog.core.invariant import InvariantViolation
from replog.core.log import MemoryLog, fetch_response
from replog.core.messages import (
    AppendAsLeader,
    CompleteDeleteRecords,
    CompleteProduce,
    DeleteRecordsRequest,
    FetchPlan,
    IsrChanged,
    LogOp,
    PartitionState,
    ProposeIsr,
    SendFetch,
    TruncateFullyAndStartAt,
    TruncateTo,
)
from replog.core.partition_driver import LogOpFailed, PartitionDriver, load_producers
from replog.core.replica import PartitionReplica, Role
from replog.core.storage import AppendInfo
from replog.core.topic_partition import TopicPartition
from replog.core.txn.requests import AddPartitionsRequest

from .wire import (
    CONTROLLER,
    TXN_COORDINATOR,
    AlterPartition,
    AlterPartitionReply,
    Fetch,
    FetchReply,
    LeaderAndIsr,
    Produce,
    ProduceReply,
    UpdateMetadata,
    VerifyTxn,
    VerifyTxnReply,
)

if TYPE_CHECKING:
    from .simulation import Simulation

TOPIC = "simulated"
# How long a leader waits for the coordinator's answer to a verification before failing the batches.
VERIFY_TIMEOUT_MS = 1_000


def topic_partition(partition: int) -> TopicPartition:
    return TopicPartition(TOPIC, partition)
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

    def __init__(self, node: "BrokerNode", partition: int = 0) -> None:
        self._node = node
        self._checker = node.sim.checkers[partition]
        self._log = node.disks[partition].log

    def __getattr__(self, name: str) -> Any:
        return getattr(self._log, name)

    def append_as_leader(self, batches: Any, leader_epoch: int, now_ms: int) -> AppendInfo:
        base_offset = self._log.log_end_offset
        count = sum(len(batch.records) for batch in batches)
        self._checker.before_log_op(self._node, AppendAsLeader(batches, leader_epoch, base_offset,
                                                               base_offset + count - 1))
        return self._log.append_as_leader(batches, leader_epoch, now_ms)

    def truncate_to(self, offset: int) -> bool:
        self._checker.before_log_op(self._node, TruncateTo(offset))
        return self._log.truncate_to(offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self._checker.before_log_op(self._node, TruncateFullyAndStartAt(offset))
        self._log.truncate_fully_and_start_at(offset)


@dataclass
class _HeldFetch:
    source: object
    message: Fetch
    changes: int  # the driver's change count when last planned


@dataclass
class _Verification:
    """A verify-only AddPartitionsToTxn on its way, and the produce requests waiting for it, in arrival order."""

    question_id: int
    asked_ms: int
    waiting: list[tuple[object, Produce]] = field(default_factory=list)


class BrokerNode:
    def __init__(
        self,
        sim: "Simulation",
        broker_id: int,
        config: ReplicaConfig,
        flush_interval_ms: int,
        *,
        partitions: int = 1,
        legacy_hw_truncation: bool = False,
    ) -> None:
        self.sim = sim
        self.broker_id = broker_id
        self.config = config
        # Behave like a broker before KIP-101, to show what leader epochs prevent.
        self.legacy_hw_truncation = legacy_hw_truncation
        self.disks = [Disk(MemoryLog(flush_interval_ms=flush_interval_ms)) for _ in range(partitions)]
        self.up = True
        self.incarnation = 0
        self.broker_epoch: int | None = None
        # The partitions a crash lost records of; each is cleared when the controller takes
        # the broker back into that partition's ISR (it has caught up again).
        self.lossy: set[int] = set()
        self.crashed_at_ms = 0
        self._held: list[_HeldFetch] = []
        self._verifications: dict[tuple[int, int, int], _Verification] = {}
        self._next_question = 0
        self.drivers = self._start_drivers()

    @property
    def disk(self) -> Disk:
        """Partition 0's disk (the only one in a one-partition run)."""
        return self.disks[0]

    @property
    def driver(self) -> PartitionDriver:
        return self.drivers[0]

    @property
    def replica(self) -> PartitionReplica:
        return self.drivers[0].replica

    # -- life and death -------------------------------------------------------

    def _start_drivers(self) -> list[PartitionDriver]:
        drivers = [self._start_driver(partition) for partition in range(len(self.disks))]
        self.sim.schedule(self.sim.now_ms + self.sim.tick_ms, self._tick, self.incarnation)
        return drivers

    def _start_driver(self, partition: int) -> PartitionDriver:
        disk = self.disks[partition]
        log = disk.log
        producers = load_producers(log, self.sim.now_ms)
        replica = PartitionReplica(
            self.broker_id,
            self.config,
            log_start_offset=log.log_start_offset,
            log_end_offset=log.log_end_offset,
            epoch_entries=disk.epoch_entries,
            high_watermark=disk.high_watermark,
            now_ms=self.sim.now_ms,
            producer_entries=producers,
        )

        def write_epoch_entries(entries: tuple[EpochEntry, ...]) -> None:
            disk.epoch_entries = entries

        return PartitionDriver(
            topic_partition(partition), replica, CheckedLog(self, partition),
            write_epoch_entries=write_epoch_entries, wall_clock_ms=lambda: self.sim.now_ms, sink=self,
        )

    def crash(self) -> int:
        """The process dies: unflushed records are lost; returns how many batches."""
        self.up = False
        self.crashed_at_ms = self.sim.now_ms
        self.incarnation += 1
        self.broker_epoch = None
        self._held.clear()
        self._verifications.clear()
        lost = 0
        for partition, disk in enumerate(self.disks):
            lost_here = disk.log.crash()
            if lost_here:
                self.lossy.add(partition)
            lost += lost_here
        return lost

    def restart(self) -> None:
        self.up = True
        self.drivers = self._start_drivers()
        for partition, driver in enumerate(self.drivers):
            driver.apply()  # a checkpoint naming epochs the crash lost is rewritten
            self.sim.checkers[partition].on_restart(self)
        self._process()

    def flushed(self, partition: int) -> bool:
        log = self.disks[partition].log
        return log.recovery_point >= log.log_end_offset

    def _tick(self, incarnation: int) -> None:
        if incarnation != self.incarnation:
            return
        self.sim.schedule(self.sim.now_ms + self.sim.tick_ms, self._tick, incarnation)
        for driver in self.drivers:
            driver.tick(self.sim.now_ms)
        self._expire_verifications()
        self._process()

    # -- inputs ---------------------------------------------------------------

    def receive(self, source: object, message: object) -> None:
        now_ms = self.sim.now_ms
        if isinstance(message, VerifyTxnReply):
            if message.caller == self.incarnation:
                self._verification_answered(message)
            self._process()
            return
        if isinstance(message, UpdateMetadata):
            if message.broker_epoch == self.broker_epoch:
                for driver in self.drivers:
                    driver.alive_brokers(message.live_brokers)
            self._process()
            return
        driver = self.drivers[message.partition]
        if isinstance(message, Fetch):
            self._answer_or_hold(source, message, driver.fetch(message.request, now_ms))
        elif isinstance(message, LeaderAndIsr):
            if message.broker_epoch != self.broker_epoch:
                return  # meant for an earlier incarnation of this broker
            if self.legacy_hw_truncation:
                driver = self._truncate_to_high_watermark_before_following(message.state)
            driver.leader_and_isr(message.state, now_ms)
            self.sim.checkers[message.partition].on_leader_and_isr(self)
        elif isinstance(message, FetchReply | AlterPartitionReply) and message.caller != self.incarnation:
            return  # an answer to a call made before this process (re)started
        elif isinstance(message, FetchReply):
            driver.fetch_response(message.fetch_id, message.response, now_ms)
        elif isinstance(message, Produce):
            self._produce(source, message)
        elif isinstance(message, AlterPartitionReply):
            driver.alter_partition_response(message.proposal_id, message.response, now_ms)
        else:
            raise TypeError(f"broker {self.broker_id} got {message!r}")
        self._process()

    def delete_records(self, partition: int, request: DeleteRecordsRequest) -> None:
        """An administrator's DeleteRecords, as the service hands it to the partition's driver."""
        self.drivers[partition].delete_records(request, self.sim.now_ms)
        self._process()

    def _truncate_to_high_watermark_before_following(self, state: PartitionState) -> PartitionDriver:
        """The pre-KIP-101 rule: a replica that becomes a follower truncates its log
        to its own high watermark, then fetches from there (a one-partition run's rule)."""
        replica = self.replica
        becomes_follower = state.leader != self.broker_id and state.leader_epoch > replica.leader_epoch
        high_watermark = replica.high_watermark
        if not becomes_follower or self.disk.log.log_end_offset <= high_watermark:
            return self.driver
        CheckedLog(self).truncate_to(high_watermark)
        self.disk.epoch_entries = tuple(e for e in self.disk.epoch_entries if e.start_offset < high_watermark)
        self.incarnation += 1  # a fresh replica reuses fetch and proposal ids
        self.drivers = self._start_drivers()
        return self.driver

    # -- transactions around the driver ---------------------------------------

    def _produce(self, source: object, message: Produce) -> None:
        driver = self.drivers[message.partition]
        producer = message.request.producer
        if producer is not None and driver.is_leader and driver.replica.needs_verification(producer):
            if message.transactional_id is None:
                self._refuse(source, message, ErrorCode.INVALID_TXN_STATE)
                return
            self._verify(source, message)
            return
        driver.produce(message.request, self.sim.now_ms)

    def _refuse(self, source: object, message: Produce, error: ErrorCode) -> None:
        completion = CompleteProduce(message.request.request_id, error)
        self.sim.network.send(self.broker_id, source, ProduceReply(completion, message.partition), self.sim.now_ms)

    def _verify(self, source: object, message: Produce) -> None:
        producer = message.request.producer
        asking = (message.partition, producer.producer_id, producer.producer_epoch)
        verification = self._verifications.get(asking)
        if verification is None:
            self._next_question += 1
            verification = self._verifications[asking] = _Verification(self._next_question, self.sim.now_ms)
            request = AddPartitionsRequest(message.transactional_id, producer.producer_id, producer.producer_epoch,
                                           frozenset({topic_partition(message.partition)}),
                                           verify_only=not producer.leader_add, leader_add=producer.leader_add)
            question = VerifyTxn(verification.question_id, request, self.incarnation)
            self.sim.network.send(self.broker_id, TXN_COORDINATOR, question, self.sim.now_ms)
        verification.waiting.append((source, message))

    def _verification_answered(self, reply: VerifyTxnReply) -> None:
        asking = next((key for key, v in self._verifications.items() if v.question_id == reply.question_id), None)
        if asking is None:
            return  # answered already, or given up
        verification = self._verifications.pop(asking)
        partition = asking[0]
        response = reply.response
        error = response.error
        if error == ErrorCode.NONE:
            error = response.results.get(topic_partition(partition), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        self.sim.checkers[partition].on_verification(self, asking, error)
        driver = self.drivers[partition]
        for source, message in verification.waiting:
            if error != ErrorCode.NONE:
                self._refuse(source, message, error)
                continue
            if driver.is_leader:
                driver.replica.verified(message.request.producer, self.sim.now_ms)
            driver.produce(message.request, self.sim.now_ms)

    def _expire_verifications(self) -> None:
        for asking, verification in list(self._verifications.items()):
            if self.sim.now_ms - verification.asked_ms >= VERIFY_TIMEOUT_MS:
                del self._verifications[asking]
                for source, message in verification.waiting:
                    self._refuse(source, message, ErrorCode.REQUEST_TIMED_OUT)

    # -- PartitionSink: what the driver hands over ----------------------------

    def send_fetch(self, driver: PartitionDriver, message: SendFetch) -> None:
        request = replace(message.request, replica_epoch=self.broker_epoch or -1)
        fetch = Fetch(message.fetch_id, request, self.incarnation, driver.partition)
        self.sim.network.send(self.broker_id, message.leader_id, fetch, self.sim.now_ms)

    def propose_isr(self, driver: PartitionDriver, message: ProposeIsr) -> None:
        self.sim.on_proposal_sent(driver.partition, message.request)
        proposal = AlterPartition(message.proposal_id, message.request, self.incarnation, driver.partition)
        self.sim.network.send(self.broker_id, CONTROLLER, proposal, self.sim.now_ms)

    def complete(self, driver: PartitionDriver, completion: CompleteProduce | CompleteDeleteRecords) -> None:
        if isinstance(completion, CompleteDeleteRecords):
            self.sim.on_records_deleted(self, driver.partition, completion)
            return
        self.sim.checkers[driver.partition].on_completion(self, completion)
        producer = completion.request_id[0]
        self.sim.network.send(self.broker_id, producer, ProduceReply(completion, driver.partition), self.sim.now_ms)

    def data_changed(self, driver: PartitionDriver) -> None:
        # The HW checkpoint follows every move; held fetches look again once the input is handled.
        self.disks[driver.partition].high_watermark = driver.replica.high_watermark

    def isr_changed(self, driver: PartitionDriver, change: IsrChanged) -> None:
        pass

    def role_changed(self, driver: PartitionDriver, before: Role, state: PartitionState) -> None:
        pass

    def truncated(self, driver: PartitionDriver, op: LogOp, log_end_offset_before: int) -> None:
        pass

    def log_start_moved(self, driver: PartitionDriver) -> None:
        pass  # the simulated disk keeps its log's start as it moves

    def storage_failed(self, driver: PartitionDriver, failure: LogOpFailed) -> None:
        raise InvariantViolation(f"broker {self.broker_id}'s memory log refused {failure}")

    # -- the long poll --------------------------------------------------------

    def _process(self) -> None:
        """Look again at held fetches whose partition moved, until none answers any more."""
        for _ in range(PROCESS_ROUNDS_MAX):
            moved = [held for held in self._held if held.changes != self.drivers[held.message.partition].changes]
            if not moved:
                return
            for held in moved:
                driver = self.drivers[held.message.partition]
                plan = driver.fetch(held.message.request, self.sim.now_ms)
                held.changes = driver.changes
                if not plan.quiet:
                    self._held.remove(held)
                    self._answer(held.source, held.message, plan)
        raise InvariantViolation(f"broker {self.broker_id} keeps finding work")

    def _answer_or_hold(self, source: object, message: Fetch, plan: FetchPlan) -> None:
        if not plan.quiet or message.request.max_wait_ms == 0:
            self._answer(source, message, plan)
            return
        self._held.append(_HeldFetch(source, message, self.drivers[message.partition].changes))
        self.sim.schedule(self.sim.now_ms + message.request.max_wait_ms, self._expire_held, self.incarnation, message)

    def _answer(self, source: object, message: Fetch, plan: FetchPlan) -> None:
        driver = self.drivers[message.partition]
        response = fetch_response(plan, driver.read(plan, plan.max_bytes))
        aborted = ()
        if message.request.read_committed and plan.has_data:
            aborted = tuple(driver.log.aborted_transactions(plan.read_offset, plan.max_offset))
        reply = FetchReply(message.fetch_id, response, message.caller, message.partition, plan.last_stable_offset,
                           aborted)
        self.sim.network.send(self.broker_id, source, reply, self.sim.now_ms)

    def _expire_held(self, incarnation: int, message: Fetch) -> None:
        held = next((h for h in self._held if h.message is message), None)
        if incarnation != self.incarnation or held is None:
            return
        self._held.remove(held)
        self._answer(held.source, message, self.drivers[message.partition].fetch(message.request, self.sim.now_ms))
        self._process()
