"""The broker's gauges, refreshed from its partitions' cores once a second (DESIGN §10)."""

from __future__ import annotations

from collections.abc import Iterable

from replog.broker import metrics
from replog.core.partition_driver import PartitionDriver


def update_gauges(broker_id: int, drivers: Iterable[PartitionDriver]) -> None:
    drivers = list(drivers)
    metrics.PARTITION_COUNT.set(len(drivers))
    metrics.LEADER_COUNT.set(sum(1 for d in drivers if d.is_leader))
    metrics.UNDER_REPLICATED.set(sum(1 for d in drivers if d.replica.under_replicated))
    metrics.UNDER_MIN_ISR.set(sum(1 for d in drivers if d.replica.under_min_isr))
    for driver in drivers:
        labels = (driver.topic, str(driver.partition))
        metrics.LOG_SIZE.labels(*labels).set(driver.log.size_bytes)
        metrics.LOG_END_OFFSET.labels(*labels).set(driver.log.log_end_offset)
        metrics.LOG_START_OFFSET.labels(*labels).set(driver.log.log_start_offset)
        leadership = driver.replica.leadership
        if leadership is None:
            continue
        metrics.PRODUCER_IDS.labels(*labels).set(driver.replica.producer_count)
        metrics.LAST_STABLE_OFFSET_LAG.labels(*labels).set(
            driver.replica.high_watermark - driver.replica.last_stable_offset)
        for replica in leadership.replicas:
            if replica != broker_id:
                lag = driver.replica.log_end_offset - leadership.follower_log_end_offset(replica)
                metrics.REPLICA_LAG.labels(driver.topic, str(driver.partition), str(replica)).set(lag)
