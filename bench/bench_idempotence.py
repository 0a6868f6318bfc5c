"""acks=all produce with and without idempotence, next to the ceiling of a bare pull pipeline.

Starts `replog dev up` (3 brokers, 1 controller) in a temporary directory and runs, alternating,
`--runs` times, for 100 B and for 1 KB records:

- **ceiling**: bench/pipeline_ceiling.py, a producer, a leader and two followers on grpc.aio
  moving ~1 MiB batches of replog's bytes, acknowledged once both followers fetched past them;
- **ceiling writing its log**: the same with `--write-log`: the leader and each follower also
  write what they take to a file (page cache, no fsync), as every broker writes its log;
- **idempotent, 5 in flight**, **idempotent, 1 in flight** and **not idempotent** (one batch per
  partition in flight, as before idempotence): `replog bench produce --acks all --partitions 6
  --replication-factor 3` with `--enable-idempotence true --max-in-flight 5`, `true
  --max-in-flight 1` and `false`, each a client process of its own on a new topic (deleted after
  its run, so that every run finds the same cluster), in ~1 MiB batches (the producer's default
  batch.size).

Every case sends the same number of records. Reports records/s and MB/s as medians (min–max),
and each replog case as a fraction of each ceiling: the median, over the runs, of its records/s
over that ceiling's in the same run (goal: at least 0.7 of the ceiling).

    python bench/bench_idempotence.py [--runs 3] [--records-100b 3000000] [--records-1kb 400000] [--json]
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pipeline_ceiling
from bench_replication import dev_cluster, fractions, produce_acks_all, runs_and_sizes, summary

CEILING = "ceiling"
CEILING_WITH_LOG = "ceiling writing its log"
CEILINGS = {CEILING: False, CEILING_WITH_LOG: True}  # ceiling: whether it writes a log
PRODUCERS = {  # case: the `replog bench produce` flags that make it
    "idempotent, 5 in flight": ("--enable-idempotence", "true", "--max-in-flight", "5"),
    "idempotent, 1 in flight": ("--enable-idempotence", "true", "--max-in-flight", "1"),
    "not idempotent": ("--enable-idempotence", "false"),
}
GOAL_OF_CEILING = 0.7


def run(runs: int, records: dict[int, int]) -> dict[int, dict[str, list[dict[str, Any]]]]:
    """Every case's results per record size, in the order of the runs."""
    results: dict[int, dict[str, list[dict[str, Any]]]] = {size: {} for size in records}
    with dev_cluster("replog-bench-idempotence-") as data_dir:
        for _ in range(runs):
            for size, count in records.items():
                for ceiling, write_log in CEILINGS.items():
                    results[size].setdefault(ceiling, []).append(pipeline_ceiling.run(size, count,
                                                                                      write_log=write_log))
                for case, flags in PRODUCERS.items():
                    results[size].setdefault(case, []).append(produce_acks_all(data_dir, size, count, flags))
    return results


def report(results: dict[int, dict[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for size, cases in results.items():
        ceilings = {name: [r["records_per_s"] for r in cases[name]] for name in CEILINGS}
        for case, rows in cases.items():
            row = {key: summary([r[key] for r in rows]) for key in ("records_per_s", "mb_per_s")}
            if case in CEILINGS:
                row["encode_records_per_s"] = summary([r["encode_records_per_s"] for r in rows])
            else:
                row["of_ceiling"] = fractions([r["records_per_s"] for r in rows], ceilings[CEILING])
                row["of_ceiling_writing_its_log"] = fractions([r["records_per_s"] for r in rows],
                                                              ceilings[CEILING_WITH_LOG])
            table[f"{size} B {case}"] = row
    return table


def main() -> int:
    args, records = runs_and_sizes(__doc__, 3_000_000, 400_000)
    table = report(run(args.runs, records))
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    print(f"acks=all, 3 replicas, ~1 MiB batches; median (min–max) of {args.runs} runs; goal: "
          f"{GOAL_OF_CEILING} of the ceiling")
    for name, row in table.items():
        records, mb = row["records_per_s"], row["mb_per_s"]
        shares = [(row[key], label) for key, label in (("of_ceiling", "the ceiling"),
                                                       ("of_ceiling_writing_its_log", "the one writing its log"))
                  if key in row]
        print(f"{name:<36} {records['median']:>12,.0f} records/s ({records['min']:,.0f}–{records['max']:,.0f})"
              f"  {mb['median']:>7.1f} MB/s"
              + "".join(f"  {share['median']:.2f} of {label} ({share['min']:.2f}–{share['max']:.2f})"
                        for share, label in shares))
    return 0


if __name__ == "__main__":
    sys.exit(main())
