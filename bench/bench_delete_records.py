"""How long a DeleteRecords takes on a partition of 3 replicas, next to a ListOffsets in the same run.

Starts `replog dev up` (3 brokers) in a temporary directory, writes `--records` records of 100 B to a
topic of one partition and 3 replicas, then, `--runs` times, alternates `Admin.delete_records` one
step further along the log with `Admin.list_offsets` (earliest) on the same partition. A ListOffsets
is one round trip to the leader; a DeleteRecords is that and the followers' next fetches, which
bring them the leader's new log start and tell the leader theirs, and the leader's write of its
log start checkpoint: the difference is what waiting for the replicas costs. Reports each call's
milliseconds, median (min–max).

    python bench/bench_delete_records.py [--runs 40] [--records 10000] [--json]
"""

from __future__ import annotations

import argparse
import json
import time

from bench_replication import bootstrap_of, dev_cluster, summary

from replog.client import Admin, NewTopic, Producer, TopicPartition


def measure(bootstrap: str, runs: int, records: int) -> dict[str, list[float]]:
    tp = TopicPartition("deleted", 0)
    times: dict[str, list[float]] = {"delete_records_ms": [], "list_offsets_ms": []}
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(tp.topic, 1, 3)])
        with Producer(bootstrap, acks="all") as producer:
            producer.send_many(tp.topic, [b"x" * 100] * records, partition=0)
        step = records // runs
        for run in range(1, runs + 1):
            started = time.perf_counter()
            low_watermarks = admin.delete_records({tp: run * step})
            times["delete_records_ms"].append((time.perf_counter() - started) * 1000)
            if low_watermarks != {tp: run * step}:
                raise SystemExit(f"delete_records answered {low_watermarks}, not {run * step}")
            started = time.perf_counter()
            admin.list_offsets({tp: "earliest"})
            times["list_offsets_ms"].append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.runs < 1 or args.records < args.runs:
        parser.error("--runs must be at least 1 and --records at least --runs")
    with dev_cluster("replog-bench-delete-") as data_dir:
        times = measure(bootstrap_of(data_dir), args.runs, args.records)
    if args.json:
        print(json.dumps(times))
        return
    for name, values in times.items():
        figures = summary(values)
        print(f"{name}: {figures['median']} ({figures['min']}–{figures['max']})")


if __name__ == "__main__":
    main()
