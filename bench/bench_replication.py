"""Replication throughput and latency on a real local cluster, next to the raw gRPC ceiling.

Starts `replog dev up` (3 brokers, 2 controllers, ZooKeeper, a metadata
service) in a temporary directory, then runs, alternating, for each case:
`replog bench produce|consume|e2e` as a separate client process, and the
gRPC ceiling at the message size the producer sends, on a stream as the producer sends. Every case runs
`--runs` times; medians with min and max are reported.

    python bench/bench_replication.py [--runs 3] [--records 500000] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPLOG = [sys.executable, "-m", "replog.cli.main"]
PRODUCER_REQUEST_BYTES = 1 << 20  # the producer's default batch.size: what one produce call carries
CASES = [
    ("produce", 100, "1"),
    ("produce", 100, "all"),
    ("produce", 1024, "1"),
    ("produce", 1024, "all"),
    ("consume", 100, "all"),
]


def replog(data_dir: str, *args: str) -> str:
    result = subprocess.run([*REPLOG, *args, "--data-dir", data_dir], capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        raise SystemExit(f"replog {' '.join(args)} failed:\n{result.stderr}")
    return result.stdout


@contextlib.contextmanager
def dev_cluster(prefix: str, controllers: int = 1) -> Iterator[str]:
    """`replog dev up` with 3 brokers in a temporary directory, for the length of the block: its data dir."""
    with tempfile.TemporaryDirectory(prefix=prefix) as scratch:
        data_dir = os.path.join(scratch, "cluster")
        replog(data_dir, "dev", "up", "--brokers", "3", "--controllers", str(controllers))
        try:
            yield data_dir
        finally:
            replog(data_dir, "dev", "down")


def bootstrap_of(data_dir: str) -> str:
    """The metadata service's address of the cluster in `data_dir`."""
    return json.loads(replog(data_dir, "dev", "status", "--json"))["metadata"][0]["address"]


def produce_acks_all(data_dir: str, record_size: int, records: int, flags: tuple[str, ...]) -> dict[str, Any]:
    """`replog bench produce` acks=all on a new topic of 6 partitions and 3 replicas, deleted afterwards so
    that every run finds the same cluster."""
    result = json.loads(replog(data_dir, "bench", "produce", "--records", str(records), "--record-size",
                               str(record_size), "--acks", "all", "--partitions", "6", "--replication-factor", "3",
                               *flags, "--json"))
    replog(data_dir, "topics", "delete", result["topic"])
    return result


def fractions(values: list[float], baselines: list[float]) -> dict[str, float]:
    """Each run's value over the same run's baseline: median, min and max."""
    shares = [value / baseline for value, baseline in zip(values, baselines)]
    return {"median": round(statistics.median(shares), 2), "min": round(min(shares), 2),
            "max": round(max(shares), 2)}


def grpc_ceiling(size: int) -> dict[str, Any]:
    out = subprocess.run([sys.executable, os.path.join(HERE, "bench_grpc_echo.py"), "--sizes", str(size),
                          "--modes", "stream", "--runs", "1", "--seconds", "2", "--json"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return json.loads(out)[0]


def summary(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 1), "min": round(min(values), 1),
            "max": round(max(values), 1)}


def runs_and_sizes(description: str, records_100b: int, records_1kb: int) -> tuple[argparse.Namespace, dict[int, int]]:
    """The command line of the benches that alternate cases at 100 B and 1 KB: --runs, the record
    count of each size, --json; returns the arguments and {record size: records per case}."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--records-100b", type=int, default=records_100b, help="records per case at 100 B")
    parser.add_argument("--records-1kb", type=int, default=records_1kb, help="records per case at 1 KB")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.runs < 1 or args.records_100b < 1 or args.records_1kb < 1:
        parser.error("--runs and the record counts must be at least 1")
    return args, {100: args.records_100b, 1024: args.records_1kb}


def run(runs: int, records: int, e2e_rate: int, e2e_records: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with dev_cluster("replog-bench-", controllers=2) as data_dir:
        for _ in range(runs):
            for kind, size, acks in CASES:
                line = json.loads(replog(data_dir, "bench", kind, "--records", str(records),
                                         "--record-size", str(size), "--acks", acks, "--partitions", "6",
                                         "--replication-factor", "3", "--json"))
                results.setdefault(f"{kind} {size}B acks={acks}", []).append(line)
                ceiling = grpc_ceiling(PRODUCER_REQUEST_BYTES)
                results.setdefault("grpc ceiling 1MiB", []).append(ceiling)
            line = json.loads(replog(data_dir, "bench", "e2e", "--records", str(e2e_records), "--rate",
                                     str(e2e_rate), "--record-size", "100", "--acks", "all",
                                     "--partitions", "6", "--replication-factor", "3", "--json"))
            results.setdefault(f"e2e 100B acks=all at {e2e_rate}/s", []).append(line)
    return results


def report(results: dict[str, Any]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for name, lines in results.items():
        if name.startswith("grpc"):
            table[name] = {"calls_per_s": summary([r["calls_per_s"] for r in lines]),
                           "mb_per_s": summary([r["mb_per_s"] for r in lines])}
        elif name.startswith("e2e"):
            table[name] = {key: summary([r[key] for r in lines]) for key in ("p50_ms", "p99_ms", "p999_ms")}
        else:
            table[name] = {"records_per_s": summary([r["records_per_s"] for r in lines]),
                           "mb_per_s": summary([r["mb_per_s"] for r in lines])}
    ceiling = table["grpc ceiling 1MiB"]["mb_per_s"]["median"]
    for name, row in table.items():
        if "records_per_s" in row:
            row["share_of_grpc_ceiling"] = round(row["mb_per_s"]["median"] / ceiling, 2)
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--e2e-rate", type=int, default=5000)
    parser.add_argument("--e2e-records", type=int, default=50_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    table = report(run(args.runs, args.records, args.e2e_rate, args.e2e_records))
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    print(f"median (min–max) of {args.runs} runs")
    for name, row in table.items():
        cells = "  ".join(f"{key} {value['median']} ({value['min']}–{value['max']})"
                          for key, value in row.items() if isinstance(value, dict))
        extra = f"  = {row['share_of_grpc_ceiling']} of the gRPC ceiling" if "share_of_grpc_ceiling" in row else ""
        print(f"{name:<28} {cells}{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
