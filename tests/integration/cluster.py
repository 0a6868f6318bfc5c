"""Drive a real local cluster through the `replog` command, as a user would."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

from replog.dev import cluster as local
from replog.dev import zookeeper
from replog.dev.ports import HOST
from replog.dev.processes import free_port, stop_processes

REPLOG = [sys.executable, "-m", "replog.cli.main"]
COMMAND_TIMEOUT_S = 120
# The HS256 secret the `--tls` test clusters verify bearer tokens with (token.hmac.secret.file).
TOKEN_SECRET = b"a shared secret of at least thirty-two bytes"


def replog(*args: str, check: bool = True, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [*REPLOG, *args], capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, env=env
    )
    if check and result.returncode != 0:
        raise AssertionError(f"replog {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
    return result


def wait_for(condition: Callable[[], Any], timeout_s: float, what: str, interval_s: float = 0.1,
             error: type[AssertionError] = AssertionError) -> Any:
    """Poll condition until it returns something truthy; raise `error` naming `what` at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise error(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(interval_s)


class LocalCluster:
    def __init__(self, data_dir: str) -> None:
        self.data_dir = data_dir

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return replog(*args, "--data-dir", self.data_dir, check=check)

    def up(self, *extra: str) -> None:
        self("dev", "up", *extra)

    def up_sharing_zookeeper(self, *extra: str) -> None:
        """`dev up` on the suite's ZooKeeper, under a chroot of its own, for a test that never stops ZooKeeper."""
        self.up("--zookeeper", SHARED_ZOOKEEPER.chroot(os.path.basename(os.path.dirname(self.data_dir))), *extra)

    def down(self, *, kill: bool = False) -> None:
        """Stop the cluster with `replog dev down`; `kill`: SIGKILL it in this process, for a cluster thrown
        away next (a fixture's teardown: the command's own Python start would be most of its time)."""
        if not os.path.exists(os.path.join(self.data_dir, "cluster.json")):
            return
        if kill:
            local.down(local.Cluster.load(self.data_dir), kill=True)
        else:
            self("dev", "down", check=False)

    def signal(self, kind: str, member_id: int, name: str) -> None:
        """What `replog dev kill KIND ID --signal NAME` does (KILL and TERM wait until the process is gone), in
        this process; test_local_cluster runs the command itself."""
        local.kill(local.Cluster.load(self.data_dir), kind, member_id, name)

    def status(self) -> dict[str, Any]:
        """What `replog dev status --json` prints, read in this process: the command's Python start alone
        costs half a second, and tests ask often (test_local_cluster checks the command prints the same)."""
        return dev_status(self.data_dir)

    def state(self) -> dict[str, Any]:
        with open(os.path.join(self.data_dir, "cluster.json"), encoding="utf-8") as handle:
            return json.load(handle)

    def active_controllers(self) -> list[int]:
        return [c["id"] for c in self.status()["controllers"] if c["active"]]

    def metrics_address(self, kind: str, member_id: int) -> str:
        plural = {"broker": "brokers", "controller": "controllers", "metadata": "metadata"}[kind]
        return next(m["metrics_address"] for m in self.state()[plural] if m["id"] == member_id)

    def log_text(self, kind: str, member_id: int) -> str:
        with open(os.path.join(self.data_dir, "logs", f"{kind}-{member_id}.log"), encoding="utf-8") as handle:
            return handle.read()

    def pids(self) -> list[int]:
        report = self.status()
        pids = [report["zookeeper"]["pid"]]
        for kind in ("brokers", "controllers", "metadata"):
            pids += [m["pid"] for m in report[kind]]
        return [p for p in pids if p]


def dev_status(data_dir: str) -> dict[str, Any]:
    return json.loads(json.dumps(local.status(local.Cluster.load(data_dir))))


class SharedZooKeeper:
    """One ZooKeeper for the suite's module clusters, each under a chroot of its own (`dev up --zookeeper
    host:port/chroot`): started on first use, stopped at the session's end (tests/conftest.py). A JVM's
    start is a good part of a cluster's, and no module cluster's test stops its ZooKeeper."""

    def __init__(self) -> None:
        self._address: str | None = None
        self._pid: int | None = None
        self._folder = ""
        self._chroots = itertools.count(1)

    def chroot(self, name: str) -> str:
        """zookeeper.connect for a new cluster: the shared server and a chroot no other cluster has."""
        if self._address is None:
            self._start()
        return f"{self._address}/{name}-{next(self._chroots)}"

    @property
    def address(self) -> str:
        if self._address is None:
            self._start()
        return self._address

    def _start(self) -> None:
        self._folder = tempfile.mkdtemp(prefix="replog-tests-zookeeper-")
        port = free_port(HOST)
        self._pid = zookeeper.start(self._folder, HOST, port, os.path.join(self._folder, "zookeeper.log"))
        wait_for(lambda: zookeeper.is_ready(HOST, port), zookeeper.READY_WAIT_S_MAX,
                 "the suite's ZooKeeper to serve")
        self._address = f"{HOST}:{port}"

    def stop(self) -> None:
        if self._pid is not None:
            stop_processes([(self._pid, os.path.join(self._folder, "zoo.cfg"))], grace_s=0)
            shutil.rmtree(self._folder, ignore_errors=True)
        self._address = self._pid = None


SHARED_ZOOKEEPER = SharedZooKeeper()


def started(tmp_path_factory, name: str, *up_args: str) -> Iterator[LocalCluster]:
    """A module fixture's body: a cluster started with `replog dev up` and these arguments, on the suite's
    ZooKeeper under a chroot of its own, always torn down."""
    local = LocalCluster(str(tmp_path_factory.mktemp(name) / "data"))
    try:
        local.up_sharing_zookeeper(*up_args)
        yield local
    finally:
        local.down(kill=True)


def token_secret_file(tmp_path_factory) -> str:
    """A file holding TOKEN_SECRET, for a cluster's token.hmac.secret.file."""
    path = tmp_path_factory.mktemp("token") / "secret"
    path.write_bytes(TOKEN_SECRET)
    return str(path)


def started_tls(tmp_path_factory, name: str, *up_args: str) -> Iterator[LocalCluster]:
    """A module fixture's body: a `replog dev up --tls` cluster of 2 brokers and 1 controller (mTLS on every
    listener) that also takes bearer tokens signed with TOKEN_SECRET."""
    yield from started(tmp_path_factory, name, "--brokers", "2", "--controllers", "1", "--tls",
                       "--config", f"token.hmac.secret.file={token_secret_file(tmp_path_factory)}", *up_args)


def client_certificate(local: LocalCluster, folder: str, name: str):
    """A client certificate (CN=`name`) of a `--tls` cluster's CA: CertificateFiles(certfile, keyfile, cafile)."""
    from replog.security.dev_ca import Authority

    return Authority.load(os.path.dirname(local.state()["tls"]["cafile"])).issue(folder, name)


def read_partition(bootstrap: str, tp, end: int | None = None) -> list:
    """Every record of one partition from its log start up to `end` (default: its end offset now)."""
    from replog.client import Consumer

    consumer = Consumer(bootstrap, auto_offset_reset="earliest")
    try:
        consumer.assign([tp])
        end = consumer.end_offsets([tp])[tp] if end is None else end
        records: list = []
        wait_for(lambda: records.extend(consumer.poll(timeout_ms=200)) or consumer.position(tp) >= end,
                 30, f"{tp} to be read to offset {end}")
        return records
    finally:
        consumer.close()
