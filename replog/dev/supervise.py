"""Starting the processes of a local cluster: ZooKeeper, and each member until it serves.

Each member runs detached with its own properties file, log file and data
directory under the cluster's data dir, and its pid goes into cluster.json.
"""

from __future__ import annotations

import os
import sys

from replog.core.invariant import require
from replog.dev import prometheus, zookeeper
from replog.dev.cluster_file import Cluster, Member
from replog.dev.processes import DevError, is_alive, port_in_use, spawn, tail, wait_serving, wait_until
from replog.dev.properties import write_properties

PORT_FREE_WAIT_S_MAX = 5.0


def start_member(cluster: Cluster, member: Member) -> None:
    if member.alive:
        raise DevError(f"{member.name} is already running (pid {member.pid}).")
    host, port = member.address.rsplit(":", 1)
    metrics_host, metrics_port = member.metrics_address.rsplit(":", 1)
    for what, h, p in (("port", host, port), ("metrics port", metrics_host, metrics_port)):
        # The kernel may report a killed member gone while its last threads still hold
        # its sockets: give them a moment before blaming another program.
        if not wait_until(lambda: not port_in_use(h, int(p)), PORT_FREE_WAIT_S_MAX):
            raise DevError(
                f"{member.name} cannot start: its {what} {p} is in use by another program; "
                "stop that program, or create the cluster again with another --base-port."
            )
    properties = write_properties(cluster, member)
    os.makedirs(os.path.join(cluster.data_dir, "logs"), exist_ok=True)
    argv = [sys.executable, "-m", f"replog.{member.kind}", properties, "--log-format", cluster.log_format]
    pid = spawn(argv, log_path=cluster.log_path(member), cwd=cluster.member_dir(member))
    cluster.record_pid(member, pid)


def wait_member(cluster: Cluster, member: Member) -> None:
    """Wait until the started member answers SERVING on its health service."""
    require(member.pid is not None, "%s is waited for, but no process of it was started", member.name)
    wait_serving(member.name, member.address, member.pid, member.marker, cluster.log_path(member), cluster.security)


def start_prometheus(cluster: Cluster) -> None:
    """Start the cluster's Prometheus, if it has one and it is not running, and wait until it is ready."""
    recorded = cluster.prometheus
    if recorded is None or cluster.prometheus_alive:
        return
    host, port = recorded["address"].rsplit(":", 1)
    if port_in_use(host, int(port)):
        raise DevError(f"Prometheus cannot start: port {port} is in use by another program; stop that program, "
                       "or create the cluster again in another --data-dir.")
    os.makedirs(os.path.join(cluster.data_dir, "logs"), exist_ok=True)
    log_path = os.path.join(cluster.data_dir, "logs", "prometheus.log")
    recorded["pid"] = prometheus.start(cluster, recorded["address"], log_path)
    cluster.save()
    if not prometheus.wait_ready(recorded["address"]):
        raise DevError(f"Prometheus did not become ready within {prometheus.READY_WAIT_S_MAX:g} s. "
                       f"The end of {log_path}:\n{tail(log_path)}")


def check_external_zookeeper(address: str, *, created: bool) -> None:
    """DevError unless the ZooKeeper given with --zookeeper answers; `created`: nothing of the cluster was
    written yet, which the message says."""
    if not zookeeper.any_ready(address):
        raise DevError(f"no ZooKeeper answers at {address} (given with --zookeeper)"
                       + ("; nothing was created." if created else "."))


def start_zookeeper(cluster: Cluster) -> None:
    zk = cluster.state["zookeeper"]
    if zk["external"]:
        check_external_zookeeper(zk["address"], created=False)
        return
    host, port = zk["address"].rsplit(":", 1)
    if is_alive(zk["pid"], cluster.zookeeper_marker):
        return
    if port_in_use(host, int(port)):
        raise DevError(
            f"ZooKeeper cannot start: port {port} is in use by another program; stop it, "
            "or choose another --base-port, or use it with --zookeeper HOST:PORT if it is a ZooKeeper."
        )
    zk_dir = os.path.join(cluster.data_dir, "zookeeper")
    os.makedirs(os.path.join(cluster.data_dir, "logs"), exist_ok=True)
    log_path = os.path.join(cluster.data_dir, "logs", "zookeeper.log")
    zk["pid"] = zookeeper.start(zk_dir, host, int(port), log_path)
    cluster.save()
    if not zookeeper.wait_ready(host, int(port)):
        raise DevError(f"ZooKeeper did not start within {zookeeper.READY_WAIT_S_MAX:g} s; see {log_path}.")
