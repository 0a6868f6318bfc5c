"""Produce and consume throughput with mTLS next to plaintext, in the same run.

Starts two local clusters of 2 brokers and 1 controller in a temporary directory, one plaintext
and one `replog dev up --tls` (every listener TLS, client certificates required, replicas
fetching over mTLS), and runs, alternating between them, `--runs` times:

- `replog bench produce --acks all --partitions 6 --replication-factor 2` of `--records` 1 KB
  records (a topic of its own, deleted after its run), and
- `replog bench consume` of as many records from a topic filled first.

Reports records/s and MB/s as medians (min–max) and mTLS as a fraction of plaintext (the median,
over the runs, of each run's mTLS figure over its plaintext one).

    python bench/bench_tls.py [--runs 3] [--records 300000] [--record-size 1024] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from typing import Any

from bench_replication import fractions, replog, summary

KINDS = ("produce", "consume")


def bench(data_dir: str, kind: str, records: int, record_size: int) -> dict[str, Any]:
    result = json.loads(replog(data_dir, "bench", kind, "--records", str(records), "--record-size", str(record_size),
                               "--acks", "all", "--partitions", "6", "--replication-factor", "2", "--json"))
    replog(data_dir, "topics", "delete", result["topic"])
    return result


def run(runs: int, records: int, record_size: int) -> dict[str, dict[str, list[dict[str, Any]]]]:
    results: dict[str, dict[str, list[dict[str, Any]]]] = {kind: {"plaintext": [], "mTLS": []} for kind in KINDS}
    with tempfile.TemporaryDirectory(prefix="replog-bench-tls-") as scratch:
        clusters = {"plaintext": f"{scratch}/plaintext", "mTLS": f"{scratch}/mtls"}
        replog(clusters["plaintext"], "dev", "up", "--brokers", "2", "--controllers", "1")
        try:
            replog(clusters["mTLS"], "dev", "up", "--brokers", "2", "--controllers", "1", "--tls")
            for _ in range(runs):
                for kind in KINDS:
                    for case, data_dir in clusters.items():
                        results[kind][case].append(bench(data_dir, kind, records, record_size))
        finally:
            for data_dir in clusters.values():
                replog(data_dir, "dev", "down")
    return results


def report(results: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for kind, cases in results.items():
        for case, rows in cases.items():
            table[f"{kind}, {case}"] = {key: summary([r[key] for r in rows]) for key in ("records_per_s", "mb_per_s")}
        table[f"{kind}, mTLS / plaintext"] = fractions([t["records_per_s"] for t in cases["mTLS"]],
                                                       [p["records_per_s"] for p in cases["plaintext"]])
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--record-size", type=int, default=1024)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    table = report(run(args.runs, args.records, args.record_size))
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    for name, row in table.items():
        if "records_per_s" in row:
            records, mb = row["records_per_s"], row["mb_per_s"]
            print(f"{name:<24} {records['median']:>10,.0f} records/s ({records['min']:,.0f}–{records['max']:,.0f})"
                  f"  {mb['median']:>6.1f} MB/s")
        else:
            print(f"{name:<24} {row['median']:.2f} ({row['min']:.2f}–{row['max']:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
