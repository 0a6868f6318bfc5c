"""End-to-end latency at a fixed rate, acks=all, with and without the idempotent producer, alternated.

Starts `replog dev up` (3 brokers, 2 controllers) in a temporary directory and runs, `--runs`
times and alternating the variants, `replog bench e2e --records N --rate R --acks all
--partitions 6 --record-size 100 --replication-factor 3` with each variant's flags (by default
`--enable-idempotence true` and `false`), every run a client process of its own on a new topic
(deleted after its run, so that every run finds the same cluster). Reports p50, p99 and p99.9
as medians (min–max) over the runs, the CPU-seconds the three brokers and the bench's client
process used during each run (from /proc and the child's rusage: on two cores, what every hop
waits for), and the machine's load average before and after.

    python bench/bench_e2e.py [--runs 5] [--records 40000] [--rate 5000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
from typing import Any

from bench_replication import dev_cluster, replog, summary

VARIANTS = {  # variant: the `replog bench e2e` flags that make it
    "idempotent": ("--enable-idempotence", "true"),
    "not idempotent": ("--enable-idempotence", "false"),
}
FIGURES = ("p50_ms", "p99_ms", "p999_ms", "brokers_cpu_s", "client_cpu_s")


def e2e(data_dir: str, records: int, rate: float, flags: tuple[str, ...]) -> dict[str, Any]:
    brokers = broker_pids(data_dir)
    brokers_before, client_before = cpu_seconds(brokers), children_cpu_seconds()
    result = json.loads(replog(data_dir, "bench", "e2e", "--records", str(records), "--rate", str(rate),
                               "--acks", "all", "--partitions", "6", "--record-size", "100",
                               "--replication-factor", "3", *flags, "--json"))
    result["brokers_cpu_s"] = round(cpu_seconds(brokers) - brokers_before, 2)
    result["client_cpu_s"] = round(children_cpu_seconds() - client_before, 2)
    replog(data_dir, "topics", "delete", result["topic"])
    return result


def broker_pids(data_dir: str) -> list[int]:
    return [b["pid"] for b in json.loads(replog(data_dir, "dev", "status", "--json"))["brokers"] if b["pid"]]


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU time of these processes so far (/proc/PID/stat, in clock ticks)."""
    ticks = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])  # utime and stime, the 14th and 15th fields
    return ticks / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds() -> float:
    """CPU time of this process's finished children: the `replog` commands, the bench's client most of it."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def run(runs: int, records: int, rate: float, variants: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    loads = [load_average()]
    with dev_cluster("replog-bench-e2e-", controllers=2) as data_dir:
        for _ in range(runs):
            for name, flags in variants.items():
                results[name].append(e2e(data_dir, records, rate, flags))
            loads.append(load_average())
    return {"load_average": loads, "runs": results}


def report(measured: dict[str, Any]) -> dict[str, Any]:
    table = {name: {key: summary([r[key] for r in rows]) for key in FIGURES}
             for name, rows in measured["runs"].items()}
    return {"load_average": measured["load_average"], "cases": table,
            "runs": {name: [[r[key] for key in FIGURES] for r in rows] for name, rows in measured["runs"].items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--records", type=int, default=40_000)
    parser.add_argument("--rate", type=float, default=5000)
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=FLAGS",
                        help="a variant of its own: a name and `replog bench e2e` flags, e.g. "
                        "'one in flight=--max-in-flight 1' (default: idempotent and not)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.runs < 1 or args.records < 1 or args.rate <= 0:
        parser.error("--runs and --records must be at least 1, --rate positive")
    variants = VARIANTS
    if args.variant:
        if any("=" not in v for v in args.variant):
            parser.error("--variant takes NAME=FLAGS")
        variants = {name: tuple(flags.split()) for name, flags in (v.split("=", 1) for v in args.variant)}
    table = report(run(args.runs, args.records, args.rate, variants))
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    print(f"e2e at {args.rate:g} records/s, {args.records} records of 100 B, acks=all, 6 partitions, RF 3; "
          f"median (min–max) of {args.runs} runs; load average (1, 5, 15 min) {table['load_average']}")
    for name, row in table["cases"].items():
        cells = "  ".join(f"{key.rsplit('_', 1)[0]} {v['median']} ({v['min']}–{v['max']}) {key.rsplit('_', 1)[1]}"
                          for key, v in row.items())
        print(f"{name:<20} {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
