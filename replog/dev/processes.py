"""Starting, probing and signalling the processes of a local cluster."""

from __future__ import annotations

import os
import random
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Callable, Sequence

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from replog.rpc import channels


class DevError(Exception):
    """A problem with the local cluster that the user can fix; the message says how."""


HEALTH_WAIT_S_MAX = 60.0
POLL_INTERVAL_S = 0.1


def spawn(argv: Sequence[str], *, log_path: str, cwd: str, env: dict[str, str] | None = None) -> int:
    """Start a detached process (own session: it outlives this command) logging to log_path."""
    with open(log_path, "ab") as log_file:
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    return process.pid


def process_state(pid: int | None, marker: str) -> str | None:
    """The kernel's state letter of a live process whose command line contains marker.

    None when there is no such process (exited, a zombie, or the pid now belongs
    to an unrelated program). A child of ours whose command line is still empty
    counts as live: the kernel lets the parent go on before it has finished
    setting up the new program's arguments.
    """
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace")
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode(errors="replace")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    state, parent = fields[0], int(fields[1])
    if state in ("Z", "X"):
        return None
    if marker not in cmdline and not (not cmdline.strip() and parent == os.getpid()):
        return None
    return state


def is_alive(pid: int | None, marker: str) -> bool:
    return process_state(pid, marker) is not None


def is_stopped(pid: int | None, marker: str) -> bool:
    return process_state(pid, marker) in ("T", "t")


def send_signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def wait_until(condition: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(POLL_INTERVAL_S)
    return condition()


def stop_processes(pids: Sequence[tuple[int, str]], *, grace_s: float) -> list[int]:
    """SIGTERM (after SIGCONT, so a paused one can act on it), then SIGKILL what is left after `grace_s`
    (0: SIGKILL alone).

    Returns the pids that had to be killed.
    """
    live = [(pid, marker) for pid, marker in pids if is_alive(pid, marker)]
    for pid, _ in live:
        send_signal(pid, signal.SIGCONT)
        if grace_s > 0:
            send_signal(pid, signal.SIGTERM)
    wait_until(lambda: not any(is_alive(p, m) for p, m in live), grace_s)
    killed = [pid for pid, marker in live if is_alive(pid, marker)]
    for pid in killed:
        send_signal(pid, signal.SIGKILL)
    wait_until(lambda: not any(is_alive(p, m) for p, m in live), 5.0)
    return killed


def port_in_use(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


# Listening ports are picked below the kernel's ephemeral range: a port from that range can be
# taken by any outgoing connection while its process is down, and a restart would then fail.
LISTEN_PORT_MIN = 20_000
EPHEMERAL_RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range"


def free_port(host: str, taken: set[int] = frozenset()) -> int:
    """A free port below the ephemeral range, not in `taken`, starting from a random place."""
    low = _ephemeral_port_min()
    candidates = list(range(LISTEN_PORT_MIN, low))
    start = random.randrange(len(candidates))
    for port in candidates[start:] + candidates[:start]:
        if port not in taken and not port_in_use(host, port):
            return port
    raise DevError(f"no free port between {LISTEN_PORT_MIN} and {low - 1} on {host}; choose a --base-port.")


def _ephemeral_port_min() -> int:
    try:
        with open(EPHEMERAL_RANGE_FILE, encoding="ascii") as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def health_status(address: str, timeout_s: float = 1.0, security: channels.ClientSecurity | None = None) -> str:
    """The gRPC health of a server: SERVING, NOT_SERVING, or UNREACHABLE."""
    with channels.channel(address, security=security) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            response = stub.Check(health_pb2.HealthCheckRequest(), timeout=timeout_s)
        except grpc.RpcError:
            return "UNREACHABLE"
    return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)


def wait_serving(name: str, address: str, pid: int, marker: str, log_path: str,
                 security: channels.ClientSecurity | None = None) -> None:
    """Wait until a started process reports SERVING; if it dies, say why from its log."""

    def ready() -> bool:
        if not is_alive(pid, marker):
            raise DevError(f"{name} exited while starting. The end of {log_path}:\n{tail(log_path)}")
        return health_status(address, timeout_s=0.5, security=security) == "SERVING"

    if not wait_until(ready, HEALTH_WAIT_S_MAX):
        raise DevError(
            f"{name} did not become SERVING within {HEALTH_WAIT_S_MAX:g} s. "
            f"The end of {log_path}:\n{tail(log_path)}"
        )


def tail(path: str, lines: int = 15) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 8192))
            text = handle.read().decode(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join("    " + line for line in text.splitlines()[-lines:])


def scrape_metric(metrics_address: str, name: str, timeout_s: float = 1.0,
                  security: channels.ClientSecurity | None = None) -> float | None:
    """One sample from a Prometheus /metrics endpoint (HTTPS under TLS), or None if unavailable; `name` as the
    page writes it, labels included (`name{label="value"}`)."""
    context = metrics_client_context(security) if security is not None and security.tls else None
    url = f"{'https' if context else 'http'}://{metrics_address}/metrics"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s, context=context) as response:
            body = response.read().decode()
    except OSError:
        return None
    for line in body.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def metrics_client_context(security: channels.ClientSecurity) -> ssl.SSLContext:
    """A client context for a TLS /metrics port: verify it by the CA, present the client certificate."""
    context = ssl.create_default_context(cafile=security.cafile)
    if security.certfile:
        context.load_cert_chain(security.certfile, security.keyfile)
    return context
