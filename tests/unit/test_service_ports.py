"""A service whose port another process holds stops at once with one sentence that names the port."""

import socket
import subprocess
import sys
from concurrent import futures

import grpc

# No ZooKeeper answers here: a service that got past its ports would fail on it within 0.3 s instead.
NO_ZOOKEEPER = ("--override", "zookeeper.connect=127.0.0.1:1", "--override", "zookeeper.connection.timeout.ms=300")


def start_metadata_service(*overrides: str) -> subprocess.CompletedProcess:
    flags = [part for override in overrides for part in ("--override", override)]
    return subprocess.run([sys.executable, "-m", "replog.metadata", *NO_ZOOKEEPER, *flags],
                          capture_output=True, text=True, timeout=60)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_listener_port_another_grpc_server_holds_is_in_use():
    # grpc listens with SO_REUSEPORT by default, so a second grpc process on the port would start
    # and take half of its connections.
    holder = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    port = holder.add_insecure_port("127.0.0.1:0")
    holder.start()
    try:
        result = start_metadata_service(f"listeners=127.0.0.1:{port}")
    finally:
        holder.stop(0)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert f"cannot listen on 127.0.0.1:{port}: the port is in use" in result.stderr, result.stderr


def test_a_metrics_port_in_use_is_named():
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        result = start_metadata_service(f"listeners=127.0.0.1:{free_port()}", f"metrics.port={port}")
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert f"cannot listen on 127.0.0.1:{port} (metrics.port): Address already in use." in result.stderr, result.stderr
