"""Latency percentiles as the benches report them."""

from __future__ import annotations

import math


def percentiles_ms(latencies_ns: list[int]) -> dict[str, float]:
    """p50, p99, p99.9 and max of the latencies: the smallest value with that share at or below it."""
    ordered = sorted(latencies_ns)

    def at(share: float) -> float:
        index = min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))
        return round(ordered[index] / 1e6, 3)

    return {"p50_ms": at(0.50), "p99_ms": at(0.99), "p999_ms": at(0.999), "max_ms": at(1.0)}
