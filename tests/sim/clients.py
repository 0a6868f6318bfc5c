"""Simulated producers and consumers, which find the leader from the controller's
registration (the metadata service) and talk to it over the simulated network.
Each works on one partition. The idempotent and transactional producers are in txn.py."""

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from replog.core.errors import ErrorCode
from replog.core.log import MemoryBatch
from replog.core.messages import ACKS_ALL, CONSUMER_REPLICA_ID, NO_LEADER, FetchRequest, ProduceRequest
from replog.core.txn.read_committed import FetchedBatch, read_committed

from .wire import Fetch, FetchReply, Produce, ProduceReply

if TYPE_CHECKING:
    from .simulation import Simulation


@dataclass(frozen=True)
class Record:
    """A record as a read_committed consumer's rule takes it: its offset and value."""

    offset: int
    value: bytes


def fetched_batch(batch: MemoryBatch) -> FetchedBatch:
    """What the read_committed rule needs of a batch (replog.protocol.control.fetched_batch for the wire)."""
    control = batch.marker.control_type if batch.marker is not None else None
    records = tuple(Record(batch.base_offset + i, value) for i, value in enumerate(batch.records))
    return FetchedBatch(batch.base_offset, batch.last_offset, batch.producer_id,
                        batch.transactional or control is not None, control, records)


@dataclass(frozen=True)
class Acknowledged:
    base_offset: int
    payload: bytes
    acks: int


class Producer:
    """Sends one-record batches, at most `in_flight_max` at a time; retries what fails.

    Without idempotence a retry after a lost answer may write a record twice;
    the checks key acknowledged writes by offset, which stays exact.
    """

    def __init__(
        self,
        sim: "Simulation",
        address: str,
        *,
        acks_all_ratio: float,
        interval_ms: int,
        request_timeout_ms: int,
        in_flight_max: int = 5,
        automatic: bool = True,
        partition: int = 0,
    ) -> None:
        self.sim = sim
        self.address = address
        self.partition = partition
        self.up = True
        # An automatic producer writes a new record every interval_ms; a scripted
        # one only on send(). Either retries until `active` is turned off.
        self.automatic = automatic
        self.active = True
        self.acks_all_ratio = acks_all_ratio
        self.interval_ms = interval_ms
        self.request_timeout_ms = request_timeout_ms
        self.in_flight_max = in_flight_max
        self.acknowledged: list[Acknowledged] = []
        self._retry: deque[bytes] = deque()
        self._in_flight: dict[tuple, tuple[bytes, int]] = {}
        self._next_request = 0
        self._next_payload = 0
        sim.schedule(sim.now_ms + sim.rng.randint(0, interval_ms), self._tick)

    @property
    def idle(self) -> bool:
        return not self._in_flight

    def _tick(self) -> None:
        sim = self.sim
        sim.schedule(sim.now_ms + self.interval_ms, self._tick)
        for request_id, (payload, sent_ms) in list(self._in_flight.items()):
            # A little past the leader's own timeout, whose answer may still come.
            if sim.now_ms - sent_ms > self.request_timeout_ms + 200:
                del self._in_flight[request_id]
                if self.active:
                    self._retry.append(payload)
        if self.active and len(self._in_flight) < self.in_flight_max:
            if self._retry:
                self._send(self._retry.popleft())
            elif self.automatic:
                self._send(self._new_payload())

    def _new_payload(self) -> bytes:
        self._next_payload += 1
        return f"{self.address}#{self._next_payload}".encode()

    def send(self, payload: bytes, acks: int = ACKS_ALL) -> None:
        """Write one record now (for scripted scenarios); retried like any other until answered."""
        self._send(payload, acks)

    def _send(self, payload: bytes, acks: int | None = None) -> None:
        sim = self.sim
        state = sim.controller.states[self.partition]
        if state.leader == NO_LEADER:
            self._retry.appendleft(payload)
            return
        if acks is None:
            acks = ACKS_ALL if sim.rng.random() < self.acks_all_ratio else 1
        self._next_request += 1
        request_id = (self.address, self._next_request, acks)
        request = ProduceRequest(
            request_id=request_id,
            records=(MemoryBatch((payload,)),),
            record_count=1,
            acks=acks,
            timeout_ms=self.request_timeout_ms,
            current_leader_epoch=state.leader_epoch,
        )
        self._in_flight[request_id] = (payload, sim.now_ms)
        sim.network.send(self.address, state.leader, Produce(request, self.partition), sim.now_ms)

    def receive(self, source: object, message: object) -> None:
        if not isinstance(message, ProduceReply):
            raise TypeError(f"producer got {message!r}")
        completion = message.completion
        entry = self._in_flight.pop(completion.request_id, None)
        if entry is None:
            return
        payload = entry[0]
        if completion.error == ErrorCode.NONE:
            self.acknowledged.append(Acknowledged(completion.base_offset, payload, completion.request_id[2]))
        elif self.active:
            self._retry.append(payload)


class Consumer:
    """Reads the partition from offset 0, validating its position by leader epoch (KIP-320).

    A read_committed consumer reads up to the last stable offset and keeps the records the core's
    rule (replog.core.txn.read_committed) gives the application, in `visible`."""

    def __init__(
        self, sim: "Simulation", address: str, *, interval_ms: int, max_wait_ms: int, validate_epochs: bool = True,
        partition: int = 0, read_committed: bool = False,
    ) -> None:
        self.sim = sim
        self.address = address
        self.partition = partition
        self.read_committed = read_committed
        self.visible: list[Record] = []
        self.up = True
        self.interval_ms = interval_ms
        self.max_wait_ms = max_wait_ms
        # Without epoch validation the consumer sends no last fetched epoch, as
        # consumers before KIP-320 did: a truncation then goes unnoticed.
        self.validate_epochs = validate_epochs
        self.active = True
        self.position = 0
        self.last_fetched_epoch = -1
        self.records: dict[int, MemoryBatch] = {}
        self.consumed_offsets: list[int] = []
        # (position, end offset) each time the leader reported our position past
        # the end of our last epoch: records we read were truncated away.
        self.truncations: list[tuple[int, int]] = []
        # (position, log start) each time the records at our position had been deleted (auto.offset.reset=earliest).
        self.resets: list[tuple[int, int]] = []
        self._in_flight: tuple[int, int] | None = None
        self._last_fetch_id = 0
        sim.schedule(sim.now_ms + sim.rng.randint(0, interval_ms), self._tick)

    def _tick(self) -> None:
        sim = self.sim
        sim.schedule(sim.now_ms + self.interval_ms, self._tick)
        if self._in_flight is not None and sim.now_ms - self._in_flight[1] > 4 * self.max_wait_ms:
            self._in_flight = None
        if self._in_flight is None and self.active:
            self._fetch()

    def _fetch(self) -> None:
        sim = self.sim
        state = sim.controller.states[self.partition]
        if state.leader == NO_LEADER:
            return
        self._last_fetch_id += 1
        request = FetchRequest(
            replica_id=CONSUMER_REPLICA_ID,
            fetch_offset=self.position,
            max_bytes=4096,
            last_fetched_epoch=self.last_fetched_epoch if self.validate_epochs else -1,
            current_leader_epoch=state.leader_epoch,
            max_wait_ms=self.max_wait_ms,
            read_committed=self.read_committed,
        )
        self._in_flight = (self._last_fetch_id, sim.now_ms)
        fetch = Fetch(self._last_fetch_id, request, partition=self.partition)
        sim.network.send(self.address, state.leader, fetch, sim.now_ms)

    def receive(self, source: object, message: object) -> None:
        if not isinstance(message, FetchReply):
            raise TypeError(f"consumer got {message!r}")
        if self._in_flight is None or message.fetch_id != self._in_flight[0]:
            return
        self._in_flight = None
        response = message.response
        if response.error == ErrorCode.OFFSET_OUT_OF_RANGE and self.position < response.log_start_offset:
            self.resets.append((self.position, response.log_start_offset))  # DeleteRecords took them
            self.position = response.log_start_offset
            self.last_fetched_epoch = -1  # the new position's epoch is unknown: no record before it was read
            return
        if response.error != ErrorCode.NONE:
            return
        if response.diverging_epoch is not None:
            diverging = response.diverging_epoch
            self.truncations.append((self.position, diverging.end_offset))
            self.sim.checkers[self.partition].on_consumer_truncation(self, diverging)
            self.position = diverging.end_offset
            self.last_fetched_epoch = diverging.epoch
        checker = self.sim.checkers[self.partition]
        for batch in response.records or ():
            checker.on_consume(self, batch)
            self.records[batch.base_offset] = batch
            self.consumed_offsets.append(batch.base_offset)
            self.position = batch.last_offset + 1
            self.last_fetched_epoch = batch.leader_epoch
        if self.read_committed and response.records:
            visible = read_committed((fetched_batch(b) for b in response.records),
                                     ((a.producer_id, a.first_offset) for a in message.aborted),
                                     message.last_stable_offset)
            self.sim.txn_checker.on_read_committed(self, visible, message.last_stable_offset)
            self.visible += visible
        if response.records and self.active:
            self._fetch()
