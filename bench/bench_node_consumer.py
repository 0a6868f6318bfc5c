"""The Node.js client's consumer beside the Python one: records/s read at 100 B and 1 KB.

Starts `replog dev up` (3 brokers, 1 controller) in a temporary directory. For each run and
record size it fills a new topic of 6 partitions (replication factor 3) with the Node producer
(bench/node_producer.js), then reads all of it from the start, alternating:

- **python**: replog's Consumer (`assign` to every partition, `poll()` until every record came,
  as `replog bench consume` reads), in a process of its own;
- **node**: bench/node_consumer.js, the Node client's Consumer, the same way;

and deletes the topic. Reports records/s and MB/s as medians (min–max), and Node's records/s over
Python's of the same run.

    python bench/bench_node_consumer.py [--runs 3] [--records-100b 2000000] [--records-1kb 300000] [--json]
"""

from __future__ import annotations

import os
import sys
from typing import Any

from bench_node_producer import bench_main, last_json_line, node_case
from bench_replication import bootstrap_of, dev_cluster, replog

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_CONSUMER = os.path.join(HERE, "node_consumer.js")
PARTITIONS = 6
# The Python consumer, timed as bench/node_consumer.js times the Node one.
PYTHON_CONSUMER = """
import json, sys, time
from replog.client import Consumer, TopicPartition
bootstrap, topic, partitions, count, size = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
with Consumer(bootstrap, auto_offset_reset="earliest", max_poll_records=10_000) as consumer:
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    started, received = time.perf_counter(), 0
    while received < count:
        records = consumer.poll(10_000)
        if not records:
            sys.exit(f"only {received} of {count} records came back within 10 s")
        received += len(records)
    elapsed = time.perf_counter() - started
print(json.dumps({"records_per_s": received / elapsed, "mb_per_s": received * size / elapsed / 2**20}))
"""


def run(runs: int, records: dict[int, int]) -> dict[int, dict[str, list[dict[str, Any]]]]:
    results: dict[int, dict[str, list[dict[str, Any]]]] = {size: {"python": [], "node": []} for size in records}
    with dev_cluster("replog-bench-node-consumer-") as data_dir:
        bootstrap = bootstrap_of(data_dir)
        for index in range(runs):
            for size, count in records.items():
                topic = node_case(data_dir, bootstrap, size, count, index, keep=True)["topic"]
                arguments = [bootstrap, topic, str(PARTITIONS), str(count), str(size)]
                results[size]["python"].append(last_json_line([sys.executable, "-c", PYTHON_CONSUMER, *arguments],
                                                              "Python consumer"))
                results[size]["node"].append(last_json_line(["node", NODE_CONSUMER, *arguments], "Node consumer"))
                replog(data_dir, "topics", "delete", topic)
    return results


def main() -> int:
    return bench_main(__doc__, run, "read from the start of 6 partitions (3 replicas), no group; median (min–max) of "
                      "{runs} runs")


if __name__ == "__main__":
    sys.exit(main())
