"""Idempotent and transactional producers, and the transaction coordinator, in the simulator.

`IdempotentProducer` writes acks=all batches with its producer id, epoch and
sequence numbers, at most five in flight per partition (the five batches a
leader remembers). A batch whose answer is lost, late or an error is sent
again, with the same sequence, to whichever broker leads by then; batches
after it in flight are sent again too, in order. So leaders, old and new, are
offered duplicates: the partition's rule must answer them with their first
offsets and never append them twice.

`TransactionalProducer` runs transactions one after another with KIP-890's
protocol: InitProducerId, AddPartitionsToTxn, transactional batches (sequence
numbers restart at 0 with every epoch), EndTxn commit or abort; on
transactions v2 (`leader_adds`, KIP-890 part 2) it sends no
AddPartitionsToTxn and the partition leaders add their partitions. The EndTxn
answer names the next epoch. Lost calls are retried (a retried EndTxn is
recognised by the coordinator). An error on a batch aborts the transaction,
and so does a commit the coordinator answers TRANSACTION_ABORTABLE (it
aborted the transaction after its timeout): the abort's answer names the
epoch to go on with (KIP-588). PRODUCER_FENCED makes it start again with
InitProducerId, unless a newer instance replaced it (a zombie), which then
stops. `fault()` makes an instance go silent past its transaction
timeout, or be replaced by a new one with the same transactional id.

`TxnCoordinatorNode` runs replog.core.txn's `TransactionCoordinator` as its
own process. Its `__transaction_state` partition is simulated as a single
durable state: the records each operation makes are kept (and shown to the
checker) before the answer or the markers go out, and survive a crash; a
restart loads them into a new coordinator with the next coordinator epoch,
which sends again the markers of every transaction that was ending. An
AddPartitionsToTxn the core holds (it came while the producer's last
transaction completed), a producer's or a leader's, is answered once the
Result deciding it is kept, or CONCURRENT_TRANSACTIONS after ADD_HOLD_MS, as
the broker does. Markers
go to each partition's leader as produce requests carrying the marker
(WriteTxnMarkers), are retried until answered, and leaders ask it to verify
a transaction's first batch on a partition (KIP-890).
"""

from dataclasses import dataclass, field
from random import Random
from typing import TYPE_CHECKING, Any

from replog.core.errors import ErrorCode
from replog.core.log import MemoryBatch
from replog.core.messages import ACKS_ALL, NO_LEADER, ProduceRequest
from replog.core.producer_state import ProducerAppend
from replog.core.txn.coordinator import ADD_HOLD_MS, TransactionCoordinator
from replog.core.txn.markers import TxnMarker
from replog.core.txn.requests import (
    AddAnswered,
    AddHeld,
    AddPartitionsRequest,
    AddPartitionsResponse,
    EndTxnRequest,
    InitProducerIdRequest,
    Result,
    TxnConfig,
    WriteMarkers,
)

from .broker import TOPIC, topic_partition
from .wire import TXN_COORDINATOR, Produce, ProduceReply, TxnCall, TxnCallReply, VerifyTxn, VerifyTxnReply

if TYPE_CHECKING:
    from .simulation import Simulation

IN_FLIGHT_MAX = 5
REQUEST_TIMEOUT_MS = 1_000
# A little past the leader's own timeout, whose answer may still come.
RETRY_AFTER_MS = REQUEST_TIMEOUT_MS + 200
CALL_RETRY_MS = 300
MARKER_RETRY_MS = 200
COORDINATOR_TICK_MS = 100
TIMEOUT_CHECK_MS = 500

RETRIABLE = frozenset({
    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH,
    ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.KAFKA_STORAGE_ERROR,
})
CALL_RETRIABLE = frozenset({ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS})


class ProducerIdCounter:
    """Producer ids never handed out twice (the brokers' blocks, simulated as one counter)."""

    def __init__(self) -> None:
        self.next = 1_000

    def take(self) -> int:
        self.next += 1
        return self.next - 1


# -- producing with sequence numbers ------------------------------------------------------------------


@dataclass
class _Batch:
    payloads: tuple[bytes, ...]
    sequence: int
    attempt: Any = None  # the request id of the send awaiting an answer
    sent_ms: int = 0
    offset: int = -1  # once acknowledged


@dataclass
class _PartitionQueue:
    """One partition's batches from the oldest not yet acknowledged on, by sequence: only the first five
    may be in flight (those a leader remembers), acknowledged or not, so that a retry of the oldest is
    always among the batches the leader can recognise."""

    next_sequence: int = 0
    pending: list[_Batch] = field(default_factory=list)

    def window(self) -> list[_Batch]:
        return [batch for batch in self.pending[:IN_FLIGHT_MAX] if batch.offset < 0]


@dataclass(frozen=True)
class Acked:
    partition: int
    offset: int
    payloads: tuple[bytes, ...]


class _Sequencer:
    """The producer's part of idempotence: sequences per partition, five in flight, retries in order."""

    def __init__(self, sim: "Simulation", address: str) -> None:
        self.sim = sim
        self.address = address
        self.producer_id = -1
        self.producer_epoch = -1
        self.transactional_id: str | None = None
        self.leader_adds = False  # transactions v2: each batch asks its leader to add the partition
        self.queues: dict[int, _PartitionQueue] = {}
        self.acknowledged: list[Acked] = []
        self._next_attempt = 0

    @property
    def sending(self) -> bool:
        return any(queue.pending for queue in self.queues.values())

    def reset(self, producer_id: int, producer_epoch: int) -> None:
        """A new epoch (or id): sequences start at 0 again; whatever was pending is dropped."""
        self.producer_id, self.producer_epoch = producer_id, producer_epoch
        self.queues = {}

    def append(self, partition: int, payloads: tuple[bytes, ...]) -> None:
        queue = self.queues.setdefault(partition, _PartitionQueue())
        queue.pending.append(_Batch(payloads, queue.next_sequence))
        queue.next_sequence += len(payloads)

    def pump(self) -> None:
        """Send what may go: the first five of each partition, those not in flight (or given up on)."""
        now_ms = self.sim.now_ms
        for partition, queue in self.queues.items():
            window = queue.window()
            if any(b.attempt is not None and now_ms - b.sent_ms > RETRY_AFTER_MS for b in window):
                # No answer in time: everything in flight after it goes again too, in order.
                for batch in window:
                    batch.attempt = None
            for batch in window:
                if batch.attempt is None:
                    self._send(partition, batch)

    def _send(self, partition: int, batch: _Batch) -> None:
        sim = self.sim
        state = sim.controller.states[partition]
        if state.leader == NO_LEADER:
            return
        self._next_attempt += 1
        transactional = self.transactional_id is not None
        batch.attempt = (self.address, self._next_attempt, ACKS_ALL, partition, batch.sequence)
        batch.sent_ms = sim.now_ms
        append = ProducerAppend(self.producer_id, self.producer_epoch, batch.sequence,
                                batch.sequence + len(batch.payloads) - 1, transactional,
                                leader_add=transactional and self.leader_adds)
        records = MemoryBatch(batch.payloads, producer_id=self.producer_id, producer_epoch=self.producer_epoch,
                              base_sequence=batch.sequence, transactional=transactional)
        request = ProduceRequest(batch.attempt, (records,), len(batch.payloads), ACKS_ALL, REQUEST_TIMEOUT_MS,
                                 state.leader_epoch, append)
        sim.network.send(self.address, state.leader,
                         Produce(request, partition, self.transactional_id),
                         sim.now_ms)

    def answered(self, reply: ProduceReply) -> tuple[_Batch | None, ErrorCode]:
        """The batch a reply is for (None for an answer to an attempt given up on), and its error."""
        completion = reply.completion
        queue = self.queues.get(reply.partition)
        batch = next((b for b in queue.pending[:IN_FLIGHT_MAX] if b.attempt == completion.request_id),
                     None) if queue else None
        if batch is None:
            return None, completion.error
        batch.attempt = None
        if completion.error == ErrorCode.NONE:
            batch.offset = completion.base_offset
            self.acknowledged.append(Acked(reply.partition, completion.base_offset, batch.payloads))
            while queue.pending and queue.pending[0].offset >= 0:
                queue.pending.pop(0)
        return batch, completion.error


class _Client:
    """A producer process: its address, whether it is up (a silent one hears nothing), whether it is
    active (writing new records) and automatic (writing on its own), ticking every interval_ms."""

    def __init__(self, sim: "Simulation", address: str, *, automatic: bool, interval_ms: int) -> None:
        self.sim = sim
        self.address = address
        self.up = True
        self.active = True
        self.automatic = automatic
        self.interval_ms = interval_ms
        self.sequencer = _Sequencer(sim, address)
        self._next_payload = 0
        sim.schedule(sim.now_ms + sim.rng.randint(0, interval_ms), self._tick)

    def _payload(self) -> bytes:
        self._next_payload += 1
        return f"{self.address}#{self._next_payload}".encode()

    def _tick(self) -> None:
        raise NotImplementedError


class IdempotentProducer(_Client):
    """Writes numbered records to random partitions, idempotently, until told to stop; then finishes
    what it has pending (every record is acknowledged in the end)."""

    def __init__(self, sim: "Simulation", address: str, *, automatic: bool = True, interval_ms: int = 25,
                 pending_max: int = 12) -> None:
        super().__init__(sim, address, automatic=automatic, interval_ms=interval_ms)
        self.pending_max = pending_max
        self.sequencer.reset(sim.producer_ids.take(), 0)

    @property
    def acknowledged(self) -> list[Acked]:
        return self.sequencer.acknowledged

    @property
    def idle(self) -> bool:
        return not self.sequencer.sending

    def send(self, partition: int, count: int = 1) -> tuple[bytes, ...]:
        payloads = tuple(self._payload() for _ in range(count))
        self.sequencer.append(partition, payloads)
        self.sequencer.pump()
        return payloads

    def _tick(self) -> None:
        sim = self.sim
        sim.schedule(sim.now_ms + self.interval_ms, self._tick)
        if self.automatic and self.active:
            partition = sim.rng.randrange(sim.config.partitions)
            queue = self.sequencer.queues.get(partition)
            if queue is None or len(queue.pending) < self.pending_max:
                self.sequencer.append(partition, tuple(self._payload() for _ in range(sim.rng.randint(1, 2))))
        self.sequencer.pump()

    def receive(self, source: object, message: object) -> None:
        if not isinstance(message, ProduceReply):
            raise TypeError(f"{self.address} got {message!r}")
        batch, error = self.sequencer.answered(message)
        if batch is not None and error not in RETRIABLE and error != ErrorCode.NONE:
            self.sim.txn_checker.fail(f"{self.address}'s batch {batch} was refused with {error.name}")

    def describe(self) -> str:
        pending = {p: [(b.sequence, b.attempt is not None) for b in q.pending]
                   for p, q in self.sequencer.queues.items()}
        return f"{self.address}: producer {self.sequencer.producer_id}, pending {pending}"


# -- transactions -----------------------------------------------------------------------------------


@dataclass
class Attempt:
    """One transaction as its producer saw it."""

    producer_id: int
    producer_epoch: int
    partitions: frozenset[int]
    commit: bool  # what it meant to do
    sent: dict[int, list[bytes]] = field(default_factory=dict)
    outcome: str = "open"  # committed, aborted (as EndTxn answered), or unknown (fenced, timed out, stopped)


class TransactionalProducer(_Client):
    """Transactions one after another: InitProducerId, AddPartitionsToTxn, sends, EndTxn."""

    INIT, READY, ADDING, SENDING, ENDING, RETIRED = "init", "ready", "adding", "sending", "ending", "retired"

    def __init__(self, sim: "Simulation", address: str, transactional_id: str, *, automatic: bool = True,
                 interval_ms: int = 50, commit_ratio: float = 0.8, leader_adds: bool = False) -> None:
        super().__init__(sim, address, automatic=automatic, interval_ms=interval_ms)
        self.transactional_id = transactional_id
        self.commit_ratio = commit_ratio
        # A zombie is an instance a newer one replaced: once fenced it stops.
        self.zombie = False
        # A misbehaving client leaves partitions out of AddPartitionsToTxn (what KIP-890's verification is for).
        self.skip_add_partitions = False
        self.sequencer.transactional_id = transactional_id
        self.sequencer.leader_adds = leader_adds
        self.state = self.INIT
        self._planned: dict[int, int] = {}
        self.attempts: list[Attempt] = []
        self.current: Attempt | None = None
        self.fenced = 0
        self._call: tuple[Any, Any, int] | None = None  # (call id, request, sent at)
        self._next_call = 0
        self._silent_until = -1

    @property
    def idle(self) -> bool:
        return self.state in (self.READY, self.RETIRED) or (not self.active and self.state != self.ENDING)

    # -- scripted use -----------------------------------------------------------------------------

    def begin(self, partitions: dict[int, int], commit: bool = True) -> Attempt:
        """Start a transaction writing `count` records to each partition, then committing (or aborting)."""
        assert self.state == self.READY, self.state
        attempt = Attempt(self.sequencer.producer_id, self.sequencer.producer_epoch, frozenset(partitions), commit)
        self._planned = partitions
        self.current = attempt
        self.attempts.append(attempt)
        if self.sequencer.leader_adds:
            self._start_sending()  # transactions v2: the leaders add the partitions as the batches arrive
            return attempt
        self.state = self.ADDING
        added = frozenset(topic_partition(p) for p in partitions)
        if self.skip_add_partitions:
            added = frozenset(sorted(added)[:1])
        self._start_call(AddPartitionsRequest(self.transactional_id, attempt.producer_id, attempt.producer_epoch,
                                              added))
        return attempt

    # -- faults -----------------------------------------------------------------------------------

    def fault(self, rng: Random) -> None:
        """Go silent for longer than the transaction timeout, or be replaced by a new instance."""
        if self.zombie or self.state == self.RETIRED:
            return
        if rng.random() < 0.5:
            self.go_silent(self.sim.config.transaction_timeout_ms + rng.randint(200, 2_000))
        else:
            self.replace()

    def go_silent(self, duration_ms: int) -> None:
        """A long pause (a GC, a stopped process): nothing sent or heard until it ends."""
        self.up = False
        self._silent_until = self.sim.now_ms + duration_ms
        self.sim.schedule(self._silent_until, self._wake)

    def _wake(self) -> None:
        self.up = True

    def replace(self) -> "TransactionalProducer":
        """A new instance with the same transactional id starts; this one lives on as a zombie."""
        self.zombie = True
        return self.sim.add_transactional_producer(self.transactional_id, automatic=self.automatic)

    # -- the loop ---------------------------------------------------------------------------------

    def _tick(self) -> None:
        sim = self.sim
        sim.schedule(sim.now_ms + self.interval_ms, self._tick)
        if not self.up or self.state == self.RETIRED:
            return
        if self._call is not None and sim.now_ms - self._call[2] > CALL_RETRY_MS:
            self._send_call()
        if self.state == self.INIT and self._call is None:
            self._start_call(InitProducerIdRequest(self.transactional_id, sim.config.transaction_timeout_ms))
        elif self.state == self.READY and self.automatic and self.active and not self.zombie:
            count = sim.rng.randint(1, min(3, sim.config.partitions))
            partitions = sim.rng.sample(range(sim.config.partitions), count)
            self.begin({p: sim.rng.randint(1, 3) for p in partitions}, sim.rng.random() < self.commit_ratio)
        elif self.state == self.SENDING:
            if not self.active:
                self._give_up()  # left for the coordinator's timeout to abort
                return
            self.sequencer.pump()
            if not self.sequencer.sending:
                self._end(self.current.commit)

    def _give_up(self) -> None:
        self.current.outcome = "unknown"
        self.current = None
        self.sequencer.queues = {}
        self.state = self.RETIRED

    def _start_call(self, request: Any) -> None:
        self._next_call += 1
        self._call = ((self.address, self._next_call), request, self.sim.now_ms)
        self._send_call()

    def _send_call(self) -> None:
        call_id, request, _ = self._call
        self._call = (call_id, request, self.sim.now_ms)
        self.sim.network.send(self.address, TXN_COORDINATOR, TxnCall(call_id, request), self.sim.now_ms)

    def _end(self, commit: bool) -> None:
        self.state = self.ENDING
        self.sequencer.queues = {}  # an abort leaves its batches behind (still on the network, maybe)
        attempt = self.current
        self._start_call(EndTxnRequest(self.transactional_id, attempt.producer_id, attempt.producer_epoch, commit))

    def _fenced(self) -> None:
        self.fenced += 1
        if self.current is not None:
            self.current.outcome = "unknown"
            self.current = None
        self.sequencer.queues = {}
        self._call = None
        if self.zombie:
            self.state = self.RETIRED
        else:
            self.state = self.INIT  # the application starts the producer again

    def receive(self, source: object, message: object) -> None:
        if isinstance(message, ProduceReply):
            self._produce_answered(message)
        elif isinstance(message, TxnCallReply):
            if self._call is not None and message.call_id == self._call[0]:
                self._call_answered(self._call[1], message.response)
        else:
            raise TypeError(f"{self.address} got {message!r}")

    def _produce_answered(self, reply: ProduceReply) -> None:
        if self.state != self.SENDING:
            return
        batch, error = self.sequencer.answered(reply)
        if batch is None:
            return
        if error == ErrorCode.NONE or error in RETRIABLE:
            return
        if error in (ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH):
            self._end(False)  # the coordinator will say whether it was fenced
        else:  # INVALID_TXN_STATE, TRANSACTION_ABORTABLE, CONCURRENT_TRANSACTIONS, ...: abortable
            self._end(False)

    def _start_sending(self) -> None:
        self.state = self.SENDING
        for partition, count in self._planned.items():
            payloads = tuple(self._payload() for _ in range(count))
            self.current.sent.setdefault(partition, []).extend(payloads)
            self.sequencer.append(partition, payloads)
        self.sequencer.pump()

    def _call_answered(self, request: Any, response: Any) -> None:
        error = response.error
        if error in CALL_RETRIABLE:
            return  # sent again at the next retry
        self._call = None
        if isinstance(request, InitProducerIdRequest):
            if error != ErrorCode.NONE:
                self._fenced()
                return
            self.sequencer.reset(response.producer_id, response.producer_epoch)
            self.state = self.READY
        elif isinstance(request, AddPartitionsRequest):
            if self.state != self.ADDING:
                return
            if error in (ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_ID_MAPPING):
                self._fenced()
                return
            if error != ErrorCode.NONE or any(e != ErrorCode.NONE for e in response.results.values()):
                self._end(False)
                return
            self._start_sending()
        elif isinstance(request, EndTxnRequest):
            if error == ErrorCode.TRANSACTION_ABORTABLE and request.commit:
                self._end(False)  # its coordinator aborted it after its timeout
                return
            if error != ErrorCode.NONE:
                self._fenced()
                return
            self.current.outcome = "committed" if request.commit else "aborted"
            self.current = None
            self.sequencer.reset(response.producer_id, response.producer_epoch)
            self.state = self.READY

    def describe(self) -> str:
        return (f"{self.address} ({self.transactional_id}{', zombie' if self.zombie else ''}): {self.state}, "
                f"producer {self.sequencer.producer_id} epoch {self.sequencer.producer_epoch}, "
                f"{len(self.attempts)} transactions, fenced {self.fenced} times, call {self._call}")


# -- the coordinator ---------------------------------------------------------------------------------


class TxnCoordinatorNode:
    """The transaction coordinator as a process: the core's `TransactionCoordinator` over a durable
    list of records (see the module's docstring)."""

    def __init__(self, sim: "Simulation", *, transaction_timeout_ms: int) -> None:
        self.sim = sim
        self.up = True
        self.records: list = []  # the durable state: every record written, in order
        self.coordinator_epoch = 0
        self.incarnation = 0
        self.transaction_timeout_ms = transaction_timeout_ms
        self.markers_sent = 0
        # (transactional id, producer id, epoch, partition) -> (marker, request id or None when due, sent at)
        self._markers: dict[tuple, tuple[WriteMarkers, Any, int]] = {}
        self._next_request = 0
        self._last_timeout_check = 0
        # transactional id -> its held adds: (partitions, caller, reply to send with the answer)
        self._held_calls: dict[str, list[tuple[frozenset, object, Any]]] = {}
        self.adds_held = 0
        self.adds_released = 0  # held adds answered CONCURRENT_TRANSACTIONS
        self._start()

    def _start(self) -> None:
        self.core = TransactionCoordinator(TxnConfig(), self.sim.producer_ids, self.coordinator_epoch)
        for record in self.records:
            self.core.replay(record)
        self._apply(self.core.loaded(self.sim.now_ms))
        self._send_due_markers()
        self.sim.schedule(self.sim.now_ms + COORDINATOR_TICK_MS, self._tick, self.incarnation)

    def crash(self) -> None:
        self.up = False
        self.incarnation += 1
        self._markers.clear()
        self._held_calls.clear()  # their callers ask again

    def restart(self) -> None:
        if self.up:
            return
        self.up = True
        self.coordinator_epoch += 1
        self._start()

    @property
    def idle(self) -> bool:
        return self.up and not any(m.state.in_transaction for m in self.core.transactions())

    def _apply(self, result: Result) -> Any:
        """Keep the records (durable at once); the markers are due from then on (sent at once after a call,
        at the next tick after a marker's answer asks for it again). The caller sends the answer."""
        self.records += result.records
        for record in result.records:
            self.sim.txn_checker.on_coordinator_record(record)
        if result.records:
            # Durable as soon as kept: the write is reported at once, and may itself decide more.
            self._apply(self.core.written(result.records, ErrorCode.NONE, self.sim.now_ms))
        for markers in result.markers:
            for partition in sorted(markers.partitions):
                key = (markers.transactional_id, markers.producer_id, markers.producer_epoch, partition.partition)
                self._markers[key] = (markers, None, 0)
        for event in result.events:
            if isinstance(event, AddAnswered):
                # Every held add whose partitions the decision put in the transaction (adds held after it too).
                waiting = self._held_calls.get(event.transactional_id, [])
                for held in list(waiting):
                    partitions, caller, reply = held
                    response = event.answer_for(partitions)
                    if response is not None:
                        waiting.remove(held)
                        self._answer_held(caller, reply, response)
        return result.response

    def _answer_held(self, caller: object, reply: Any, response: AddPartitionsResponse) -> None:
        """`reply(response)` is the producer's TxnCallReply or the leader's VerifyTxnReply."""
        self.sim.network.send(TXN_COORDINATOR, caller, reply(response), self.sim.now_ms)

    def _release(self, transactional_id: str, held: tuple, incarnation: int) -> None:
        """The hold is over: a held add not decided yet is answered CONCURRENT_TRANSACTIONS."""
        waiting = self._held_calls.get(transactional_id, [])
        if incarnation != self.incarnation or held not in waiting:
            return
        partitions, caller, reply = held
        if self.core.release_held(transactional_id, partitions):
            waiting.remove(held)
            self.adds_released += 1
            self._answer_held(caller, reply, AddPartitionsResponse(ErrorCode.CONCURRENT_TRANSACTIONS,
                                                                   "the last transaction is still ending"))

    def _send_due_markers(self) -> None:
        now_ms = self.sim.now_ms
        for key, (markers, request_id, sent_ms) in list(self._markers.items()):
            if request_id is not None and now_ms - sent_ms <= RETRY_AFTER_MS:
                continue
            partition = key[3]
            state = self.sim.controller.states[partition]
            if state.leader == NO_LEADER:
                continue
            self._next_request += 1
            request_id = (TXN_COORDINATOR, self._next_request, ACKS_ALL, partition, self.incarnation)
            marker = TxnMarker(markers.producer_id, markers.producer_epoch, markers.coordinator_epoch, markers.commit)
            batch = MemoryBatch((b"COMMIT" if markers.commit else b"ABORT",), producer_id=markers.producer_id,
                                producer_epoch=markers.producer_epoch, marker=marker)
            request = ProduceRequest(request_id, (batch,), 1, ACKS_ALL, REQUEST_TIMEOUT_MS, state.leader_epoch,
                                     marker=marker)
            self._markers[key] = (markers, request_id, now_ms)
            self.markers_sent += 1
            self.sim.network.send(TXN_COORDINATOR, state.leader, Produce(request, partition), now_ms)

    def _tick(self, incarnation: int) -> None:
        if incarnation != self.incarnation:
            return
        now_ms = self.sim.now_ms
        self.sim.schedule(now_ms + COORDINATOR_TICK_MS, self._tick, incarnation)
        if now_ms - self._last_timeout_check >= TIMEOUT_CHECK_MS:
            self._last_timeout_check = now_ms
            self._apply(self.core.tick(now_ms))
        self._send_due_markers()

    def receive(self, source: object, message: object) -> None:
        now_ms = self.sim.now_ms
        if isinstance(message, ProduceReply):
            self._marker_answered(message)
        elif isinstance(message, VerifyTxn):
            request = message.request
            response = self._apply(self.core.add_partitions(request, {TOPIC: self.sim.config.partitions}, now_ms))
            reply = lambda answer: VerifyTxnReply(message.question_id, answer, message.caller)  # noqa: E731
            if isinstance(response, AddHeld):
                self._hold(request.transactional_id, response.partitions, source, reply)
                return
            self.sim.network.send(TXN_COORDINATOR, source, reply(response), now_ms)
        elif isinstance(message, TxnCall):
            request = message.request
            if isinstance(request, InitProducerIdRequest):
                response = self._apply(self.core.init_producer_id(request, now_ms))
            elif isinstance(request, AddPartitionsRequest):
                response = self._apply(self.core.add_partitions(request, {TOPIC: self.sim.config.partitions},
                                                                now_ms))
            else:
                response = self._apply(self.core.end_txn(request, now_ms))
            self._send_due_markers()
            if isinstance(response, AddHeld):
                self._hold(request.transactional_id, response.partitions, source,
                           lambda answer, call_id=message.call_id: TxnCallReply(call_id, answer))
                return
            self.sim.network.send(TXN_COORDINATOR, source, TxnCallReply(message.call_id, response), now_ms)
        else:
            raise TypeError(f"the transaction coordinator got {message!r}")

    def _hold(self, transactional_id: str, partitions: frozenset, caller: object, reply) -> None:
        self.adds_held += 1
        held = (partitions, caller, reply)
        self._held_calls.setdefault(transactional_id, []).append(held)
        self.sim.schedule(self.sim.now_ms + ADD_HOLD_MS, self._release, transactional_id, held, self.incarnation)

    def _marker_answered(self, reply: ProduceReply) -> None:
        completion = reply.completion
        key = next((k for k, (_, request_id, _) in self._markers.items() if request_id == completion.request_id),
                   None)
        if key is None:
            return  # a duplicate, or an answer to a previous incarnation
        self._markers.pop(key)
        tid, producer_id, epoch, partition = key
        self._apply(self.core.marker_written(tid, producer_id, epoch, topic_partition(partition), completion.error,
                                             self.sim.now_ms))

    def describe(self) -> str:
        open_ = [(m.transactional_id, m.state.name, m.producer_id, m.producer_epoch)
                 for m in self.core.transactions() if m.state.in_transaction]
        return (f"coordinator: up={self.up} epoch={self.coordinator_epoch} open={open_} "
                f"markers due={sorted(self._markers)}")
