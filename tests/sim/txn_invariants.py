"""The invariants of idempotence and transactions, checked as the simulation runs (DESIGN §14).

The checker reads each partition's committed log in offset order (every batch
as it first falls below some replica's high watermark, from the per-partition
`Checker`), the coordinator's records as it writes them, what read_committed
consumers are given, and what producers were told. From the log alone it
replays which transaction each batch belongs to, with its own simple rule: a
producer's transactional batches belong to its open transaction on the
partition, which its next marker closes.

- No duplicate: no record of an idempotent or transactional producer is
  appended twice; within a producer epoch on a partition the sequences follow
  each other (the producer's order is kept).
- A marker carries a decision the coordinator wrote (PREPARE_COMMIT or
  PREPARE_ABORT with the marker's producer id and epoch), the same way, for a
  partition of that transaction; it closes data of the epoch just before it
  (KIP-890's bump), never a later transaction's (a torn transaction).
- read_committed never shows a record of an aborted or undecided transaction,
  nor one at or past the last stable offset, nor one not committed.
- Once the run has quiesced: no transaction is open on any partition, every
  partition of every decided transaction has its marker, each read_committed
  consumer has read exactly the committed records of its partition (all of a
  committed transaction, on every partition, or none of an aborted one), every
  acknowledged idempotent record is in the log once, and what producers were
  told (committed, aborted) is what happened.
"""

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from replog.core.log import MemoryBatch
from replog.core.producer_state import next_sequence
from replog.core.txn.records import TxnRecord
from replog.core.txn.state import TxnState

from .invariants import InvariantBroken

if TYPE_CHECKING:
    from .clients import Consumer, Record
    from .simulation import Simulation


@dataclass(frozen=True)
class Decision:
    transactional_id: str
    commit: bool
    partitions: frozenset[int]


@dataclass(eq=False)
class TxnOnPartition:
    """A producer's transaction on one partition, as the log shows it."""

    producer_id: int
    producer_epoch: int  # of its data
    first_offset: int
    outcome: str | None = None  # "commit" or "abort" once its marker is committed


@dataclass
class _PartitionView:
    open: dict[int, TxnOnPartition] = field(default_factory=dict)
    # offset -> (record, its transaction or None) for every data record
    records: dict[int, tuple[bytes, TxnOnPartition | None]] = field(default_factory=dict)
    payloads: set[bytes] = field(default_factory=set)
    last_sequence: dict[tuple[int, int], int] = field(default_factory=dict)
    markers: set[tuple[int, int, bool]] = field(default_factory=set)


class TxnChecker:
    def __init__(self, sim: "Simulation", *, raise_on_violation: bool = True) -> None:
        self.sim = sim
        self.raise_on_violation = raise_on_violation
        self.violations: list[str] = []
        self.decisions: dict[tuple[int, int], Decision] = {}
        self.views = [_PartitionView() for _ in range(sim.config.partitions)]
        self.read_committed_records = 0

    def fail(self, message: str) -> None:
        message = f"t={self.sim.now_ms}ms: {message}"
        if self.raise_on_violation:
            raise InvariantBroken(message)
        self.violations.append(message)

    # -- the coordinator's decisions --------------------------------------------------------------

    def on_coordinator_record(self, record: TxnRecord) -> None:
        metadata = record.metadata
        if metadata is None or metadata.state not in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return
        key = (metadata.producer_id, metadata.producer_epoch)
        decision = Decision(metadata.transactional_id, metadata.state is TxnState.PREPARE_COMMIT,
                            frozenset(p.partition for p in metadata.partitions))
        if self.decisions.setdefault(key, decision) != decision:
            self.fail(f"the coordinator decided twice for producer {key[0]} epoch {key[1]}: "
                      f"{self.decisions[key]} and {decision}")

    # -- the committed log, batch by batch in offset order ----------------------------------------

    def on_committed(self, partition: int, batch: MemoryBatch) -> None:
        view = self.views[partition]
        if batch.marker is not None:
            self._marker(partition, view, batch)
            return
        txn = None
        if batch.transactional:
            txn = view.open.get(batch.producer_id)
            if txn is None:
                txn = view.open[batch.producer_id] = TxnOnPartition(batch.producer_id, batch.producer_epoch,
                                                                    batch.base_offset)
            elif txn.producer_epoch != batch.producer_epoch:
                self.fail(f"partition {partition}: {batch} of epoch {batch.producer_epoch} joined the open "
                          f"transaction of producer {txn.producer_id} epoch {txn.producer_epoch} "
                          f"(from offset {txn.first_offset})")
        if batch.producer_id != -1:
            self._check_once_and_in_order(partition, view, batch)
        for i, record in enumerate(batch.records):
            view.records[batch.base_offset + i] = (record, txn)

    def _check_once_and_in_order(self, partition: int, view: _PartitionView, batch: MemoryBatch) -> None:
        for record in batch.records:
            if record in view.payloads:
                self.fail(f"partition {partition}: {record!r} appended twice (again at offset {batch.base_offset})")
            view.payloads.add(record)
        key = (batch.producer_id, batch.producer_epoch)
        last = view.last_sequence.get(key)
        expected = 0 if last is None else next_sequence(last)
        if batch.base_sequence != expected:
            self.fail(f"partition {partition}: producer {key[0]} epoch {key[1]} wrote sequence "
                      f"{batch.base_sequence} at offset {batch.base_offset}; the next one was {expected}")
        view.last_sequence[key] = batch.base_sequence + len(batch.records) - 1

    def _marker(self, partition: int, view: _PartitionView, batch: MemoryBatch) -> None:
        marker = batch.marker
        kind = "COMMIT" if marker.commit else "ABORT"
        decision = self.decisions.get((marker.producer_id, marker.producer_epoch))
        if decision is None:
            self.fail(f"partition {partition}: a {kind} marker at {batch.base_offset} for producer "
                      f"{marker.producer_id} epoch {marker.producer_epoch}, which the coordinator never decided")
        elif decision.commit != marker.commit or partition not in decision.partitions:
            self.fail(f"partition {partition}: a {kind} marker at {batch.base_offset} for producer "
                      f"{marker.producer_id} epoch {marker.producer_epoch}; the coordinator decided {decision}")
        view.markers.add((marker.producer_id, marker.producer_epoch, marker.commit))
        txn = view.open.pop(marker.producer_id, None)
        if txn is None:
            return
        if txn.producer_epoch != marker.producer_epoch - 1:
            self.fail(f"partition {partition}: the {kind} marker of epoch {marker.producer_epoch} at "
                      f"{batch.base_offset} closed producer {txn.producer_id}'s transaction of epoch "
                      f"{txn.producer_epoch} (from offset {txn.first_offset}): a torn transaction")
        txn.outcome = "commit" if marker.commit else "abort"

    # -- read_committed consumers ---------------------------------------------------------------------

    def on_read_committed(self, consumer: "Consumer", visible: list["Record"], last_stable_offset: int) -> None:
        view = self.views[consumer.partition]
        for record in visible:
            self.read_committed_records += 1
            where = f"{consumer.address} (partition {consumer.partition}) was given {record.value!r} at {record.offset}"
            if record.offset >= last_stable_offset:
                self.fail(f"{where}, at or past the last stable offset {last_stable_offset}")
            known = view.records.get(record.offset)
            if known is None or known[0] != record.value:
                self.fail(f"{where}; the committed log has {known and known[0]!r} there")
                continue
            txn = known[1]
            if txn is not None and txn.outcome != "commit":
                self.fail(f"{where}, a record of producer {txn.producer_id}'s "
                          f"{'aborted' if txn.outcome == 'abort' else 'undecided'} transaction of epoch "
                          f"{txn.producer_epoch}")

    # -- at the end, once the run has quiesced --------------------------------------------------------

    def visible(self, partition: int) -> list[tuple[int, bytes]]:
        """What read_committed must show of a partition: non-transactional and committed records."""
        return [(offset, record) for offset, (record, txn) in sorted(self.views[partition].records.items())
                if txn is None or txn.outcome == "commit"]

    def final_check(self) -> None:
        sim = self.sim
        if not (sim.idempotent_producers or sim.transactional_producers or self.decisions):
            return
        visible = {partition: self.visible(partition) for partition in sim.partitions}
        visible_values = {partition: {record for _, record in records} for partition, records in visible.items()}
        for partition, view in enumerate(self.views):
            for txn in view.open.values():
                self.fail(f"partition {partition}: producer {txn.producer_id}'s transaction of epoch "
                          f"{txn.producer_epoch} from offset {txn.first_offset} was never ended")
        for (producer_id, epoch), decision in self.decisions.items():
            for partition in decision.partitions:
                if (producer_id, epoch, decision.commit) not in self.views[partition].markers:
                    self.fail(f"partition {partition} has no marker of {decision} (producer {producer_id} "
                              f"epoch {epoch})")
        for consumer in sim.consumers:
            if consumer.read_committed:
                seen = [(record.offset, record.value) for record in consumer.visible]
                if seen != visible[consumer.partition]:
                    self.fail(f"{consumer.address} read {len(seen)} records of partition {consumer.partition}, "
                              f"the committed ones are {len(visible[consumer.partition])}: first difference "
                              f"{_first_difference(seen, visible[consumer.partition])}")
        for producer in sim.idempotent_producers:
            for acked in producer.acknowledged:
                records = self.views[acked.partition].records
                for i, payload in enumerate(acked.payloads):
                    if records.get(acked.offset + i, (None,))[0] != payload:
                        self.fail(f"{producer.address}'s acknowledged {payload!r} is not at "
                                  f"{acked.partition}/{acked.offset + i}")
        for producer in sim.transactional_producers:
            for attempt in producer.attempts:
                self._check_attempt(producer.address, attempt, visible_values)

    def _check_attempt(self, address: str, attempt, visible_values: dict[int, set[bytes]]) -> None:
        decision = self.decisions.get((attempt.producer_id, attempt.producer_epoch + 1))
        committed = decision is not None and decision.commit
        if attempt.outcome == "committed" and not committed:
            self.fail(f"{address} was told its transaction {attempt} committed; the coordinator decided {decision}")
        if attempt.outcome == "aborted" and committed:
            self.fail(f"{address} was told its transaction {attempt} aborted; the coordinator committed it")
        for partition, payloads in attempt.sent.items():
            shown = [payload for payload in payloads if payload in visible_values[partition]]
            if committed and attempt.outcome == "committed" and len(shown) != len(payloads):
                self.fail(f"{address}'s committed transaction {attempt} shows {len(shown)} of its "
                          f"{len(payloads)} records on partition {partition}")
            if not committed and shown:
                self.fail(f"{address}'s transaction {attempt} was not committed, yet read_committed shows "
                          f"{shown[:3]} on partition {partition}")


def _first_difference(a: list, b: list):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i, x, y
    return min(len(a), len(b)), a[len(b):len(b) + 1], b[len(a):len(a) + 1]
