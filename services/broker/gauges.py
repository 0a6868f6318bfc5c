"""The broker's gauges, refreshed from its partitions' cores once a second (DESIGN §10).

A partition's series last as long as the broker hosts it, and a leader's (producer ids, LSO lag,
replica lag) as long as it leads it: a refresh removes the series it did not set again, so a
former leader does not go on serving the figures it had when it stopped leading.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from prometheus_client import Gauge

from replog.broker import metrics
from replog.core.partition_driver import PartitionDriver
from replog.core.topic_partition import TopicPartition
from replog.core.txn.hanging import is_late

log = logging.getLogger("replog.broker")


class _Refresh:
    """The labelled series one refresh sets; those of the refresh before that it did not set are removed."""

    def __init__(self) -> None:
        self._previous: set[tuple[Gauge, tuple[str, ...]]] = set()
        self._current: set[tuple[Gauge, tuple[str, ...]]] = set()

    def set(self, gauge: Gauge, labels: tuple[str, ...], value: float) -> None:
        gauge.labels(*labels).set(value)
        self._current.add((gauge, labels))

    def finish(self) -> None:
        for gauge, labels in self._previous - self._current:
            gauge.remove(*labels)
        self._previous, self._current = self._current, set()


_refresh = _Refresh()


def update_gauges(broker_id: int, drivers: Iterable[PartitionDriver], now_ms: int,
                  max_transaction_timeout_ms: int) -> None:
    """`now_ms` on the clock the partitions keep their producers' last writes by."""
    drivers = list(drivers)
    metrics.PARTITION_COUNT.set(len(drivers))
    metrics.LEADER_COUNT.set(sum(1 for d in drivers if d.is_leader))
    metrics.UNDER_REPLICATED.set(sum(1 for d in drivers if d.replica.under_replicated))
    metrics.UNDER_MIN_ISR.set(sum(1 for d in drivers if d.replica.under_min_isr))
    late = set()
    for driver in drivers:
        labels = (driver.topic, str(driver.partition))
        _refresh.set(metrics.LOG_SIZE, labels, driver.log.size_bytes)
        _refresh.set(metrics.LOG_END_OFFSET, labels, driver.log.log_end_offset)
        _refresh.set(metrics.LOG_START_OFFSET, labels, driver.log.log_start_offset)
        leadership = driver.replica.leadership
        if leadership is None:
            continue
        _refresh.set(metrics.PRODUCER_IDS, labels, driver.replica.producer_count)
        _refresh.set(metrics.LAST_STABLE_OFFSET_LAG, labels,
                     driver.replica.high_watermark - driver.replica.last_stable_offset)
        open_transactions = [(entry.producer_id, entry.last_timestamp_ms) for entry in driver.replica.producers
                             if entry.in_transaction]
        if is_late(open_transactions, now_ms, max_transaction_timeout_ms):
            late.add(driver.topic_partition)
        for replica in leadership.replicas:
            if replica != broker_id:
                lag = driver.replica.log_end_offset - leadership.follower_log_end_offset(replica)
                _refresh.set(metrics.REPLICA_LAG, (*labels, str(replica)), lag)
    _refresh.finish()
    metrics.PARTITIONS_WITH_LATE_TRANSACTIONS.set(len(late))
    _report_late(late)


_late_reported: set[TopicPartition] = set()


def _report_late(late: set[TopicPartition]) -> None:
    """A WARNING when a partition becomes late, once, and an INFO when it no longer is."""
    for tp in sorted(late - _late_reported):
        log.warning("%s holds a transaction whose producer has written nothing for transaction.max.timeout.ms "
                    "+ 5 minutes: read_committed consumers and the cleaner stop at its start; if no coordinator "
                    "will end it, see `replog transactions find-hanging` and `replog transactions abort`", tp)
    for tp in sorted(_late_reported - late):
        log.info("%s no longer holds a late transaction", tp)
    _late_reported.clear()
    _late_reported.update(late)
