"""replog side by side with NATS JetStream on this machine, alternated A/B/A/B in one run.

Starts a `replog dev` cluster (3 brokers, 2 controllers, ZooKeeper, a metadata service) and a
three-node NATS JetStream cluster (Debian's nats-server, each node its own store dir), both on
loopback, both up for the whole run. Each case runs `--runs` times per system, alternating
(replog, NATS, replog, NATS, ...), each run a fresh client process (workloads.py) on a fresh
topic or stream: 3 partitions, replication factor 3, min.insync.replicas=2 for replog; one R3
file-backed stream for JetStream. Prints the medians with min and max, and replog's figure as a
ratio of JetStream's. The raw gRPC ceiling (bench_grpc_echo.py, 1 MiB stream messages) is measured in the
same alternation, for reference.

    python bench/peers/side_by_side.py [--runs 3] [--json] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from nats_cluster import NatsCluster  # noqa: E402

REPLOG = [sys.executable, "-m", "replog.cli.main"]
RUN_TIMEOUT_S = 300


@dataclass(frozen=True)
class Case:
    title: str
    kind: str
    record_size: int
    records: int
    rate: float | None = None

    @property
    def latency(self) -> bool:
        return self.kind == "e2e"


CASES = [
    Case("1 KB records, acks=all", "produce", 1024, 50_000),
    Case("100 B records, acks=all", "produce", 100, 100_000),
    Case("100 B records in ~1 MB batches, acks=all", "batched", 100, 1_000_000),
    Case("consume 100 B records from the start", "consume", 100, 100_000),
    Case("end-to-end latency, 100 B at 5,000 records/s", "e2e", 100, 15_000, 5_000.0),
]


def run_workload(system: str, case: Case, target: str, scale: float) -> dict:
    argv = [sys.executable, os.path.join(HERE, "workloads.py"), system, case.kind, "--target", target,
            "--records", str(max(1, int(case.records * scale))), "--record-size", str(case.record_size)]
    if case.rate:
        argv += ["--rate", str(case.rate)]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if result.returncode != 0:
        raise SystemExit(f"{system} {case.kind} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def grpc_ceiling() -> float:
    """1 MiB messages on streams to another process, as replog's producer sends them: MB/s
    (bench_grpc_echo.py, one 2 s run)."""
    argv = [sys.executable, os.path.join(HERE, "..", "bench_grpc_echo.py"), "--sizes", "1048576",
            "--modes", "stream", "--seconds", "2", "--runs", "1", "--json"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=True)
    return json.loads(result.stdout)[0]["mb_per_s"]


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def measure(runs: int, scale: float, replog_target: str, nats_target: str) -> dict:
    figures: dict = {"cases": [], "grpc_ceiling_mb_per_s": []}
    for case in CASES:
        per_system: dict[str, list[dict]] = {"replog": [], "nats": []}
        for round_ in range(runs):
            for system, target in (("replog", replog_target), ("nats", nats_target)):
                result = run_workload(system, case, target, scale)
                per_system[system].append(result)
                print(f"  {case.title} — {system} run {round_ + 1}: {summary_of(case, result)}", file=sys.stderr)
            figures["grpc_ceiling_mb_per_s"].append(grpc_ceiling())
        figures["cases"].append({"case": case.__dict__, "runs": per_system})
    return figures


def summary_of(case: Case, result: dict) -> str:
    if case.latency:
        return f"p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms"
    return f"{result['records_per_s']:,.0f} records/s, {result['mb_per_s']} MB/s"


def rows(figures: dict) -> list[list[str]]:
    table = []
    for entry in figures["cases"]:
        case = Case(**entry["case"])
        metrics = [("p50_ms", "p50 ms"), ("p99_ms", "p99 ms")] if case.latency else [("records_per_s", "records/s")]
        for key, unit in metrics:
            replog = spread([r[key] for r in entry["runs"]["replog"]])
            nats = spread([r[key] for r in entry["runs"]["nats"]])
            table.append([f"{case.title} ({unit})", _cell(replog), _cell(nats),
                          f"{replog['median'] / nats['median']:.2f}"])
    ceiling = spread(figures["grpc_ceiling_mb_per_s"])
    table.append(["gRPC ceiling, 1 MiB stream messages (MB/s)", _cell(ceiling), "", ""])
    return table


def _cell(values: dict[str, float]) -> str:
    def fmt(x: float) -> str:
        return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"

    return f"{fmt(values['median'])} ({fmt(values['min'])}–{fmt(values['max'])})"


def print_table(table: list[list[str]], runs: int) -> None:
    header = ["case", f"replog, median (min–max) of {runs}", f"NATS JetStream, median (min–max) of {runs}",
              "replog ÷ JetStream"]
    print("| " + " | ".join(header) + " |")
    print("|---|---|---|---|")
    for row in table:
        print("| " + " | ".join(row) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs per case and system (default 3)")
    parser.add_argument("--quick", action="store_true", help="a tenth of the records, one run: a smoke test")
    parser.add_argument("--json", action="store_true", help="print every run's figures as JSON")
    args = parser.parse_args()
    runs, scale = (1, 0.1) if args.quick else (args.runs, 1.0)
    with tempfile.TemporaryDirectory(prefix="replog-peers-") as directory:
        replog_dir = os.path.join(directory, "replog")
        subprocess.run([*REPLOG, "dev", "up", "--brokers", "3", "--controllers", "2", "--data-dir", replog_dir],
                       check=True, capture_output=True, timeout=RUN_TIMEOUT_S)
        try:
            with open(os.path.join(replog_dir, "cluster.json"), encoding="utf-8") as handle:
                bootstrap = json.load(handle)["metadata"][0]["address"]
            with NatsCluster(os.path.join(directory, "nats")) as nats:
                started = time.monotonic()
                figures = measure(runs, scale, bootstrap, nats.servers)
                figures["elapsed_s"] = round(time.monotonic() - started, 1)
        finally:
            subprocess.run([*REPLOG, "dev", "down", "--data-dir", replog_dir], capture_output=True,
                           timeout=RUN_TIMEOUT_S)
    if args.json:
        print(json.dumps(figures))
    else:
        print_table(rows(figures), runs)
        print(f"\n{runs} runs per case and system, alternated; {figures['elapsed_s'] / 60:.1f} minutes.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
