"""`replog dev`: a real local cluster — ZooKeeper, brokers, controllers, a metadata service.

Each process runs detached with its own properties file, log file and data
directory under the cluster's data dir; `cluster.json` there records where
everything is, so later commands (and tests) find it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from replog.config import Setting
from replog.dev import zookeeper
from replog.dev.processes import (
    DevError,
    free_port,
    health_status,
    is_alive,
    is_stopped,
    port_in_use,
    scrape_metric,
    send_signal,
    spawn,
    stop_processes,
    wait_serving,
    wait_until,
)

CLUSTER_FILE = "cluster.json"
DEFAULT_DATA_DIR = ".replog"
HOST = "127.0.0.1"
KILL_WAIT_S_MAX = 10.0
PORT_FREE_WAIT_S_MAX = 5.0
TERM_WAIT_S_MAX = 60.0

# Test-friendly timeouts (DESIGN §9); production defaults stay Kafka's.
DEV_DEFAULTS = {
    "zookeeper.session.timeout.ms": "6000",
    "replica.lag.time.max.ms": "10000",
    "controlled.shutdown.retry.backoff.ms": "200",
}


def _service_settings() -> dict[str, tuple[Setting, ...]]:
    from replog.broker.service import SETTINGS as broker
    from replog.controller.service import SETTINGS as controller
    from replog.metadata.service import SETTINGS as metadata

    return {"broker": broker, "controller": controller, "metadata": metadata}


@dataclasses.dataclass
class Member:
    """One process of the cluster as recorded in cluster.json."""

    kind: str  # broker | controller | metadata
    id: int
    address: str
    metrics_address: str
    pid: int | None = None
    # The member's properties file: it is on the process's command line, and no other process
    # has it there, so a recorded pid that the kernel gave to another program (pids wrap
    # around quickly on a busy machine) is never taken for the member.
    marker: str = ""

    @property
    def name(self) -> str:
        return f"{self.kind} {self.id}" if self.kind != "metadata" else f"metadata service {self.id}"

    @property
    def alive(self) -> bool:
        return is_alive(self.pid, self.marker)


class Cluster:
    def __init__(self, data_dir: str, state: dict[str, Any]) -> None:
        self.data_dir = os.path.abspath(data_dir)
        self.state = state

    # -- cluster.json ------------------------------------------------------------------------

    @staticmethod
    def path(data_dir: str) -> str:
        return os.path.join(data_dir, CLUSTER_FILE)

    @classmethod
    def load(cls, data_dir: str) -> Cluster:
        try:
            with open(cls.path(data_dir), encoding="utf-8") as handle:
                return cls(data_dir, json.load(handle))
        except FileNotFoundError:
            raise DevError(
                f"no local cluster in {data_dir} (no {CLUSTER_FILE}); start one with `replog dev up`."
            ) from None
        except (OSError, ValueError) as error:
            raise DevError(f"cannot read {cls.path(data_dir)}: {error}.") from None

    def save(self) -> None:
        temporary = self.path(self.data_dir) + ".tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(self.state, handle, indent=2)
            handle.write("\n")
        os.replace(temporary, self.path(self.data_dir))

    def members(self, kind: str | None = None) -> list[Member]:
        kinds = [kind] if kind else ["broker", "controller", "metadata"]
        found = []
        for each in kinds:
            for entry in self.state[_plural(each)]:
                found.append(Member(each, entry["id"], entry["address"], entry["metrics_address"], entry["pid"],
                                    self.properties_path(each, entry["id"])))
        return found

    def member(self, kind: str, member_id: int) -> Member:
        for member in self.members(kind):
            if member.id == member_id:
                return member
        ids = ", ".join(str(m.id) for m in self.members(kind)) or "none"
        raise DevError(f"there is no {kind} {member_id} in this cluster ({kind} ids: {ids}).")

    def record_pid(self, member: Member, pid: int | None) -> None:
        for entry in self.state[_plural(member.kind)]:
            if entry["id"] == member.id:
                entry["pid"] = pid
        member.pid = pid
        self.save()

    @property
    def zookeeper_address(self) -> str:
        return self.state["zookeeper"]["address"]

    @property
    def zookeeper_alive(self) -> bool:
        zk = self.state["zookeeper"]
        if zk["external"]:
            host, port = zk["address"].rsplit(":", 1)
            return zookeeper.is_ready(host, int(port))
        return is_alive(zk["pid"], self.zookeeper_marker)

    @property
    def zookeeper_marker(self) -> str:
        """ZooKeeper's config file, on its command line and no other's."""
        return os.path.join(self.data_dir, "zookeeper", "zoo.cfg")

    # -- processes -----------------------------------------------------------------------------

    def member_dir(self, member: Member) -> str:
        return os.path.join(self.data_dir, f"{member.kind}-{member.id}")

    def properties_path(self, kind: str, member_id: int) -> str:
        return os.path.join(self.data_dir, f"{kind}-{member_id}", f"{kind}.properties")

    def log_path(self, member: Member) -> str:
        return os.path.join(self.data_dir, "logs", f"{member.kind}-{member.id}.log")

    def broker_log_dir(self, broker_id: int) -> str:
        return os.path.join(self.data_dir, f"broker-{broker_id}", "data")

    def write_properties(self, member: Member) -> str:
        directory = self.member_dir(member)
        os.makedirs(directory, exist_ok=True)
        settings = {
            "listeners": member.address,
            "metrics.port": member.metrics_address.rsplit(":", 1)[1],
            "zookeeper.connect": self.zookeeper_address,
        }
        if member.kind == "broker":
            settings.update({"broker.id": str(member.id), "log.dirs": self.broker_log_dir(member.id)})
        elif member.kind == "controller":
            settings["controller.id"] = str(member.id)
        settings.update(_applicable(self.state["config"], member.kind))
        path = self.properties_path(member.kind, member.id)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(f"# {member.name} of the local cluster in {self.data_dir}\n")
            handle.writelines(f"{key}={value}\n" for key, value in settings.items())
        return path

    def start_member(self, member: Member) -> None:
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
        properties = self.write_properties(member)
        os.makedirs(os.path.join(self.data_dir, "logs"), exist_ok=True)
        argv = [sys.executable, "-m", f"replog.{member.kind}", properties]
        pid = spawn(argv, log_path=self.log_path(member), cwd=self.member_dir(member))
        self.record_pid(member, pid)

    def wait_member(self, member: Member) -> None:
        assert member.pid is not None
        wait_serving(member.name, member.address, member.pid, member.marker,
                     self.log_path(member))

    def start_zookeeper(self) -> None:
        zk = self.state["zookeeper"]
        host, port = zk["address"].rsplit(":", 1)
        if zk["external"]:
            if not zookeeper.is_ready(host, int(port)):
                raise DevError(f"no ZooKeeper answers at {zk['address']} (given with --zookeeper).")
            return
        if is_alive(zk["pid"], self.zookeeper_marker):
            return
        if port_in_use(host, int(port)):
            raise DevError(
                f"ZooKeeper cannot start: port {port} is in use by another program; stop it, "
                "or choose another --base-port, or use it with --zookeeper HOST:PORT if it is a ZooKeeper."
            )
        zk_dir = os.path.join(self.data_dir, "zookeeper")
        os.makedirs(os.path.join(self.data_dir, "logs"), exist_ok=True)
        log_path = os.path.join(self.data_dir, "logs", "zookeeper.log")
        zk["pid"] = zookeeper.start(zk_dir, host, int(port), log_path)
        self.save()
        if not zookeeper.wait_ready(host, int(port)):
            raise DevError(f"ZooKeeper did not start within {zookeeper.READY_WAIT_S_MAX:g} s; see {log_path}.")


def _plural(kind: str) -> str:
    return {"broker": "brokers", "controller": "controllers", "metadata": "metadata"}[kind]


def _applicable(overrides: Mapping[str, str], kind: str) -> dict[str, str]:
    known = {s.name for s in _service_settings()[kind]}
    return {k: v for k, v in overrides.items() if k in known}


def check_config_keys(overrides: Mapping[str, str]) -> None:
    known = {s.name for settings in _service_settings().values() for s in settings}
    for key in overrides:
        if key not in known:
            raise DevError(f"--config {key}: no replog service has a setting by that name; "
                           f"see `python -m replog.broker --list-settings` (or controller, metadata).")


def find_data_dir(start: str | None = None) -> str:
    """The nearest `.replog/` holding a cluster.json, from the current directory upwards."""
    directory = os.path.abspath(start or os.getcwd())
    while True:
        candidate = os.path.join(directory, DEFAULT_DATA_DIR)
        if os.path.exists(os.path.join(candidate, CLUSTER_FILE)):
            return candidate
        parent = os.path.dirname(directory)
        if parent == directory:
            return os.path.abspath(DEFAULT_DATA_DIR)
        directory = parent


# -- the commands ------------------------------------------------------------------------------


def up(
    data_dir: str,
    *,
    brokers: int,
    controllers: int,
    zookeeper_address: str | None,
    base_port: int,
    config: Mapping[str, str],
) -> Cluster:
    data_dir = os.path.abspath(data_dir)
    check_config_keys(config)
    if brokers < 1 or controllers < 1:
        raise DevError("a cluster needs at least one broker and one controller.")
    cluster = _existing_or_new(data_dir, brokers, controllers, zookeeper_address, base_port, config)
    try:
        cluster.start_zookeeper()
        for member in cluster.members():
            if not member.alive:
                cluster.start_member(member)
        for member in cluster.members():
            cluster.wait_member(member)
    except BaseException:
        down(cluster)
        raise
    return cluster


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
        running = [m.name for m in cluster.members() if m.alive]
        if running:
            raise DevError(
                f"a cluster is already running from {data_dir} ({', '.join(running)}); "
                f"use it, or stop it first with `replog dev down --data-dir {data_dir}`."
            )
        recorded = cluster.state["zookeeper"]
        if zookeeper_address and zookeeper_address != recorded["address"]:
            raise DevError(
                f"{data_dir} holds a cluster whose metadata lives in the ZooKeeper at "
                f"{recorded['address']}, not {zookeeper_address}; choose another --data-dir."
            )
        if len(cluster.members("broker")) != brokers or len(cluster.members("controller")) != controllers:
            raise DevError(
                f"{data_dir} holds a cluster of {len(cluster.members('broker'))} brokers and "
                f"{len(cluster.members('controller'))} controllers; restart it with those counts "
                "or choose another --data-dir."
            )
        cluster.state["config"] = {**DEV_DEFAULTS, **config}
        cluster.save()
        return cluster
    if os.path.isdir(data_dir) and os.listdir(data_dir):
        raise DevError(
            f"{data_dir} is not empty and holds no {CLUSTER_FILE}: it is not a replog local "
            "cluster; choose an empty or new --data-dir."
        )
    os.makedirs(data_dir, exist_ok=True)
    ports = _ports(base_port, 1 + 2 * (brokers + controllers + 1))
    zk_external = zookeeper_address is not None
    state: dict[str, Any] = {
        "version": 1,
        "zookeeper": {
            "address": zookeeper_address or f"{HOST}:{next(ports)}",
            "pid": None,
            "external": zk_external,
        },
        "config": {**DEV_DEFAULTS, **config},
        "brokers": [],
        "controllers": [],
        "metadata": [],
    }
    for kind, count in (("broker", brokers), ("controller", controllers), ("metadata", 1)):
        for member_id in range(1, count + 1):
            state[_plural(kind)].append({
                "id": member_id,
                "address": f"{HOST}:{next(ports)}",
                "metrics_address": f"{HOST}:{next(ports)}",
                "pid": None,
            })
    cluster = Cluster(data_dir, state)
    cluster.save()
    return cluster


def _ports(base_port: int, count: int) -> Iterable[int]:
    """Consecutive ports from base_port (each checked), or free ones when base_port is 0."""
    if base_port == 0:
        chosen: set[int] = set()
        while len(chosen) < count:
            chosen.add(free_port(HOST, chosen))
        yield from sorted(chosen)
        return
    for port in range(base_port, base_port + count):
        if port_in_use(HOST, port):
            raise DevError(
                f"port {port} (in the range --base-port {base_port} uses) is in use by another "
                "program; choose another --base-port, or 0 for free ports."
            )
        yield port


def down(cluster: Cluster) -> list[str]:
    """Stop every process; returns the names of those that had to be killed."""
    members = cluster.members()
    # Brokers first, while a controller can still answer their controlled shutdown.
    killed = []
    for kinds in (("metadata", "broker"), ("controller",)):
        pids = [(m.pid, m.marker) for m in members if m.kind in kinds and m.pid]
        killed += stop_processes(pids, grace_s=TERM_WAIT_S_MAX / 2)
    names = [m.name for m in members if m.pid in killed]
    for member in members:
        cluster.record_pid(member, None)
    zk = cluster.state["zookeeper"]
    if not zk["external"] and zk["pid"]:
        if stop_processes([(zk["pid"], cluster.zookeeper_marker)], grace_s=10.0):
            names.append("zookeeper")
        zk["pid"] = None
        cluster.save()
    return names


SIGNALS = {"KILL": signal.SIGKILL, "TERM": signal.SIGTERM, "STOP": signal.SIGSTOP, "CONT": signal.SIGCONT}


def kill(cluster: Cluster, kind: str, member_id: int, signal_name: str) -> tuple[Member, int]:
    """Signal one process; returns it and the pid signalled."""
    member = cluster.member(kind, member_id)
    if not member.alive:
        raise DevError(f"{member.name} is not running.")
    pid = member.pid
    assert pid is not None
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
    cluster.start_member(member)
    cluster.wait_member(member)
    return member


def status(cluster: Cluster) -> dict[str, Any]:
    """The documented `dev status --json` shape (DESIGN §9), and nothing more."""
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
            "alive": member.alive, "active": _is_active(member),
        })
    for member in cluster.members("metadata"):
        report["metadata"].append({"pid": member.pid, "address": member.address, "alive": member.alive})
    return report


def _is_active(member: Member) -> bool:
    """A controller's own word, from its metrics: a paused process cannot answer, so is not active."""
    if not member.alive or is_stopped(member.pid, member.marker):
        return False
    return scrape_metric(member.metrics_address, "replog_active_controller_count") == 1.0


def health(cluster: Cluster) -> dict[str, str]:
    return {m.name: health_status(m.address) for m in cluster.members()}
