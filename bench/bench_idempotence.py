"""acks=all produce with and without idempotence, next to the ceiling of a bare pull pipeline.

Starts `replog dev up` (3 brokers, 1 controller) in a temporary directory and runs, alternating,
`--runs` times, for 100 B and for 1 KB records:

- **ceiling**: bench/pipeline_ceiling.py, a producer, a leader and two followers on grpc.aio
  moving ~1 MiB batches of replog's bytes, acknowledged once both followers fetched past them;
- **idempotent, 5 in flight**, **idempotent, 1 in flight** and **not idempotent** (one batch per
  partition in flight, as before idempotence): `replog bench produce --acks all --partitions 6
  --replication-factor 3` with `--enable-idempotence true --max-in-flight 5`, `true
  --max-in-flight 1` and `false`, each a client process of its own on a new topic (deleted after
  its run, so that every run finds the same cluster), in ~1 MiB batches (the producer's default
  batch.size).

Every case sends the same number of records. Reports records/s and MB/s as medians (min–max),
and each replog case as a fraction of the ceiling: the median, over the runs, of its records/s
over the ceiling's of the same run (goal: at least 0.7).

    python bench/bench_idempotence.py [--runs 3] [--records-100b 3000000] [--records-1kb 400000] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

import pipeline_ceiling
from bench_replication import dev_cluster, replog, summary

CEILING = "ceiling"
PRODUCERS = {  # case: the `replog bench produce` flags that make it
    "idempotent, 5 in flight": ("--enable-idempotence", "true", "--max-in-flight", "5"),
    "idempotent, 1 in flight": ("--enable-idempotence", "true", "--max-in-flight", "1"),
    "not idempotent": ("--enable-idempotence", "false"),
}
GOAL_OF_CEILING = 0.7


def produce(data_dir: str, record_size: int, records: int, flags: tuple[str, ...]) -> dict[str, Any]:
    result = json.loads(replog(data_dir, "bench", "produce", "--records", str(records), "--record-size",
                               str(record_size), "--acks", "all", "--partitions", "6", "--replication-factor", "3",
                               *flags, "--json"))
    replog(data_dir, "topics", "delete", result["topic"])
    return result


def run(runs: int, records: dict[int, int]) -> dict[int, dict[str, list[dict[str, Any]]]]:
    """Every case's results per record size, in the order of the runs."""
    results: dict[int, dict[str, list[dict[str, Any]]]] = {size: {} for size in records}
    with dev_cluster("replog-bench-idempotence-", controllers=1) as data_dir:
        for _ in range(runs):
            for size, count in records.items():
                results[size].setdefault(CEILING, []).append(pipeline_ceiling.run(size, count))
                for case, flags in PRODUCERS.items():
                    results[size].setdefault(case, []).append(produce(data_dir, size, count, flags))
    return results


def report(results: dict[int, dict[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for size, cases in results.items():
        ceiling = [r["records_per_s"] for r in cases[CEILING]]
        for case, rows in cases.items():
            row = {key: summary([r[key] for r in rows]) for key in ("records_per_s", "mb_per_s")}
            if case == CEILING:
                row["encode_records_per_s"] = summary([r["encode_records_per_s"] for r in rows])
            else:
                shares = [r["records_per_s"] / c for r, c in zip(rows, ceiling)]
                row["of_ceiling"] = {key: round(value, 2) for key, value in
                                     (("median", statistics.median(shares)), ("min", min(shares)),
                                      ("max", max(shares)))}
            table[f"{size} B {case}"] = row
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--records-100b", type=int, default=3_000_000, help="records per case at 100 B")
    parser.add_argument("--records-1kb", type=int, default=400_000, help="records per case at 1 KB")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.runs < 1 or args.records_100b < 1 or args.records_1kb < 1:
        parser.error("--runs and the record counts must be at least 1")
    table = report(run(args.runs, {100: args.records_100b, 1024: args.records_1kb}))
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    print(f"acks=all, 3 replicas, ~1 MiB batches; median (min–max) of {args.runs} runs; goal: "
          f"{GOAL_OF_CEILING} of the ceiling")
    for name, row in table.items():
        records, mb = row["records_per_s"], row["mb_per_s"]
        share = row.get("of_ceiling")
        print(f"{name:<32} {records['median']:>12,.0f} records/s ({records['min']:,.0f}–{records['max']:,.0f})"
              f"  {mb['median']:>7.1f} MB/s" + (f"  {share['median']:.2f} of the ceiling "
                                                f"({share['min']:.2f}–{share['max']:.2f})" if share else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
