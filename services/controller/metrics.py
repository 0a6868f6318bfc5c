"""The controller's Prometheus metrics (DESIGN §10). Only the active controller reports
partition figures; the others report 0.

Created on first use rather than at import, so that only a controller exports them:
`replog dev` imports every service's settings into one process.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

import prometheus_client

from replog.core.partition_change import PartitionChange

Metric = TypeVar("Metric", prometheus_client.Gauge, prometheus_client.Counter, prometheus_client.Histogram)

# Controller events and elections take milliseconds to seconds (ZooKeeper writes of many partitions).
EVENT_SECONDS_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


@dataclasses.dataclass(frozen=True)
class ControllerMetrics:
    active_controller_count: prometheus_client.Gauge
    controller_epoch: prometheus_client.Gauge
    offline_partitions: prometheus_client.Gauge
    global_partition_count: prometheus_client.Gauge
    global_topic_count: prometheus_client.Gauge
    active_broker_count: prometheus_client.Gauge
    offline_replica_count: prometheus_client.Gauge
    leader_elections: prometheus_client.Counter
    unclean_leader_elections: prometheus_client.Counter
    leader_election_seconds: prometheus_client.Histogram
    event_queue_size: prometheus_client.Gauge
    event_queue_time_seconds: prometheus_client.Histogram
    event_queue_processing_time_seconds: prometheus_client.Histogram


@functools.cache
def controller_metrics() -> ControllerMetrics:
    return ControllerMetrics(
        active_controller_count=_metric(
            prometheus_client.Gauge, "replog_active_controller_count",
            "1 on the controller that currently holds /controller, 0 elsewhere."),
        controller_epoch=_metric(
            prometheus_client.Gauge, "replog_controller_epoch",
            "The controller epoch this process holds (0 when not active)."),
        offline_partitions=_metric(
            prometheus_client.Gauge, "replog_offline_partitions",
            "Partitions without a live leader (active controller only)."),
        global_partition_count=_metric(
            prometheus_client.Gauge, "replog_global_partition_count",
            "Partitions in the cluster (active controller only)."),
        global_topic_count=_metric(
            prometheus_client.Gauge, "replog_global_topic_count", "Topics in the cluster (active controller only)."),
        active_broker_count=_metric(
            prometheus_client.Gauge, "replog_active_broker_count",
            "Brokers registered in ZooKeeper (active controller only)."),
        offline_replica_count=_metric(
            prometheus_client.Gauge, "replog_offline_replica_count",
            "Per broker that holds replicas or is registered: the replicas assigned to it while it is not "
            "registered in ZooKeeper, 0 while it is (active controller only).", ["broker"]),
        leader_elections=_metric(
            prometheus_client.Counter, "replog_leader_elections",
            "Partitions given a new live leader by an election (a leader's death or return, a controller "
            "taking over, ElectLeaders, the leader rebalance, a controlled shutdown, a reassignment); a new "
            "topic's first leaders are not counted."),
        unclean_leader_elections=_metric(
            prometheus_client.Counter, "replog_unclean_leader_elections",
            "Leaders elected from outside the ISR, because the topic allows it or an operator asked for an "
            "unclean election; records may have been lost."),
        leader_election_seconds=_metric(
            prometheus_client.Histogram, "replog_leader_election_seconds",
            "From the start of the controller event that elected new leaders (a broker's death or return, "
            "ElectLeaders, a rebalance, a controlled shutdown) until they were written to ZooKeeper.",
            buckets=EVENT_SECONDS_BUCKETS),
        event_queue_size=_metric(
            prometheus_client.Gauge, "replog_controller_event_queue_size", "Controller events waiting to run."),
        event_queue_time_seconds=_metric(
            prometheus_client.Histogram, "replog_controller_event_queue_time_seconds",
            "How long a controller event waited in the queue before it ran.", buckets=EVENT_SECONDS_BUCKETS),
        event_queue_processing_time_seconds=_metric(
            prometheus_client.Histogram, "replog_controller_event_queue_processing_time_seconds",
            "How long a controller event ran.", buckets=EVENT_SECONDS_BUCKETS),
    )


def count_elections(changes: Iterable[PartitionChange], elapsed_s: float) -> None:
    """replog_leader_elections_total and replog_unclean_leader_elections_total for written changes,
    and replog_leader_election_seconds once for them if any was an election."""
    elected = [change for change in changes if change.elected]
    for change in elected:
        controller_metrics().leader_elections.inc()
        if change.unclean:
            controller_metrics().unclean_leader_elections.inc()
    if elected:
        controller_metrics().leader_election_seconds.observe(elapsed_s)


def set_offline_replicas(offline: Mapping[int, int]) -> None:
    """Replicas assigned to each known broker while it is unregistered (0: registered); brokers
    no longer known lose their series."""
    gauge = controller_metrics().offline_replica_count
    for broker_id in _brokers_reported - offline.keys():
        gauge.remove(str(broker_id))
    for broker_id, count in offline.items():
        gauge.labels(str(broker_id)).set(count)
    _brokers_reported.clear()
    _brokers_reported.update(offline)


_brokers_reported: set[int] = set()


def _metric(kind: type[Metric], name: str, documentation: str, labels: Sequence[str] = (), **options: Any) -> Metric:
    try:
        return kind(name, documentation, labels, **options)
    except ValueError:
        # Another service in this process exports the name already; that happens only when
        # tests run a controller in-process next to a broker's modules. Count, but do not export.
        return kind(name, documentation, labels, registry=None, **options)
