"""What log compaction keeps of transactions, as a pure rule (Kafka's CleanedTransactionMetadata).

The cleaner walks the batches of the segments it cleans in offset order and
asks, batch by batch:

- a data batch of an aborted transaction goes, whatever its keys (its records
  never count as the latest of their keys either: an aborted offset commit must
  not shadow the committed one before it);
- a marker stays while its transaction still has a batch in the log: an ABORT
  marker so that a read_committed reader that fetched the aborted batches is
  told where they end, a COMMIT marker so that a replay of the log never opens
  a transaction no marker closes. Its `.txnindex` entry stays with a kept ABORT
  marker, and goes once no batch of its transaction is left to drop;
- a marker whose transaction has no batch left may go, but only
  delete.retention.ms after the cleaner first found it so: that pass stamps the
  time it may go on the batch (KIP-534's delete horizon) and a later pass
  removes it, so a reader that fetched the transaction's last batch before it
  went still meets the marker.

"A batch in the log" is one the walk passed: the walk starts at the log start,
so a transaction whose batches it did not meet has none left. The cleaner never
passes the last stable offset, so every transactional batch it meets belongs to
a transaction whose marker is written and replicated.
"""

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from .aborted import AbortedTxn


class MarkerFate(Enum):
    KEEP = "keep"  # copied as it is
    STAMP = "stamp"  # kept, rewritten with its delete horizon
    DROP = "drop"  # removed


@dataclass(frozen=True, slots=True)
class MarkerVerdict:
    removable: bool  # no batch of its transaction is left
    index_entry: AbortedTxn | None  # the `.txnindex` entry a kept ABORT marker keeps


class CleanedTransactions:
    """One walk over the batches being cleaned, in offset order; `aborted` are the `.txnindex` entries of the
    log that begin in the walked range."""

    __slots__ = ("_upcoming", "_aborted_open", "_committed_open")

    def __init__(self, aborted: Iterable[AbortedTxn]) -> None:
        self._upcoming = deque(sorted(aborted, key=lambda entry: (entry.first_offset, entry.last_offset)))
        self._aborted_open: dict[int, tuple[AbortedTxn, bool]] = {}  # producer id -> (entry, a batch was met)
        self._committed_open: set[int] = set()  # producers with a committed transaction's batch met

    def data_batch(self, producer_id: int, transactional: bool, last_offset: int) -> bool:
        """Whether this data batch belongs to an aborted transaction (and so goes)."""
        self._begin_up_to(last_offset)
        if not transactional:
            return False
        opened = self._aborted_open.get(producer_id)
        if opened is not None:
            self._aborted_open[producer_id] = (opened[0], True)
            return True
        self._committed_open.add(producer_id)
        return False

    def marker(self, producer_id: int, abort: bool, offset: int) -> MarkerVerdict:
        """A transaction marker at `offset` ends the producer's transaction."""
        self._begin_up_to(offset)
        if abort:
            entry, met = self._aborted_open.pop(producer_id, (None, False))
            return MarkerVerdict(False, entry) if met else MarkerVerdict(True, None)
        met = producer_id in self._committed_open
        self._committed_open.discard(producer_id)
        return MarkerVerdict(not met, None)

    def _begin_up_to(self, offset: int) -> None:
        while self._upcoming and self._upcoming[0].first_offset <= offset:
            entry = self._upcoming.popleft()
            self._aborted_open.setdefault(entry.producer_id, (entry, False))


def marker_fate(verdict: MarkerVerdict, delete_horizon_ms: int | None, now_ms: int) -> MarkerFate:
    """What becomes of a marker batch: kept while its transaction has batches, then stamped with its delete
    horizon, then removed once that has passed."""
    if not verdict.removable:
        return MarkerFate.KEEP
    if delete_horizon_ms is None:
        return MarkerFate.STAMP
    return MarkerFate.DROP if delete_horizon_ms <= now_ms else MarkerFate.KEEP
