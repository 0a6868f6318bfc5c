"""The properties file each member of a local cluster runs with.

Its address, ZooKeeper and data directory, then the cluster's config overrides
that its service knows (`--config` applies to every service that has the setting).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from replog.config import Setting
from replog.dev import tls as dev_tls
from replog.dev.cluster_file import Cluster, Member
from replog.dev.processes import DevError

# Test-friendly timeouts (DESIGN §9); production defaults stay Kafka's.
DEV_DEFAULTS = {
    "zookeeper.session.timeout.ms": "6000",
    "replica.lag.time.max.ms": "10000",
    "controlled.shutdown.retry.backoff.ms": "200",
    # A consumer that dies leaves its group in 6 s; members heartbeat twice a second, so that
    # partitions move between them in a few hundred milliseconds.
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.heartbeat.interval.ms": "500",
}


def _service_settings() -> dict[str, tuple[Setting, ...]]:
    from replog.broker.service import SETTINGS as broker
    from replog.controller.service import SETTINGS as controller
    from replog.metadata.service import SETTINGS as metadata

    return {"broker": broker, "controller": controller, "metadata": metadata}


def check_config_keys(overrides: Mapping[str, str]) -> None:
    known = {s.name for settings in _service_settings().values() for s in settings}
    for key in overrides:
        if key not in known:
            raise DevError(f"--config {key}: no replog service has a setting by that name; "
                           f"see `python -m replog.broker --list-settings` (or controller, metadata).")


def write_properties(cluster: Cluster, member: Member) -> str:
    """Write the member's properties file; returns its path."""
    directory = cluster.member_dir(member)
    os.makedirs(directory, exist_ok=True)
    settings = {
        "listeners": member.address,
        "metrics.port": member.metrics_address.rsplit(":", 1)[1],
        "zookeeper.connect": cluster.zookeeper_address,
    }
    if member.kind == "broker":
        settings.update({"broker.id": str(member.id), "log.dirs": cluster.broker_log_dir(member.id)})
    elif member.kind == "controller":
        settings["controller.id"] = str(member.id)
    if cluster.tls is not None:
        settings.update(dev_tls.member_properties(cluster.tls, member.kind))
    settings.update(_applicable(cluster.state["config"], member.kind))
    path = cluster.properties_path(member.kind, member.id)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(f"# {member.name} of the local cluster in {cluster.data_dir}\n")
        handle.writelines(f"{key}={value}\n" for key, value in settings.items())
    return path


def _applicable(overrides: Mapping[str, str], kind: str) -> dict[str, str]:
    known = {s.name for s in _service_settings()[kind]}
    return {k: v for k, v in overrides.items() if k in known}
