"""Hanging transactions: open on a partition, unknown to any coordinator (KIP-664), as pure rules.

A transaction hangs when a partition holds it open (a transactional batch with
no marker after it) while no coordinator will ever write its marker: it holds
the partition's last stable offset, so read_committed consumers and the
cleaner stop there for good. KIP-890's verification keeps new ones from
appearing (a partition opens a transaction only after the coordinator said the
partition is in it); a client that writes past verification (an old client,
or `transaction.partition.verification.enable=false`) can still make one.

How an operator finds them, as kafka-transactions.sh `find-hanging` does:

1. the candidates are the open transactions (DescribeProducers: a producer with
   a current transaction start offset) whose producer wrote last longer ago
   than the longest transaction timeout a coordinator allows;
2. a candidate hangs when no transactional id has its producer id
   (ListTransactions), when its id no longer exists (DescribeTransactions), or
   when its id's transaction does not name the partition (a coordinator writes
   markers only to the partitions it names, and names them until every marker
   is written).

`abort` ends one by writing an ABORT marker to the partition, the way a
coordinator would; its epoch is one above the producer's epoch there, since a
partition takes a marker only from an epoch above the producer's (every end
bumps the epoch, KIP-890).
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..topic_partition import TopicPartition
from .metadata import PRODUCER_EPOCH_MAX

# kafka-transactions.sh find-hanging's default --max-transaction-timeout: transaction.max.timeout.ms's default.
MAX_TRANSACTION_TIMEOUT_MINUTES = 15
# A transaction counts as late this long after transaction.max.timeout.ms, so that the coordinator's own
# timeout (checked every transaction.abort.timed.out.transaction.cleanup.interval.ms) comes first (Kafka's
# ProducerStateManager.LATE_TRANSACTION_BUFFER_MS).
LATE_TRANSACTION_BUFFER_MS = 5 * 60 * 1000


@dataclass(frozen=True, slots=True)
class OpenTransaction:
    """A transaction a partition holds open, as its leader describes the producer."""

    topic_partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int  # of the producer's latest marker here; -1 without one
    start_offset: int
    last_timestamp_ms: int  # the producer's last write here; -1 when unknown

    def duration_ms(self, now_ms: int) -> int | None:
        return now_ms - self.last_timestamp_ms if self.last_timestamp_ms >= 0 else None


@dataclass(frozen=True, slots=True)
class CoordinatorView:
    """What a transactional id's coordinator says of it: its producer id and the partitions its transaction
    (ongoing, or ending with markers still to write) names."""

    producer_id: int
    partitions: frozenset[TopicPartition]


@dataclass(frozen=True, slots=True)
class HangingTransaction:
    transaction: OpenTransaction
    transactional_id: str | None  # the id its producer id has at a coordinator, if any


def candidates(open_transactions: Iterable[OpenTransaction], now_ms: int,
               max_transaction_timeout_ms: int) -> list[OpenTransaction]:
    """The open transactions whose producer has been silent longer than `max_transaction_timeout_ms` (an
    unknown last write counts as long ago)."""
    return [txn for txn in open_transactions
            if (duration := txn.duration_ms(now_ms)) is None or duration > max_transaction_timeout_ms]


def hanging(candidates: Iterable[OpenTransaction], transactional_ids: Mapping[int, str],
            coordinators: Mapping[str, CoordinatorView | None]) -> list[HangingTransaction]:
    """Which candidates no coordinator will end. `transactional_ids` maps producer ids to the ids listed with
    them; `coordinators` each of those ids to its description (None: the id does not exist)."""
    found = []
    for txn in candidates:
        transactional_id = transactional_ids.get(txn.producer_id)
        view = coordinators.get(transactional_id) if transactional_id is not None else None
        if view is None or view.producer_id != txn.producer_id or txn.topic_partition not in view.partitions:
            found.append(HangingTransaction(txn, transactional_id))
    return found


def is_late(open_transactions: Iterable[tuple[int, int]], now_ms: int, max_transaction_timeout_ms: int) -> bool:
    """Whether a partition has a late transaction (Kafka's PartitionsWithLateTransactionsCount): one whose
    producer, given as (producer id, last write ms), has written nothing for transaction.max.timeout.ms and
    the buffer; a last write not known (0 or less, state read from a snapshot) does not count."""
    limit_ms = max_transaction_timeout_ms + LATE_TRANSACTION_BUFFER_MS
    return any(last_ms > 0 and now_ms - last_ms > limit_ms for _, last_ms in open_transactions)


def abort_marker_epoch(producer_epoch: int) -> int | None:
    """The epoch an ABORT marker for a transaction at `producer_epoch` carries; None when the epoch is
    exhausted (no marker can be above it)."""
    return producer_epoch + 1 if 0 <= producer_epoch < PRODUCER_EPOCH_MAX else None


def abort_coordinator_epoch(coordinator_epoch: int) -> int:
    """The coordinator epoch an operator's ABORT marker carries: the producer's latest one here, or 0 when it
    has none (no coordinator wrote a marker for it: any epoch passes), as kafka-transactions.sh does."""
    return max(coordinator_epoch, 0)
