"""The cluster under test: a `replog dev` cluster driven through the command, as an operator would.

Brokers can be moved into network namespaces of their own (netns.py) so that the
nemesis can cut them off; such a broker is started again inside its namespace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from replog.client import Admin, ClientError, NewTopic
from replog.client.types import PartitionInfo
from replog.dev import cluster as local
from tests.chaos.netns import Namespace, Relay
from tests.integration.cluster import dev_status
from tests.integration.cluster import wait_for as poll_until

T = TypeVar("T")

REPLOG = [sys.executable, "-m", "replog.cli.main"]
COMMAND_TIMEOUT_S = 120.0
POLL_INTERVAL_S = 0.1

# Shorter than replog dev's own test-friendly values so that the matrix fits its time budget;
# still several heartbeats (a third of the session timeout each) for a loaded 2-core machine.
SESSION_TIMEOUT_MS = 4000
REPLICA_LAG_TIME_MS = 5000
CLUSTER_CONFIG = {
    "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "replica.lag.time.max.ms": str(REPLICA_LAG_TIME_MS),
}
SESSION_TIMEOUT_S = SESSION_TIMEOUT_MS / 1000
FAILOVER_S_MAX = SESSION_TIMEOUT_S + 20
RECOVERY_S_MAX = 60.0


class ChaosError(AssertionError):
    """The cluster did not reach a state the scenario waits for within its deadline."""


def wait_for(condition: Callable[[], T], timeout_s: float, what: str) -> T:
    """Poll condition until it returns something truthy; ChaosError naming `what` at the deadline."""
    return poll_until(condition, timeout_s, what, interval_s=POLL_INTERVAL_S, error=ChaosError)


class ChaosCluster:
    """ZooKeeper, brokers, controllers and a metadata service, run by `replog dev` in data_dir."""

    def __init__(self, data_dir: str, *, brokers: int = 3, controllers: int = 2) -> None:
        self.data_dir = data_dir
        self.broker_count = brokers
        self.controller_count = controllers
        self.namespaces: dict[int, Namespace] = {}
        self.relays: dict[int, Relay] = {}
        self._admin: Admin | None = None

    # -- the command ---------------------------------------------------------------------------

    def replog(self, *args: str, prefix: tuple[str, ...] = (), check: bool = True) -> str:
        argv = [*prefix, *REPLOG, *args, "--data-dir", self.data_dir]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
        if check and result.returncode != 0:
            raise ChaosError(f"replog {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}")
        return result.stdout

    def up(self) -> None:
        config = [arg for key, value in CLUSTER_CONFIG.items() for arg in ("--config", f"{key}={value}")]
        self.replog("dev", "up", "--brokers", str(self.broker_count), "--controllers",
                    str(self.controller_count), *config)
        self._admin = Admin(self.bootstrap, request_timeout_ms=5_000)

    def down(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None
        for relay in self.relays.values():
            relay.close()
        if os.path.exists(os.path.join(self.data_dir, "cluster.json")):
            self.replog("dev", "down", check=False)
        for namespace in self.namespaces.values():
            namespace.close()
        self.relays.clear()
        self.namespaces.clear()

    def state(self) -> dict[str, Any]:
        with open(os.path.join(self.data_dir, "cluster.json"), encoding="utf-8") as handle:
            return json.load(handle)

    def status(self) -> dict[str, Any]:
        return dev_status(self.data_dir)

    @property
    def bootstrap(self) -> str:
        return self.state()["metadata"][0]["address"]

    @property
    def admin(self) -> Admin:
        assert self._admin is not None, "the cluster is not up"
        return self._admin

    def broker_ids(self) -> list[int]:
        return [b["id"] for b in self.state()["brokers"]]

    def broker_address(self, broker_id: int) -> str:
        return next(b["address"] for b in self.state()["brokers"] if b["id"] == broker_id)

    def broker_data_dir(self, broker_id: int) -> str:
        return os.path.join(self.data_dir, f"broker-{broker_id}", "data")

    def pid(self, kind: str, member_id: int) -> int | None:
        plural = {"broker": "brokers", "controller": "controllers"}[kind]
        return next(m["pid"] for m in self.state()[plural] if m["id"] == member_id)

    # -- processes -----------------------------------------------------------------------------

    def signal(self, kind: str, member_id: int, name: str) -> None:
        """What `replog dev kill KIND ID --signal NAME` does (KILL and TERM wait until the process is gone), in
        this process."""
        local.kill(local.Cluster.load(self.data_dir), kind, member_id, name)

    def start(self, kind: str, member_id: int) -> None:
        """`replog dev start`, inside the broker's namespace if it has one."""
        namespace = self.namespaces.get(member_id) if kind == "broker" else None
        prefix = tuple(namespace.exec_prefix()) if namespace else ()
        self.replog("dev", "start", kind, str(member_id), prefix=prefix)

    def alive(self, kind: str, member_id: int) -> bool:
        from replog.dev.cluster import Cluster

        return Cluster.load(self.data_dir).member(kind, member_id).alive

    def isolatable(self, broker_id: int) -> Relay:
        """Move a broker into a network namespace of its own behind a relay (a clean restart)."""
        if broker_id in self.relays:
            return self.relays[broker_id]
        state = self.state()
        ports = {int(state["zookeeper"]["address"].rsplit(":", 1)[1]): "zookeeper"}
        for kind, plural in (("broker", "brokers"), ("controller", "controllers"), ("metadata", "metadata")):
            ports.update({int(m["address"].rsplit(":", 1)[1]): kind for m in state[plural]})
        if self.alive("broker", broker_id):
            self.signal("broker", broker_id, "TERM")
        namespace = Namespace(f"replog-chaos-{os.getpid()}-b{broker_id}")
        self.namespaces[broker_id] = namespace
        port = int(self.broker_address(broker_id).rsplit(":", 1)[1])
        self.relays[broker_id] = Relay(namespace, port, ports, self.member_pids)
        self.start("broker", broker_id)
        return self.relays[broker_id]

    def member_pids(self) -> dict[int, str]:
        """The pid of every running process of the cluster, and its kind."""
        state = self.state()
        pids = {state["zookeeper"]["pid"]: "zookeeper"}
        for kind, plural in (("broker", "brokers"), ("controller", "controllers"), ("metadata", "metadata")):
            pids.update({m["pid"]: kind for m in state[plural]})
        pids.pop(None, None)
        return pids

    # -- what the cluster says -----------------------------------------------------------------

    def partitions(self, topic: str) -> tuple[PartitionInfo, ...]:
        (description,) = self.admin.describe_topics([topic])
        return description.partitions

    def partition(self, topic: str, partition: int = 0) -> PartitionInfo:
        return self.partitions(topic)[partition]

    def leader(self, topic: str, partition: int = 0) -> int:
        return self.partition(topic, partition).leader

    def active_controller(self) -> int | None:
        active = [c["id"] for c in self.status()["controllers"] if c["active"]]
        return active[0] if len(active) == 1 else None

    def create_topic(self, name: str, *, partitions: int = 3, replication_factor: int = 3,
                     replica_assignment: dict[int, list[int]] | None = None, **configs: str) -> None:
        configs = {key.replace("_", "."): value for key, value in configs.items()}
        if replica_assignment is not None:
            topic = NewTopic(name, replica_assignment=replica_assignment, configs=configs)
        else:
            topic = NewTopic(name, partitions, replication_factor, configs=configs)
        self.admin.create_topics([topic])
        wait_for(lambda: self._all_led(name), 30, f"{name} to have leaders")

    def _all_led(self, topic: str) -> bool:
        try:
            return all(p.leader >= 0 for p in self.partitions(topic))
        except ClientError:
            return False

    # -- waiting for recovery ------------------------------------------------------------------

    def wait_led(self, topic: str, partition: int, not_by: int, timeout_s: float = FAILOVER_S_MAX) -> int:
        """Wait until the partition has a live leader other than `not_by`; returns it."""
        def led() -> int | None:
            try:
                leader = self.leader(topic, partition)
            except ClientError:
                return None
            return leader if leader not in (-1, not_by) else None

        return wait_for(led, timeout_s, f"{topic}-{partition} to get a leader other than broker {not_by}")

    def wait_full_isr(self, topic: str, timeout_s: float = RECOVERY_S_MAX) -> None:
        def full() -> bool:
            try:
                return all(p.leader >= 0 and sorted(p.isr) == sorted(p.replicas) for p in self.partitions(topic))
            except ClientError:
                return False

        wait_for(full, timeout_s, f"every replica of {topic} to be back in the ISR")

    def wait_one_active_controller(self, timeout_s: float = FAILOVER_S_MAX) -> int:
        return wait_for(self.active_controller, timeout_s, "exactly one active controller")

    def heal_all(self) -> None:
        """Undo every fault: relays healed, paused processes continued, stopped ones started."""
        for relay in self.relays.values():
            relay.heal()
        for kind, count in (("broker", self.broker_count), ("controller", self.controller_count)):
            for member_id in range(1, count + 1):
                if self.alive(kind, member_id):
                    self.signal(kind, member_id, "CONT")
                else:
                    self.start(kind, member_id)
