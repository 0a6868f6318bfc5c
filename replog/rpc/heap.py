"""Garbage collection that stays out of the way of latency."""

from __future__ import annotations

import gc


def freeze_heap() -> None:
    """Keep every object the process holds now (modules, generated protos, grpc, recovered logs, open
    connections) out of later garbage collections. A full collection walks every tracked object while the
    process waits: in a broker or a client process that stalled everything for 10–30 ms, once or twice a
    minute at 5,000 records/s (docs/BENCHMARKS.md). Call it once start-up is done."""
    gc.collect()
    gc.freeze()
