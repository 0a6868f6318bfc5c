"""The broker's gauges, refreshed from its partitions' cores once a second (DESIGN §10).

A partition's series last as long as the broker hosts it, and a leader's (producer ids, LSO lag,
replica lag) as long as it leads it: a refresh removes the series it did not set again, so a
former leader does not go on serving the figures it had when it stopped leading.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import Gauge

from replog.broker import metrics
from replog.core.partition_driver import PartitionDriver


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


def update_gauges(broker_id: int, drivers: Iterable[PartitionDriver]) -> None:
    drivers = list(drivers)
    metrics.PARTITION_COUNT.set(len(drivers))
    metrics.LEADER_COUNT.set(sum(1 for d in drivers if d.is_leader))
    metrics.UNDER_REPLICATED.set(sum(1 for d in drivers if d.replica.under_replicated))
    metrics.UNDER_MIN_ISR.set(sum(1 for d in drivers if d.replica.under_min_isr))
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
        for replica in leadership.replicas:
            if replica != broker_id:
                lag = driver.replica.log_end_offset - leadership.follower_log_end_offset(replica)
                _refresh.set(metrics.REPLICA_LAG, (*labels, str(replica)), lag)
    _refresh.finish()
