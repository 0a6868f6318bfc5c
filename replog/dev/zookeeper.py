"""A standalone ZooKeeper server for a local cluster, from Debian's `zookeeper` package."""

from __future__ import annotations

import os
import shutil
import socket

from replog.config import zookeeper_hosts
from replog.dev.processes import DevError, spawn, wait_until

ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"
# Optional: gives ZooKeeper's own log lines a destination (otherwise slf4j drops them).
SLF4J_BINDING = "/usr/share/java/slf4j-simple.jar"
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
READY_WAIT_S_MAX = 30.0

# tickTime 500 ms lets sessions be as short as 1 s (2 ticks), which the failover tests use.
CONFIG_TEMPLATE = """\
tickTime=500
initLimit=10
syncLimit=5
dataDir={data_dir}
clientPort={port}
clientPortAddress={host}
maxClientCnxns=0
minSessionTimeout=1000
maxSessionTimeout=60000
admin.enableServer=false
4lw.commands.whitelist=srvr,stat,mntr
"""


def check_installed() -> str:
    """The java binary to use; a DevError that says what to install if anything is missing."""
    java = shutil.which("java")
    if java is None:
        raise DevError(
            "Java is not installed, and ZooKeeper needs it: run `apt-get install default-jre-headless` "
            "(or `make setup`), or point --zookeeper at a running ZooKeeper."
        )
    if not os.path.exists(ZOOKEEPER_JAR):
        raise DevError(
            f"ZooKeeper is not installed ({ZOOKEEPER_JAR} is missing): run `apt-get install zookeeper` "
            "(or `make setup`), or point --zookeeper at a running ZooKeeper."
        )
    return java


def start(data_dir: str, host: str, port: int, log_path: str) -> int:
    java = check_installed()
    os.makedirs(os.path.join(data_dir, "data"), exist_ok=True)
    config_path = os.path.join(data_dir, "zoo.cfg")
    with open(config_path, "w", encoding="utf-8") as handle:
        handle.write(CONFIG_TEMPLATE.format(data_dir=os.path.join(data_dir, "data"), host=host, port=port))
    classpath = ZOOKEEPER_JAR + (":" + SLF4J_BINDING if os.path.exists(SLF4J_BINDING) else "")
    argv = [java, "-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-cp", classpath, MAIN_CLASS, config_path]
    return spawn(argv, log_path=log_path, cwd=data_dir)


def is_ready(host: str, port: int) -> bool:
    """ZooKeeper answers the four-letter word `srvr` with its version and mode once it serves, and with
    "not currently serving requests" before. `srvr` is the one word ZooKeeper 3.5+ allows by default, so
    an external ZooKeeper needs no 4lw.commands.whitelist of its own."""
    try:
        with socket.create_connection((host, port), timeout=1.0) as connection:
            connection.sendall(b"srvr")
            answer = b""
            while len(answer) < 4096 and (chunk := connection.recv(4096)):
                answer += chunk
    except OSError:
        return False
    return answer.startswith(b"Zookeeper version:") and b"Mode:" in answer


def any_ready(connect: str) -> bool:
    """Whether a server of `zookeeper.connect` (host:port[,host:port...][/chroot]) serves."""
    return any(is_ready(address.host, address.port) for address in zookeeper_hosts(connect))


def wait_ready(host: str, port: int, *, timeout_s: float = READY_WAIT_S_MAX) -> bool:
    return wait_until(lambda: is_ready(host, port), timeout_s)
