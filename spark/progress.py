"""What a streaming query's progress says about a replog source: rows, rows/s and how far behind.

Spark puts each source's `endOffset` (where the micro-batch ended) and `latestOffset` (the log
ends the source saw, from reportLatestOffset) into every StreamingQueryProgress; the offsets
behind the latest per partition are what `replog_consumergroup_lag` is for a group, and the
avg/max/min over partitions are the figures spark-sql-kafka reports as source metrics.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def _offsets(value: Any) -> dict[tuple[str, int], int]:
    parsed = json.loads(value) if isinstance(value, str) else (value or {})
    return {(topic, int(p)): int(o) for topic, partitions in parsed.items() for p, o in partitions.items()}


def offsets_behind_latest(source: Mapping[str, Any]) -> dict[tuple[str, int], int]:
    """{(topic, partition): offsets between the micro-batch's end and the latest offset}."""
    end = _offsets(source.get("endOffset"))
    latest = _offsets(source.get("latestOffset"))
    return {tp: max(latest[tp] - end.get(tp, latest[tp]), 0) for tp in latest}


def batch_summary(progress: Mapping[str, Any]) -> dict[str, Any]:
    """One micro-batch in the figures a user watches: input rows, rows/s and the lag behind the latest."""
    behind = [lag for source in progress.get("sources", ()) for lag in offsets_behind_latest(source).values()]
    return {
        "batchId": progress.get("batchId"),
        "numInputRows": progress.get("numInputRows", 0),
        "inputRowsPerSecond": progress.get("inputRowsPerSecond", 0.0),
        "processedRowsPerSecond": progress.get("processedRowsPerSecond", 0.0),
        "triggerExecutionMs": progress.get("durationMs", {}).get("triggerExecution", 0),
        "maxOffsetsBehindLatest": max(behind, default=0),
        "avgOffsetsBehindLatest": sum(behind) / len(behind) if behind else 0.0,
        "minOffsetsBehindLatest": min(behind, default=0),
    }
