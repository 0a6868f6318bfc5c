"""The controller's Prometheus metrics (DESIGN §10). Only the active controller reports
partition figures; the others report 0.

Created on first use rather than at import: `replog dev` imports every service's
settings into one process, and the broker has a `replog_partition_count` too.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable
from typing import TypeVar

import prometheus_client

from replog.core.partition_change import PartitionChange

Metric = TypeVar("Metric", prometheus_client.Gauge, prometheus_client.Counter)


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
        active_controller_count=_metric(
            prometheus_client.Gauge, "replog_active_controller_count",
            "1 on the controller that currently holds /controller, 0 elsewhere."),
        controller_epoch=_metric(
            prometheus_client.Gauge, "replog_controller_epoch",
            "The controller epoch this process holds (0 when not active)."),
        offline_partitions=_metric(
            prometheus_client.Gauge, "replog_offline_partitions",
            "Partitions without a live leader (active controller only)."),
        partition_count=_metric(
            prometheus_client.Gauge, "replog_partition_count",
            "Partitions in the cluster (active controller only)."),
        leader_elections=_metric(
            prometheus_client.Counter, "replog_leader_elections",
            "Partitions given a new live leader by an election (a leader's death or return, a controller "
            "taking over, ElectLeaders, the leader rebalance, a controlled shutdown, a reassignment); a new "
            "topic's first leaders are not counted."),
        unclean_leader_elections=_metric(
            prometheus_client.Counter, "replog_unclean_leader_elections",
            "Leaders elected from outside the ISR, because the topic allows it or an operator asked for an "
            "unclean election; records may have been lost."),
    )


def count_elections(changes: Iterable[PartitionChange]) -> None:
    """replog_leader_elections_total and replog_unclean_leader_elections_total for written changes."""
    for change in changes:
        if change.elected:
            controller_metrics().leader_elections.inc()
            if change.unclean:
                controller_metrics().unclean_leader_elections.inc()


def _metric(kind: type[Metric], name: str, documentation: str) -> Metric:
    try:
        return kind(name, documentation)
    except ValueError:
        # Another service in this process exports the name already; that happens only when
        # tests run a controller in-process next to a broker's modules. Count, but do not export.
        return kind(name, documentation, registry=None)
