"""Transactions of 100 and of 1,000 records against the same load without transactions.

Starts `replog dev up` (3 brokers, 1 controller) in a temporary directory and runs, alternating,
`--runs` times, for 100 B and for 1 KB records, `replog bench produce --acks all --partitions 6
--replication-factor 3` as a client process of its own on a new topic (deleted after its run):

- **no transactions**: the idempotent producer, as fast as it can;
- **transactions of 1,000** and **transactions of 100**: the same producer made transactional,
  `--transaction-records N`: begin, N records, commit, one transaction after another.

Every case sends the same records. Reports records/s as medians (min–max), transactions/s, and
each transactional case as a fraction of the run's no-transactions figure.

    python bench/bench_transactions.py [--runs 3] [--records 200000] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from bench_replication import dev_cluster, fractions, produce_acks_all, summary

PLAIN = "no transactions"
CASES = {PLAIN: (), "transactions of 1,000": ("--transaction-records", "1000"),
         "transactions of 100": ("--transaction-records", "100")}
RECORD_SIZES = (100, 1024)


def run(runs: int, records: int) -> dict[int, dict[str, list[dict[str, Any]]]]:
    results: dict[int, dict[str, list[dict[str, Any]]]] = {size: {} for size in RECORD_SIZES}
    with dev_cluster("replog-bench-transactions-") as data_dir:
        for _ in range(runs):
            for size in RECORD_SIZES:
                for case, flags in CASES.items():
                    results[size].setdefault(case, []).append(produce_acks_all(data_dir, size, records, flags))
    return results


def report(results: dict[int, dict[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for size, cases in results.items():
        plain = [r["records_per_s"] for r in cases[PLAIN]]
        for case, rows in cases.items():
            row = {key: summary([r[key] for r in rows]) for key in ("records_per_s", "mb_per_s")}
            if case != PLAIN:
                row["transactions_per_s"] = summary([r["transactions_per_s"] for r in rows])
                row["of_plain"] = fractions([r["records_per_s"] for r in rows], plain)
            table[f"{size} B {case}"] = row
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--records", type=int, default=200_000, help="records per case")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.runs < 1 or args.records < 1:
        parser.error("--runs and --records must be at least 1")
    table = report(run(args.runs, args.records))
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    print(f"acks=all, 3 replicas, 6 partitions, one producer; median (min–max) of {args.runs} runs")
    for name, row in table.items():
        records = row["records_per_s"]
        line = f"{name:<30} {records['median']:>10,.0f} records/s ({records['min']:,.0f}–{records['max']:,.0f})"
        if "of_plain" in row:
            share, txns = row["of_plain"], row["transactions_per_s"]
            line += (f"  {txns['median']:>7,.0f} transactions/s  {share['median']:.2f} of no transactions "
                     f"({share['min']:.2f}–{share['max']:.2f})")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
