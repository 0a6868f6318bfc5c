"""`replog dev`: a real local cluster — ZooKeeper, brokers, controllers, a metadata service.

The commands (up, down, kill, start, status) live here; `cluster_file` records
where everything is (cluster.json), `ports` picks the ports, `properties` writes
each member's settings and `supervise` starts the processes.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping
from typing import Any

from replog.config import zookeeper_hosts
from replog.core.invariant import require
from replog.dev import prometheus
from replog.dev import tls as dev_tls
from replog.dev.cluster_file import CLUSTER_FILE, DEFAULT_DATA_DIR, Cluster, Member, find_data_dir
from replog.dev.ports import HOST, choose_ports
from replog.dev.processes import (
    DevError,
    free_port,
    is_stopped,
    scrape_metric,
    send_signal,
    stop_processes,
    wait_until,
)
from replog.dev.properties import DEV_DEFAULTS, check_config_keys
from replog.dev.supervise import (
    check_external_zookeeper,
    start_member,
    start_prometheus,
    start_zookeeper,
    wait_member,
)
from replog.rpc.channels import ClientSecurity

__all__ = ["DEFAULT_DATA_DIR", "SIGNALS", "Cluster", "Member", "down", "find_data_dir", "kill", "start", "status",
           "up"]

KILL_WAIT_S_MAX = 10.0
TERM_WAIT_S_MAX = 60.0
# Brokers or controllers in one local cluster: each is a process of its own, with two ports.
MEMBERS_MAX = 100

SIGNALS = {"KILL": signal.SIGKILL, "TERM": signal.SIGTERM, "STOP": signal.SIGSTOP, "CONT": signal.SIGCONT}


def up(
    data_dir: str,
    *,
    brokers: int,
    controllers: int,
    zookeeper_address: str | None,
    base_port: int,
    config: Mapping[str, str],
    monitoring: bool = False,
    log_format: str = "text",
    tls: bool = False,
    authorizer: bool = False,
) -> Cluster:
    """Start the cluster (created if new); with `monitoring`, a Prometheus that scrapes it too;
    with `tls`, every listener TLS with client certificates required (created with the cluster);
    with `authorizer`, ACLs checked, the services and admin as super users.
    A cluster that had a Prometheus keeps it when started again."""
    data_dir = os.path.abspath(data_dir)
    check_config_keys(config)
    for kind, count in (("broker", brokers), ("controller", controllers)):
        if not 1 <= count <= MEMBERS_MAX:
            raise DevError(f"--{kind}s {count}: a local cluster has from 1 to {MEMBERS_MAX} {kind}s, each a process "
                           "on this machine.")
    if zookeeper_address is not None:
        _check_zookeeper_address(zookeeper_address)
    if monitoring:
        prometheus.check_installed()
    if authorizer:
        config = {"authorizer.class.name": "AclAuthorizer", "super.users": dev_tls.SUPER_USERS, **config}
    cluster = _existing_or_new(data_dir, brokers, controllers, zookeeper_address, base_port, config)
    if tls and cluster.tls is None:
        if any(member.pid for member in cluster.members()) or os.path.exists(cluster.broker_log_dir(1)):
            raise DevError(f"the cluster in {data_dir} was created without --tls; create a new one with --tls "
                           "in another --data-dir.")
        cluster.state["tls"] = dev_tls.create(data_dir)
    cluster.state["log_format"] = log_format
    if monitoring and cluster.prometheus is None:
        taken = {int(address.rsplit(":", 1)[1]) for member in cluster.members()
                 for address in (member.address, member.metrics_address)}
        taken.update(address.port for address in zookeeper_hosts(cluster.zookeeper_address))
        cluster.state["prometheus"] = {"address": f"{HOST}:{free_port(HOST, taken)}", "pid": None}
    cluster.save()
    try:
        start_zookeeper(cluster)
        for member in cluster.members():
            if not member.alive:
                start_member(cluster, member)
        for member in cluster.members():
            wait_member(cluster, member)
        start_prometheus(cluster)
    except BaseException:
        down(cluster)
        raise
    return cluster


def _check_zookeeper_address(address: str) -> None:
    try:
        zookeeper_hosts(address)
    except ValueError as error:
        raise DevError(f"--zookeeper {address!r} is not HOST:PORT[,HOST:PORT...][/chroot] ({error}).") from None


def _existing_or_new(
    data_dir: str,
    brokers: int,
    controllers: int,
    zookeeper_address: str | None,
    base_port: int,
    config: Mapping[str, str],
) -> Cluster:
    if os.path.exists(Cluster.path(data_dir)):
        cluster = Cluster.load(data_dir)
        _check_restartable(cluster, brokers, controllers, zookeeper_address)
        cluster.state["config"] = {**DEV_DEFAULTS, **config}
        cluster.save()
        return cluster
    if os.path.exists(data_dir) and not os.path.isdir(data_dir):
        raise DevError(f"--data-dir {data_dir} is a file; choose a new or empty directory.")
    if os.path.isdir(data_dir) and os.listdir(data_dir):
        raise DevError(
            f"{data_dir} is not empty and holds no {CLUSTER_FILE}: it is not a replog local "
            "cluster; choose an empty or new --data-dir."
        )
    if zookeeper_address is not None:  # before anything is written, so the same --data-dir can be used again
        check_external_zookeeper(zookeeper_address, created=True)
    try:
        os.makedirs(data_dir, exist_ok=True)
    except OSError as error:
        raise DevError(f"cannot create --data-dir {data_dir}: {error.strerror}.") from None
    ports = choose_ports(base_port, 1 + 2 * (brokers + controllers + 1))
    zookeeper_at = zookeeper_address or f"{HOST}:{next(ports)}"
    addresses = {
        kind: [(f"{HOST}:{next(ports)}", f"{HOST}:{next(ports)}") for _ in range(count)]
        for kind, count in (("broker", brokers), ("controller", controllers), ("metadata", 1))
    }
    return Cluster.create(data_dir, zookeeper_at, zookeeper_address is not None, {**DEV_DEFAULTS, **config}, addresses)


def _check_restartable(cluster: Cluster, brokers: int, controllers: int, zookeeper_address: str | None) -> None:
    """A recorded cluster starts again only when nothing of it runs, with its ZooKeeper and counts."""
    running = [m.name for m in cluster.members() if m.alive]
    if running:
        raise DevError(
            f"a cluster is already running from {cluster.data_dir} ({', '.join(running)}); "
            f"use it, or stop it first with `replog dev down --data-dir {cluster.data_dir}`."
        )
    recorded = cluster.state["zookeeper"]
    if zookeeper_address and zookeeper_address != recorded["address"]:
        raise DevError(
            f"{cluster.data_dir} holds a cluster whose metadata lives in the ZooKeeper at "
            f"{recorded['address']}, not {zookeeper_address}; choose another --data-dir."
        )
    if len(cluster.members("broker")) != brokers or len(cluster.members("controller")) != controllers:
        raise DevError(
            f"{cluster.data_dir} holds a cluster of {len(cluster.members('broker'))} brokers and "
            f"{len(cluster.members('controller'))} controllers; restart it with those counts "
            "or choose another --data-dir."
        )


def down(cluster: Cluster, *, kill: bool = False) -> list[str]:
    """Stop every process; returns the names of those that had to be killed. With `kill`, SIGKILL them
    all at once, with no controlled shutdown: for a cluster whose data is thrown away next."""
    members = cluster.members()
    member_grace_s, other_grace_s = (0.0, 0.0) if kill else (TERM_WAIT_S_MAX / 2, 10.0)
    # Brokers first, while a controller can still answer their controlled shutdown.
    killed = []
    for kinds in (("metadata", "broker"), ("controller",)):
        pids = [(m.pid, m.marker) for m in members if m.kind in kinds and m.pid]
        killed += stop_processes(pids, grace_s=member_grace_s)
    names = [m.name for m in members if m.pid in killed]
    for member in members:
        cluster.record_pid(member, None)
    recorded = cluster.prometheus
    if recorded is not None and recorded["pid"]:
        if stop_processes([(recorded["pid"], cluster.prometheus_marker)], grace_s=other_grace_s):
            names.append("prometheus")
        recorded["pid"] = None
        cluster.save()
    zk = cluster.state["zookeeper"]
    if not zk["external"] and zk["pid"]:
        if stop_processes([(zk["pid"], cluster.zookeeper_marker)], grace_s=other_grace_s):
            names.append("zookeeper")
        zk["pid"] = None
        cluster.save()
    return names


def kill(cluster: Cluster, kind: str, member_id: int, signal_name: str) -> tuple[Member, int]:
    """Signal one process; returns it and the pid signalled."""
    member = cluster.member(kind, member_id)
    if not member.alive:
        raise DevError(f"{member.name} is not running.")
    pid = member.pid
    require(pid is not None, "%s is alive without a recorded pid", member.name)
    send_signal(pid, SIGNALS[signal_name])
    if signal_name in ("KILL", "TERM"):
        wait_s = KILL_WAIT_S_MAX if signal_name == "KILL" else TERM_WAIT_S_MAX
        if not wait_until(lambda: not member.alive, wait_s):
            raise DevError(f"{member.name} (pid {pid}) is still running {wait_s:g} s after SIG{signal_name}.")
        cluster.record_pid(member, None)
    return member, pid


def start(cluster: Cluster, kind: str, member_id: int) -> Member:
    member = cluster.member(kind, member_id)
    if not cluster.zookeeper_alive:
        raise DevError("ZooKeeper is not running; start the whole cluster with `replog dev up`.")
    start_member(cluster, member)
    wait_member(cluster, member)
    return member


def status(cluster: Cluster) -> dict[str, Any]:
    """The documented `dev status --json` shape (DESIGN §9, and `prometheus` with --monitoring)."""
    zk = cluster.state["zookeeper"]
    report: dict[str, Any] = {
        "zookeeper": {"address": zk["address"], "pid": zk["pid"], "alive": cluster.zookeeper_alive},
        "brokers": [],
        "controllers": [],
        "metadata": [],
    }
    for member in cluster.members("broker"):
        report["brokers"].append({
            "id": member.id, "pid": member.pid, "address": member.address,
            "data_dir": cluster.broker_log_dir(member.id), "alive": member.alive,
        })
    for member in cluster.members("controller"):
        report["controllers"].append({
            "id": member.id, "pid": member.pid, "address": member.address,
            "alive": member.alive, "active": _is_active(member, cluster.security),
        })
    for member in cluster.members("metadata"):
        report["metadata"].append({"pid": member.pid, "address": member.address, "alive": member.alive})
    recorded = cluster.prometheus
    if recorded is not None:
        report["prometheus"] = {"address": recorded["address"], "pid": recorded["pid"],
                                "alive": cluster.prometheus_alive}
    return report


def _is_active(member: Member, security: ClientSecurity) -> bool:
    """A controller's own word, from its metrics: a paused process cannot answer, so is not active."""
    if not member.alive or is_stopped(member.pid, member.marker):
        return False
    return scrape_metric(member.metrics_address, "replog_active_controller_count", security=security) == 1.0
