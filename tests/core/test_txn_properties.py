"""Transactions end to end in one process: producers, a coordinator that fails over, partition leaders,
and a network that delays, reorders and delivers twice, under Hypothesis schedules. Whatever the
schedule:

- the coordinator's records only make the moves of Kafka's table;
- given its markers eventually delivered, every transaction ends COMPLETE_COMMIT or COMPLETE_ABORT and
  has its marker on every partition it touched, the same decision everywhere (nothing torn);
- a write, an EndTxn or a marker delivered late never lands in a later transaction (Jepsen 2024);
- the coordinator's writes take time and may be refused (an ISR below min.insync.replicas) while other
  requests arrive, and still its log holds each transactional id's decisions in the order they were made;
- an AddPartitionsToTxn held while the last transaction completes is answered with the write that
  decides it, or CONCURRENT_TRANSACTIONS when it is taken back;
- with transactions v2 (KIP-890 part 2) the partition leaders add their partitions as writes arrive, side
  by side, and the same holds.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from replog.core.errors import ErrorCode
from replog.core.producer_state import ProducerAppend, ProducerStates
from replog.core.topic_partition import TopicPartition
from replog.core.txn.coordinator import TransactionCoordinator
from replog.core.txn.markers import TxnMarker
from replog.core.txn.records import decode
from replog.core.txn.requests import (
    AddAnswered,
    AddHeld,
    AddPartitionsRequest,
    AddPartitionsResponse,
    EndTxnRequest,
    InitProducerIdRequest,
    Result,
    TxnConfig,
)
from replog.core.txn.state import NEXT_STATES, TxnState

from .txn_harness import Counter

PARTITIONS = (TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0))
TOPICS = {"t": 2, "u": 1}
TIDS = ("a", "b")
TIMEOUT_MS = 10_000


@dataclass
class Write:
    tid: str
    producer_id: int
    epoch: int
    partition: TopicPartition
    leader_add: bool = False  # transactions v2: the partition's leader adds it for the producer


@dataclass
class End:
    request: EndTxnRequest
    answered_ok: bool = False


@dataclass
class Marker:
    producer_id: int
    epoch: int
    coordinator_epoch: int
    commit: bool
    partition: TopicPartition
    tid: str


@dataclass
class Producer:
    producer_id: int = -1
    epoch: int = -1
    partitions: set = field(default_factory=set)


class World:
    def __init__(self) -> None:
        self.ids = Counter()
        self.coordinator_epoch = 1
        self.coordinator = TransactionCoordinator(TxnConfig(), self.ids, self.coordinator_epoch)
        self.coordinator.loaded(0)
        self.log: list[tuple[bytes, bytes | None]] = []
        self.partitions = {p: ProducerStates() for p in PARTITIONS}
        self.items = {p: [] for p in PARTITIONS}  # what each partition's log holds: ("data", pid, epoch) / marker
        self.sequences: dict = {}
        self.producers = {tid: Producer() for tid in TIDS}
        self.network: list = []  # in flight, any order
        self.delivered: list = []  # delivered once: may come again, late
        # The coordinator's writes in flight, in the order it made them, each with what to do with its answer
        # once the write is committed (the driver answers only then; a refused write is an error to the client).
        self.writing: list[tuple[Result, Callable | None]] = []
        # transactional id -> (partitions, answer) of each of its held AddPartitionsToTxn
        self.held: dict[str, list[tuple[frozenset, Callable]]] = {}
        self.now_ms = 1_000

    # -- the coordinator's side ------------------------------------------------------------------------

    def take(self, result: Result, answered: Callable | None = None) -> None:
        """The driver: a result with records is written first; its markers and answer wait for that. A held
        add waits for the result that decides it."""
        if isinstance(result.response, AddHeld):
            self.held.setdefault(result.response.transactional_id, []).append((result.response.partitions, answered))
        elif result.records:
            self.writing.append((result, answered))
        else:
            self.sent(result, answered)

    def sent(self, result: Result, answered: Callable | None) -> None:
        for markers in result.markers:
            self.network += [Marker(markers.producer_id, markers.producer_epoch, markers.coordinator_epoch,
                                    markers.commit, p, markers.transactional_id) for p in sorted(markers.partitions)]
        if answered is not None:
            answered(result.response)
        for event in result.events:
            if isinstance(event, AddAnswered):
                # Every held add whose partitions the write put in the transaction, those held after the
                # decision too (a later AddAnswered for them then finds none).
                waiting = self.held.get(event.transactional_id, [])
                for item in list(waiting):
                    response = event.answer_for(item[0])
                    if response is not None:
                        waiting.remove(item)
                        item[1](response)

    def persist(self) -> None:
        """The oldest write in flight is committed (the high watermark passes writes in log order)."""
        result, answered = self.writing.pop(0)
        self.log += [record.encode() for record in result.records]
        self.sent(result, answered)
        self.take(self.coordinator.written(result.records, ErrorCode.NONE, self.now_ms))

    def refuse(self, pick: int) -> None:
        """A write in flight is refused (NOT_ENOUGH_REPLICAS): nothing of it reaches the log."""
        result, _ = self.writing.pop(pick % len(self.writing))
        self.take(self.coordinator.written(result.records, ErrorCode.NOT_ENOUGH_REPLICAS, self.now_ms))

    def release(self, tid: str) -> None:
        """The driver stops holding an add: CONCURRENT_TRANSACTIONS, unless its records are being written."""
        if self.held.get(tid):
            partitions, answered = self.held[tid][0]
            if self.coordinator.release_held(tid, partitions):
                self.held[tid].pop(0)
                answered(AddPartitionsResponse(ErrorCode.CONCURRENT_TRANSACTIONS))

    def failover(self, pick: int) -> None:
        """The coordinator's broker dies: of its writes in flight, the first few made it into the log the
        next leader has, unanswered; the rest are lost."""
        kept = pick % (len(self.writing) + 1)
        for result, _ in self.writing[:kept]:
            self.log += [record.encode() for record in result.records]
        self.writing = []
        self.held = {}  # unanswered: their producers ask the next coordinator
        self.coordinator_epoch += 1
        self.coordinator = TransactionCoordinator(TxnConfig(), self.ids, self.coordinator_epoch)
        for key, value in self.log:
            self.coordinator.replay(decode(key, value))
        self.take(self.coordinator.loaded(self.now_ms))

    # -- the producers ---------------------------------------------------------------------------------

    def init(self, tid: str) -> None:
        def answered(answer) -> None:
            if answer.error == ErrorCode.NONE:
                self.producers[tid] = Producer(answer.producer_id, answer.producer_epoch)
        self.take(self.coordinator.init_producer_id(InitProducerIdRequest(tid, TIMEOUT_MS), self.now_ms), answered)

    def send(self, tid: str, partition: TopicPartition) -> None:
        producer = self.producers[tid]
        if producer.producer_id < 0:
            self.init(tid)
            return
        if partition in producer.partitions:
            self.network.append(Write(tid, producer.producer_id, producer.epoch, partition))
            return

        def answered(answer) -> None:
            if (answer.error == ErrorCode.NONE and answer.results[partition] == ErrorCode.NONE
                    and self.producers[tid] is producer):
                producer.partitions.add(partition)
                self.network.append(Write(tid, producer.producer_id, producer.epoch, partition))
        self.take(self.coordinator.add_partitions(
            AddPartitionsRequest(tid, producer.producer_id, producer.epoch, frozenset({partition})), TOPICS,
            self.now_ms), answered)

    def send_v2(self, tid: str, partition: TopicPartition) -> None:
        """A write of a producer on transactions v2: it adds nothing itself; the leader adds the partition."""
        producer = self.producers[tid]
        if producer.producer_id < 0:
            self.init(tid)
            return
        self.network.append(Write(tid, producer.producer_id, producer.epoch, partition, leader_add=True))

    def send_unadded(self, tid: str, partition: TopicPartition) -> None:
        """A write to a partition the producer never added (a client bug, or a write that outlived the
        AddPartitionsToTxn it followed): only the leader's verification keeps it out."""
        producer = self.producers[tid]
        if producer.producer_id >= 0:
            self.network.append(Write(tid, producer.producer_id, producer.epoch, partition))

    def end(self, tid: str, commit: bool) -> None:
        producer = self.producers[tid]
        if producer.producer_id >= 0:
            self.network.append(End(EndTxnRequest(tid, producer.producer_id, producer.epoch, commit)))

    # -- delivery --------------------------------------------------------------------------------------

    def deliver(self, message, again: bool = False) -> None:
        if isinstance(message, Write):
            self.deliver_write(message)
        elif isinstance(message, Marker):
            self.deliver_marker(message)
        else:
            self.deliver_end(message, again)

    def deliver_write(self, write: Write) -> None:
        states = self.partitions[write.partition]
        key = (write.partition, write.producer_id, write.epoch)
        sequence = self.sequences.get(key, 0)
        append = ProducerAppend(write.producer_id, write.epoch, sequence, sequence, transactional=True)
        if states.needs_verification(append) and write.leader_add:
            def added(answer) -> None:
                if answer.error == ErrorCode.NONE and answer.results[write.partition] == ErrorCode.NONE:
                    states.verified(write.producer_id, write.epoch, self.now_ms)
                    self.deliver_write(write)
            self.take(self.coordinator.add_partitions(AddPartitionsRequest(
                write.tid, write.producer_id, write.epoch, frozenset({write.partition}), leader_add=True), TOPICS,
                self.now_ms), added)
            return
        if states.needs_verification(append):
            answer = self.coordinator.add_partitions(AddPartitionsRequest(
                write.tid, write.producer_id, write.epoch, frozenset({write.partition}), verify_only=True), TOPICS,
                self.now_ms).response
            if answer.error != ErrorCode.NONE or answer.results[write.partition] != ErrorCode.NONE:
                return
            states.verified(write.producer_id, write.epoch, self.now_ms)
        check = states.check(append)
        if check.error != ErrorCode.NONE or check.duplicate_of is not None:
            return
        offset = len(self.items[write.partition])
        states.update(append, offset, offset, self.now_ms)
        self.items[write.partition].append(("data", write.producer_id, write.epoch))
        self.sequences[key] = sequence + 1

    def deliver_marker(self, m: Marker) -> None:
        states = self.partitions[m.partition]
        marker = TxnMarker(m.producer_id, m.epoch, m.coordinator_epoch, m.commit)
        error = states.check_marker(marker).error
        if error == ErrorCode.NONE:
            offset = len(self.items[m.partition])
            states.complete(marker, offset, self.now_ms)
            states.forget_stable(offset + 1)
            self.items[m.partition].append(marker)
        self.take(self.coordinator.marker_written(m.tid, m.producer_id, m.epoch, m.partition, error, self.now_ms))

    def deliver_end(self, end: End, again: bool) -> None:
        result = self.coordinator.end_txn(end.request, self.now_ms)
        if again and end.answered_ok:
            assert not result.records, "a late copy of an EndTxn that succeeded wrote again"

        def answered(answer) -> None:
            if answer.error == ErrorCode.NONE:
                end.answered_ok = True
                tid = end.request.transactional_id
                producer = self.producers[tid]
                if (producer.producer_id, producer.epoch) == (end.request.producer_id, end.request.producer_epoch):
                    self.producers[tid] = Producer(answer.producer_id, answer.producer_epoch)
        self.take(result, answered)

    def settle(self) -> None:
        """Every write in flight committed, every marker delivered, until nothing is left to do."""
        for _ in range(1000):
            if self.writing:
                self.persist()
                continue
            markers = [m for m in self.network if isinstance(m, Marker)]
            if not markers:
                return
            for marker in markers:
                self.network.remove(marker)
                self.deliver(marker)
        raise AssertionError("markers and writes kept coming")


STEPS = st.lists(st.tuples(st.sampled_from(["init", "send", "send", "send", "v2send", "v2send", "commit", "abort",
                                            "deliver", "deliver",
                                            "deliver", "deliver", "again", "tick", "failover", "unadded",
                                            "persist", "persist", "persist", "refuse", "release"]),
                           st.sampled_from(TIDS), st.sampled_from(PARTITIONS), st.integers(0, 100)),
                 min_size=10, max_size=100)


@settings(max_examples=500, deadline=None)
@given(STEPS)
def test_transactions_end_whole_on_every_partition_and_late_messages_change_nothing(steps):
    world = World()
    for action, tid, partition, pick in steps:
        if action == "init":
            world.init(tid)
        elif action == "send":
            world.send(tid, partition)
        elif action == "v2send":
            world.send_v2(tid, partition)
        elif action in ("commit", "abort"):
            world.end(tid, action == "commit")
        elif action == "unadded":
            world.send_unadded(tid, partition)
        elif action == "deliver" and world.network:
            message = world.network.pop(pick % len(world.network))
            world.deliver(message)
            world.delivered.append(message)
        elif action == "again" and world.delivered:
            world.deliver(world.delivered[pick % len(world.delivered)], again=True)
        elif action == "tick":
            world.now_ms += pick * 200
            world.take(world.coordinator.tick(world.now_ms))
        elif action == "failover":
            world.failover(pick)
        elif action == "persist" and world.writing:
            world.persist()
        elif action == "refuse" and world.writing:
            world.refuse(pick)
        elif action == "release":
            world.release(tid)

    # Every producer goes silent; the coordinator times out what is open and the markers get through.
    world.network = [m for m in world.network if isinstance(m, Marker)]
    world.settle()
    world.now_ms += 10 * TIMEOUT_MS
    world.take(world.coordinator.tick(world.now_ms))
    world.settle()
    check_the_log_only_makes_the_tables_moves(world)
    check_every_transaction_ended_everywhere_the_same_way(world)


def check_the_log_only_makes_the_tables_moves(world: World) -> None:
    last: dict[str, TxnState] = {}
    for key, value in world.log:
        record = decode(key, value)
        if record.metadata is None:
            last.pop(record.transactional_id, None)
            continue
        before = last.get(record.transactional_id)
        assert before is None or record.metadata.state in NEXT_STATES[before]
        last[record.transactional_id] = record.metadata.state
    for metadata in world.coordinator.transactions():
        assert metadata.state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)


def check_every_transaction_ended_everywhere_the_same_way(world: World) -> None:
    decisions = {}  # (producer id, marker epoch) -> commit, from the coordinator's PREPARE_* records
    touched = {}
    for key, value in world.log:
        metadata = decode(key, value).metadata
        if metadata is not None and metadata.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            ended = (metadata.producer_id, metadata.producer_epoch)
            decisions[ended] = metadata.state is TxnState.PREPARE_COMMIT
            touched[ended] = metadata.partitions
    for partition, items in world.items.items():
        open_epochs: dict[int, set[int]] = {}
        for item in items:
            if isinstance(item, TxnMarker):
                ended = (item.producer_id, item.producer_epoch)
                assert decisions[ended] == item.commit, f"a torn transaction {ended} on {partition}"
                assert partition in touched[ended]
                data_epochs = open_epochs.pop(item.producer_id, set())
                assert data_epochs <= {item.producer_epoch - 1}, \
                    f"writes of epochs {data_epochs} ended by the marker of epoch {item.producer_epoch}"
            else:
                _, producer_id, epoch = item
                open_epochs.setdefault(producer_id, set()).add(epoch)
        assert open_epochs == {}, f"{partition} still has transactions open: {open_epochs}"
        assert world.partitions[partition].open_transactions() == ()
    for ended, partitions in touched.items():
        for partition in partitions:
            assert any(isinstance(i, TxnMarker) and (i.producer_id, i.producer_epoch) == ended
                       for i in world.items[partition]), f"{partition} never got the marker of {ended}"
