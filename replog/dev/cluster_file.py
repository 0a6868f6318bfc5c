"""cluster.json: where every process of a local cluster is, and where its files go.

`replog dev up` writes it in the cluster's data dir; later commands (and tests)
read it to find the processes, their addresses, pids and files.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from replog.dev import zookeeper
from replog.dev.processes import DevError, is_alive
from replog.rpc.channels import ClientSecurity

CLUSTER_FILE = "cluster.json"
DEFAULT_DATA_DIR = ".replog"
REQUIRED_KEYS = frozenset({"zookeeper", "brokers", "controllers", "metadata"})


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

    @staticmethod
    def path(data_dir: str) -> str:
        return os.path.join(data_dir, CLUSTER_FILE)

    @classmethod
    def load(cls, data_dir: str) -> Cluster:
        try:
            with open(cls.path(data_dir), encoding="utf-8") as handle:
                state = json.load(handle)
        except FileNotFoundError:
            raise DevError(
                f"no local cluster in {data_dir} (no {CLUSTER_FILE}); start one with `replog dev up`."
            ) from None
        except (OSError, ValueError) as error:
            raise DevError(f"cannot read {cls.path(data_dir)}: {error}.") from None
        if not isinstance(state, dict) or not REQUIRED_KEYS <= state.keys():
            raise DevError(f"{cls.path(data_dir)} is not a replog cluster file: it does not record "
                           f"{', '.join(sorted(REQUIRED_KEYS))}.")
        return cls(data_dir, state)

    @classmethod
    def create(cls, data_dir: str, zookeeper_address: str, zookeeper_external: bool, config: dict[str, str],
               addresses: dict[str, list[tuple[str, str]]]) -> Cluster:
        """A new cluster.json: ZooKeeper, the config overrides, and the (address, metrics address)
        of each member by kind, numbered from 1."""
        state: dict[str, Any] = {
            "version": 1,
            "zookeeper": {"address": zookeeper_address, "pid": None, "external": zookeeper_external},
            "config": config,
            "brokers": [],
            "controllers": [],
            "metadata": [],
        }
        for kind, pairs in addresses.items():
            for member_id, (address, metrics_address) in enumerate(pairs, start=1):
                state[_plural(kind)].append(
                    {"id": member_id, "address": address, "metrics_address": metrics_address, "pid": None})
        cluster = cls(data_dir, state)
        cluster.save()
        return cluster

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
            return zookeeper.any_ready(zk["address"])
        return is_alive(zk["pid"], self.zookeeper_marker)

    @property
    def zookeeper_marker(self) -> str:
        """ZooKeeper's config file, on its command line and no other's."""
        return os.path.join(self.data_dir, "zookeeper", "zoo.cfg")

    @property
    def tls(self) -> dict[str, Any] | None:
        """The CA and certificates of a `dev up --tls` cluster (replog.dev.tls), or None."""
        return self.state.get("tls")

    @property
    def security(self) -> ClientSecurity:
        """How commands reach this cluster: with the admin certificate under --tls, else plaintext."""
        if self.tls is None:
            return ClientSecurity()
        admin = self.tls["identities"]["admin"]
        return ClientSecurity(self.tls["cafile"], admin["certfile"], admin["keyfile"])

    @property
    def log_format(self) -> str:
        """How the members log: text, or json (one object a line)."""
        return str(self.state.get("log_format", "text"))

    @property
    def prometheus(self) -> dict[str, Any] | None:
        """{"address", "pid"} of the cluster's Prometheus (`dev up --monitoring`), or None."""
        return self.state.get("prometheus")

    @property
    def prometheus_marker(self) -> str:
        """Prometheus's config file, on its command line and no other's."""
        return os.path.join(self.data_dir, "prometheus", "prometheus.yml")

    @property
    def prometheus_alive(self) -> bool:
        return self.prometheus is not None and is_alive(self.prometheus["pid"], self.prometheus_marker)

    # -- the files of each member ------------------------------------------------------------

    def member_dir(self, member: Member) -> str:
        return os.path.join(self.data_dir, f"{member.kind}-{member.id}")

    def properties_path(self, kind: str, member_id: int) -> str:
        return os.path.join(self.data_dir, f"{kind}-{member_id}", f"{kind}.properties")

    def log_path(self, member: Member) -> str:
        return os.path.join(self.data_dir, "logs", f"{member.kind}-{member.id}.log")

    def broker_log_dir(self, broker_id: int) -> str:
        return os.path.join(self.data_dir, f"broker-{broker_id}", "data")


def _plural(kind: str) -> str:
    return {"broker": "brokers", "controller": "controllers", "metadata": "metadata"}[kind]


def find_data_dir(start: str | None = None) -> str:
    """The nearest `.replog/` holding a cluster.json, from the current directory upwards."""
    here = Path(os.path.abspath(start or os.getcwd()))
    for directory in (here, *here.parents):
        candidate = directory / DEFAULT_DATA_DIR
        if (candidate / CLUSTER_FILE).exists():
            return str(candidate)
    return os.path.abspath(DEFAULT_DATA_DIR)
