"""Which open transactions hang (KIP-664), when a partition's is late, and the epochs of an operator's abort."""

from replog.core.topic_partition import TopicPartition
from replog.core.txn.hanging import (
    LATE_TRANSACTION_BUFFER_MS,
    CoordinatorView,
    HangingTransaction,
    OpenTransaction,
    abort_coordinator_epoch,
    abort_marker_epoch,
    candidates,
    hanging,
    is_late,
)

NOW_MS = 10_000_000
TP = TopicPartition("orders", 0)
OTHER = TopicPartition("orders", 1)


def open_txn(producer_id: int, silent_ms: int | None, tp: TopicPartition = TP) -> OpenTransaction:
    return OpenTransaction(tp, producer_id, 3, 7, 100 + producer_id, -1 if silent_ms is None else NOW_MS - silent_ms)


def test_candidates_are_the_transactions_silent_longer_than_the_max_timeout():
    recent, old, unknown = open_txn(1, 1_000), open_txn(2, 60_001), open_txn(3, None)
    assert candidates([recent, old, unknown], NOW_MS, 60_000) == [old, unknown]
    assert candidates([recent], NOW_MS, 0) == [recent]


def test_a_transaction_hangs_when_no_coordinator_names_its_partition():
    no_id, gone, moved_on, elsewhere, healthy = (open_txn(pid, 0) for pid in (1, 2, 3, 4, 5))
    ids = {2: "gone", 3: "moved-on", 4: "elsewhere", 5: "healthy"}
    views = {
        "gone": None,
        "moved-on": CoordinatorView(producer_id=33, partitions=frozenset({TP})),  # a new producer id since
        "elsewhere": CoordinatorView(producer_id=4, partitions=frozenset({OTHER})),
        "healthy": CoordinatorView(producer_id=5, partitions=frozenset({TP, OTHER})),
    }
    found = hanging([no_id, gone, moved_on, elsewhere, healthy], ids, views)
    assert found == [HangingTransaction(no_id, None), HangingTransaction(gone, "gone"),
                     HangingTransaction(moved_on, "moved-on"), HangingTransaction(elsewhere, "elsewhere")]


def test_a_partition_is_late_past_the_max_timeout_and_the_buffer():
    limit_ms = 900_000 + LATE_TRANSACTION_BUFFER_MS
    assert not is_late([(1, NOW_MS - limit_ms)], NOW_MS, 900_000)
    assert is_late([(1, NOW_MS - limit_ms), (2, NOW_MS - limit_ms - 1)], NOW_MS, 900_000)
    assert not is_late([(1, -1), (2, 0)], NOW_MS, 900_000)  # no known last write: read from a snapshot
    assert not is_late([], NOW_MS, 0)


def test_an_abort_marker_is_one_epoch_above_the_producer_and_from_any_coordinator_when_none_wrote():
    assert abort_marker_epoch(0) == 1 and abort_marker_epoch(32766) == 32767
    assert abort_marker_epoch(32767) is None and abort_marker_epoch(-1) is None
    assert abort_coordinator_epoch(-1) == 0 and abort_coordinator_epoch(4) == 4
