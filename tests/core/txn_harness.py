"""A transaction coordinator in a test: producer ids from a counter, its records kept as its log, and
the partition leaders' marker answers played by hand."""

from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition
from replog.core.txn.coordinator import TransactionCoordinator
from replog.core.txn.records import decode
from replog.core.txn.requests import (
    AddAnswered,
    AddPartitionsRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    Result,
    TxnConfig,
    WriteMarkers,
)

TOPICS = {"t": 3, "u": 2}
T0, T1, U0 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)
TIMEOUT_MS = 60_000


class Counter:
    def __init__(self, start: int = 1000) -> None:
        self.next = start
        self.exhausted = False

    def take(self) -> int | None:
        if self.exhausted:
            return None
        self.next += 1
        return self.next - 1


class Coordinator:
    """A loaded coordinator, its log (every record it made, encoded and decoded again) and a clock."""

    def __init__(self, coordinator_epoch: int = 5, config: TxnConfig = TxnConfig()) -> None:
        self.ids = Counter()
        self.config = config
        self.core = TransactionCoordinator(config, self.ids, coordinator_epoch)
        self.core.loaded(0)
        self.log: list[tuple[bytes, bytes | None]] = []
        self.now_ms = 1_000
        self.markers: list[WriteMarkers] = []
        self.events: list = []
        # While `hold` is set, results with records wait here, as the driver's writes in flight, for
        # `persist` or `refuse`; otherwise their records are written (and reported) at once.
        self.hold = False
        self.writing: list[Result] = []

    def take(self, result: Result):
        self.events += result.events
        if result.records and self.hold:
            self.writing.append(result)
        else:
            self._written(result)
        return result.response

    def _written(self, result: Result) -> None:
        self.log += [record.encode() for record in result.records]
        self.markers += result.markers
        if result.records:
            self.take(self.core.written(result.records, ErrorCode.NONE, self.now_ms))

    def persist(self) -> None:
        """The oldest write in flight is committed: its records join the log, its markers go out."""
        self._written(self.writing.pop(0))

    def refuse(self, error: ErrorCode = ErrorCode.NOT_ENOUGH_REPLICAS) -> None:
        """The oldest write in flight is refused: nothing of it reaches the log, nor do its markers go out."""
        self.take(self.core.written(self.writing.pop(0).records, error, self.now_ms))

    def init(self, tid: str = "tx", producer_id: int = -1, producer_epoch: int = -1, timeout_ms: int = TIMEOUT_MS):
        return self.take(self.core.init_producer_id(
            InitProducerIdRequest(tid, timeout_ms, producer_id, producer_epoch), self.now_ms))

    def add(self, pid: int, epoch: int, *partitions: TopicPartition, tid: str = "tx", verify_only: bool = False,
            leader_add: bool = False):
        return self.take(self.core.add_partitions(
            AddPartitionsRequest(tid, pid, epoch, frozenset(partitions), verify_only, leader_add), TOPICS,
            self.now_ms))

    def end(self, pid: int, epoch: int, commit: bool, tid: str = "tx"):
        return self.take(self.core.end_txn(EndTxnRequest(tid, pid, epoch, commit), self.now_ms))

    def ack(self, markers: WriteMarkers, error: ErrorCode = ErrorCode.NONE, partitions=None):
        for partition in sorted(markers.partitions if partitions is None else partitions):
            self.take(self.core.marker_written(markers.transactional_id, markers.producer_id, markers.producer_epoch,
                                               partition, error, self.now_ms))

    def ack_all(self):
        while self.markers:
            self.ack(self.markers.pop(0))

    def reload(self, coordinator_epoch: int) -> tuple[TransactionCoordinator, Result]:
        """A new coordinator (a failover) from the log as written so far."""
        core = TransactionCoordinator(self.config, self.ids, coordinator_epoch)
        for key, value in self.log:
            core.replay(decode(key, value))
        return core, core.loaded(self.now_ms)

    def state(self, tid: str = "tx"):
        return self.core.get(tid).state


def started(c: Coordinator, *partitions: TopicPartition) -> tuple[int, int]:
    """A producer's id and epoch, its transaction open on `partitions` (if any)."""
    answer = c.init()
    assert answer.error == ErrorCode.NONE
    if partitions:
        assert c.add(answer.producer_id, answer.producer_epoch, *partitions).error == ErrorCode.NONE
    return answer.producer_id, answer.producer_epoch


def answered(c: Coordinator) -> list[AddAnswered]:
    """The answers given so far to held AddPartitionsToTxn requests."""
    return [event for event in c.events if isinstance(event, AddAnswered)]
