"""A three-node NATS JetStream cluster on loopback, from Debian's `nats-server`, each node with its own store.

    with NatsCluster(directory) as cluster:
        cluster.servers      # "nats://127.0.0.1:P1,nats://127.0.0.1:P2,nats://127.0.0.1:P3"
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.request

NODES = 3
READY_S_MAX = 30.0
MAX_PAYLOAD = "8MB"  # the large-batch case publishes 1 MB messages (the default limit is 1 MB)

CONFIG = """\
server_name: n{index}
listen: 127.0.0.1:{client_port}
http: 127.0.0.1:{monitor_port}
max_payload: {max_payload}
jetstream {{
  store_dir: "{store_dir}"
}}
cluster {{
  name: bench
  listen: 127.0.0.1:{route_port}
  routes: [{routes}]
}}
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def binary() -> str:
    found = shutil.which("nats-server") or ("/usr/sbin/nats-server" if os.path.exists("/usr/sbin/nats-server")
                                            else None)
    if found is None:
        raise SystemExit("nats-server is not installed: apt-get install nats-server (or make bench)")
    return found


class NatsCluster:
    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.client_ports = [_free_port() for _ in range(NODES)]
        self.monitor_ports = [_free_port() for _ in range(NODES)]
        self.route_ports = [_free_port() for _ in range(NODES)]
        self.processes: list[subprocess.Popen] = []

    @property
    def servers(self) -> str:
        return ",".join(f"nats://127.0.0.1:{port}" for port in self.client_ports)

    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def __enter__(self) -> NatsCluster:
        server = binary()
        routes = ", ".join(f"nats-route://127.0.0.1:{port}" for port in self.route_ports)
        for index in range(NODES):
            node_dir = os.path.join(self.directory, f"n{index}")
            os.makedirs(node_dir, exist_ok=True)
            config_path = os.path.join(node_dir, "nats.conf")
            with open(config_path, "w", encoding="utf-8") as handle:
                handle.write(CONFIG.format(index=index, client_port=self.client_ports[index],
                                           monitor_port=self.monitor_ports[index], max_payload=MAX_PAYLOAD,
                                           store_dir=os.path.join(node_dir, "store"),
                                           route_port=self.route_ports[index], routes=routes))
            log = open(os.path.join(node_dir, "nats.log"), "ab")
            self.processes.append(subprocess.Popen([server, "-c", config_path], stdout=log, stderr=log,
                                                   stdin=subprocess.DEVNULL))
            log.close()
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        """Every node answers /healthz with JetStream up (which needs the cluster's meta leader)."""
        deadline = time.monotonic() + READY_S_MAX
        pending = set(self.monitor_ports)
        while pending and time.monotonic() < deadline:
            for port in list(pending):
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as answer:
                        if answer.status == 200:
                            pending.discard(port)
                except OSError:
                    pass
            time.sleep(0.2)
        if pending:
            self.__exit__(None, None, None)
            raise SystemExit(f"the NATS cluster was not healthy within {READY_S_MAX:g} s; see {self.directory}")

    def __exit__(self, *exc_info: object) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        self.processes.clear()
