"""Which of grpc's socket transports a replog process uses, chosen before grpc is imported.

grpcio 1.85 moves every message of its default Posix transport (the EventEngine
client and listener) through an EventEngine thread before grpc.aio's poller
thread and then the event loop see it. Its older transport reads the socket on
the poller thread itself: one thread hop less for every message. A stream
message round trip between two processes on this project's 2-core machine went
from 256 to 163 µs, and each side's CPU for it from 175 to 115 µs
(docs/BENCHMARKS.md, "End-to-end latency"); an acks=all write crosses four such
hops before a consumer has it.

grpc reads the choice from `GRPC_EXPERIMENTS` once, when it is imported, so the
entry points (the services' `__main__`, the CLI and the Spark jobs through it) call
`choose_transport()` first. A value the operator set wins; `GRPC_EXPERIMENTS=` (empty)
gives grpc's default. The same entry points, `replog.spark` and the test suite keep
grpc's fork handlers off (`keep_grpc_out_of_forks`).
"""

from __future__ import annotations

import os
import sys

EXPERIMENTS_ENV = "GRPC_EXPERIMENTS"
OLDER_POSIX_TRANSPORT = "-event_engine_client,-event_engine_listener"
FORK_SUPPORT_ENV = "GRPC_ENABLE_FORK_SUPPORT"


def choose_transport() -> None:
    """Ask grpc for its older Posix transport unless the environment names experiments already,
    and keep grpc out of forked children (keep_grpc_out_of_forks). Changes nothing once grpc is
    imported: it has read the variables by then."""
    if "grpc" not in sys.modules:
        os.environ.setdefault(EXPERIMENTS_ENV, OLDER_POSIX_TRANSPORT)
        keep_grpc_out_of_forks()


def keep_grpc_out_of_forks() -> None:
    """Turn grpc's fork handlers off, unless the environment says otherwise, before grpc is imported.

    grpcio 1.80 and later run handlers around every fork() that start grpc's poller thread again in
    the child. A child forked only to exec another program (subprocess.Popen with a preexec_fn, the
    way PySpark starts its JVM) then now and then aborts before the exec, its poller finding the file
    descriptors closed: 24 of 1,000 such forks of a process with RPCs in flight on this machine,
    none with the handlers off (grpc/grpc#43055). replog never uses grpc in a forked child, so it
    needs none of them. grpc reads the variable when it is imported: later calls change nothing."""
    if "grpc" not in sys.modules:
        os.environ.setdefault(FORK_SUPPORT_ENV, "0")
