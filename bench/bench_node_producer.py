"""The Node.js client's producer beside the Python one: acks=all records/s at 100 B and 1 KB.

Starts `replog dev up` (3 brokers, 1 controller) in a temporary directory and runs, alternating,
`--runs` times, for 100 B and for 1 KB records:

- **python**: `replog bench produce --acks all --partitions 6 --replication-factor 3` (idempotent,
  5 batches in flight per partition, ~1 MiB batches: the Python producer's defaults);
- **node**: bench/node_producer.js, the Node client (clients/node) with acks=all (idempotent, up to
  5 batches in flight per partition on a `ProduceStream` per leader, ~1 MiB batches), records
  without a key, as many as Python's;

each a client process of its own on a new 6-partition topic, deleted after its run, so that every
run finds the same cluster. Reports records/s and MB/s as medians (min–max), and Node's records/s
over Python's of the same run.

    python bench/bench_node_producer.py [--runs 3] [--records-100b 2000000] [--records-1kb 300000] [--json]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from bench_replication import (
    bootstrap_of,
    dev_cluster,
    fractions,
    produce_acks_all,
    replog,
    runs_and_sizes,
    summary,
)

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_PRODUCER = os.path.join(HERE, "node_producer.js")
NODE_TIMEOUT_S = 900


def node_case(data_dir: str, bootstrap: str, size: int, records: int, run: int, keep: bool = False) -> dict[str, Any]:
    """The Node producer's figures on a new topic of 6 partitions, deleted afterwards unless `keep` (its name
    is then in the result's "topic")."""
    topic = f"bench-node-{size}-{run}"
    replog(data_dir, "topics", "create", topic, "--partitions", "6", "--replication-factor", "3")
    result = last_json_line(["node", NODE_PRODUCER, bootstrap, topic, str(records), str(size)], "Node producer")
    if not keep:
        replog(data_dir, "topics", "delete", topic)
    return {**result, "topic": topic}


def last_json_line(command: list[str], what: str) -> dict[str, Any]:
    """Run a bench client process: the JSON of the last line it printed; exit with its stderr if it failed."""
    out = subprocess.run(command, capture_output=True, text=True, timeout=NODE_TIMEOUT_S)
    if out.returncode != 0:
        raise SystemExit(f"the {what} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(runs: int, records: dict[int, int]) -> dict[int, dict[str, list[dict[str, Any]]]]:
    results: dict[int, dict[str, list[dict[str, Any]]]] = {size: {"python": [], "node": []} for size in records}
    with dev_cluster("replog-bench-node-") as data_dir:
        bootstrap = bootstrap_of(data_dir)
        for index in range(runs):
            for size, count in records.items():
                results[size]["python"].append(produce_acks_all(data_dir, size, count, ()))
                results[size]["node"].append(node_case(data_dir, bootstrap, size, count, index))
    return results


def report(results: dict[int, dict[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for size, cases in results.items():
        for case, rows in cases.items():
            table[f"{size} B {case}"] = {key: summary([r[key] for r in rows]) for key in ("records_per_s", "mb_per_s")}
        table[f"{size} B node"]["of_python"] = fractions([n["records_per_s"] for n in cases["node"]],
                                                         [p["records_per_s"] for p in cases["python"]])
    return table


def show(table: dict[str, Any], heading: str) -> None:
    """The table of report() as lines: each case's records/s and MB/s, and Node's share of Python's."""
    print(heading)
    for name, row in table.items():
        records, mb = row["records_per_s"], row["mb_per_s"]
        share = row.get("of_python")
        print(f"{name:<14} {records['median']:>12,.0f} records/s ({records['min']:,.0f}–{records['max']:,.0f})"
              f"  {mb['median']:>7.1f} MB/s" + (f"  {share['median']:.2f} of Python's "
                                                f"({share['min']:.2f}–{share['max']:.2f})" if share else ""))


def bench_main(description: str, run_cases, heading: str) -> int:
    """A Node-beside-Python bench's command line: --runs, the record counts, --json; `heading` may name {runs}."""
    args, records = runs_and_sizes(description, 2_000_000, 300_000)
    table = report(run_cases(args.runs, records))
    if args.json:
        print(json.dumps(table, indent=2))
    else:
        show(table, heading.format(runs=args.runs))
    return 0


def main() -> int:
    return bench_main(__doc__, run, "acks=all, 3 replicas, 6 partitions, ~1 MiB batches; median (min–max) of "
                      "{runs} runs")


if __name__ == "__main__":
    sys.exit(main())
