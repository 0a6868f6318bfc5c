"""`replog_build_info`: what a process runs, as a series with the value 1 and the facts as labels.

Kafka reports its version and commit per broker (app-info); Prometheus its own build as
`prometheus_build_info`. During a rolling upgrade, `count by (version) (replog_build_info)` says how
many processes run each version, `event_loop` which loop a process chose
(`replog/rpc/event_loop.py`), and `malloc` whose malloc settings it runs with (`replog/rpc/allocator.py`).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import platform

import grpc
import prometheus_client

from replog.rpc import allocator

BUILD_INFO = prometheus_client.Info(
    "replog_build", "What this process runs: its service, replog's version, Python's, grpcio's, its event loop and "
    "whose malloc settings.")


def version() -> str:
    try:
        return importlib.metadata.version("replog")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown"


def record(service: str) -> None:
    """Set the series for this process; call it on the running loop."""
    loop = type(asyncio.get_running_loop()).__module__.split(".", 1)[0]
    BUILD_INFO.info({"service": service, "version": version(), "python": platform.python_version(),
                     "grpc": grpc.__version__, "event_loop": loop, "malloc": allocator.state()})
