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
entry points (the services' `__main__`, the CLI) call `choose_transport()` first.
A value the operator set wins; `GRPC_EXPERIMENTS=` (empty) gives grpc's default.
"""

from __future__ import annotations

import os
import sys

EXPERIMENTS_ENV = "GRPC_EXPERIMENTS"
OLDER_POSIX_TRANSPORT = "-event_engine_client,-event_engine_listener"


def choose_transport() -> None:
    """Ask grpc for its older Posix transport unless the environment names experiments already.
    Changes nothing once grpc is imported: it has read the variable by then."""
    if "grpc" not in sys.modules:
        os.environ.setdefault(EXPERIMENTS_ENV, OLDER_POSIX_TRANSPORT)
