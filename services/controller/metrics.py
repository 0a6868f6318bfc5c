"""The controller's Prometheus metrics (DESIGN §10). Only the active controller reports
partition figures; the others report 0.

Created on first use rather than at import: `replog dev` imports every service's
settings into one process, and the broker has a `replog_partition_count` too.
"""

from __future__ import annotations

import dataclasses
import functools

import prometheus_client


@dataclasses.dataclass(frozen=True)
class ControllerMetrics:
    active_controller_count: prometheus_client.Gauge
    controller_epoch: prometheus_client.Gauge
    offline_partitions: prometheus_client.Gauge
    partition_count: prometheus_client.Gauge
    leader_elections: prometheus_client.Counter
    unclean_leader_elections: prometheus_client.Counter


@functools.cache
def controller_metrics() -> ControllerMetrics:
    return ControllerMetrics(
        active_controller_count=prometheus_client.Gauge(
            "replog_active_controller_count",
            "1 on the controller that currently holds /controller, 0 elsewhere."),
        controller_epoch=prometheus_client.Gauge(
            "replog_controller_epoch", "The controller epoch this process holds (0 when not active)."),
        offline_partitions=prometheus_client.Gauge(
            "replog_offline_partitions", "Partitions without a live leader (active controller only)."),
        partition_count=prometheus_client.Gauge(
            "replog_partition_count", "Partitions in the cluster (active controller only)."),
        leader_elections=prometheus_client.Counter(
            "replog_leader_elections",
            "Partitions given a new live leader by an election (a leader's death or return, a "
            "controller taking over); a new topic's first leaders are not counted."),
        unclean_leader_elections=prometheus_client.Counter(
            "replog_unclean_leader_elections",
            "Leaders elected from outside the ISR because the topic allows it; records may have been lost."),
    )
