"""Which records a read_committed consumer is given: the rule of Kafka's consumer, as a pure function.

A read_committed fetch returns batches below the last stable offset (LSO) and
the aborted transactions that overlap them, each as (producer id, first
offset). Walking the batches in offset order, a transaction counts as aborted
for its producer from its first offset on; a transactional batch of a producer
with an aborted transaction open is dropped; that producer's ABORT marker
closes it. Control batches are never handed to the application, and no record
at or past the LSO is.
"""

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .markers import ControlType


@dataclass(frozen=True, slots=True)
class FetchedBatch:
    """What the rule needs of a fetched batch (replog.protocol.control.fetched_batch builds it)."""

    base_offset: int
    last_offset: int
    producer_id: int
    transactional: bool
    control_type: int | None  # a control batch's ControlRecordType id (ABORT, COMMIT, ...), None for data
    records: Sequence[Any] = ()  # each with an `offset`


class AbortedFilter:
    """The rule batch by batch, in offset order, for a reader that decodes batches as it goes (the consumer).

    `aborted` is the fetch answer's aborted transactions, (producer id, first offset).
    """

    __slots__ = ("_upcoming", "_aborting")

    def __init__(self, aborted: Iterable[tuple[int, int]]) -> None:
        self._upcoming = deque(sorted((first_offset, producer_id) for producer_id, first_offset in aborted))
        self._aborting: set[int] = set()

    def keeps(self, batch: FetchedBatch) -> bool:
        """Whether the batch's records are handed to the application: never a control batch's, nor an
        aborted transaction's."""
        upcoming = self._upcoming
        while upcoming and upcoming[0][0] <= batch.last_offset:
            self._aborting.add(upcoming.popleft()[1])
        if batch.control_type is not None:
            if batch.control_type == ControlType.ABORT:
                self._aborting.discard(batch.producer_id)
            return False
        return not (batch.transactional and batch.producer_id in self._aborting)


def read_committed(batches: Iterable[FetchedBatch], aborted: Iterable[tuple[int, int]],
                   last_stable_offset: int) -> list[Any]:
    """The records of `batches` a read_committed consumer sees; `aborted` is (producer id, first offset)."""
    kept = AbortedFilter(aborted)
    visible = []
    for batch in batches:
        if batch.base_offset >= last_stable_offset:
            break
        if kept.keeps(batch):
            visible += [record for record in batch.records if record.offset < last_stable_offset]
    return visible
