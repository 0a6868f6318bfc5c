"""A consumer that only counts, for bench_groups.py: one member of a group (auto-commit, as an
application runs it) or, with --assign, one consumer reading every partition alone.

Every 0.2 s it rewrites REPORT with how many records it has read, when it read the first and the last
(time.monotonic(), one clock for every process), and its CPU time then. SIGTERM closes it.

    python bench/group_reader.py BOOTSTRAP TOPIC REPORT (--group G | --assign PARTITIONS)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import time

from replog.client import Consumer, TopicPartition


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bootstrap")
    parser.add_argument("topic")
    parser.add_argument("report")
    how = parser.add_mutually_exclusive_group(required=True)
    how.add_argument("--group")
    how.add_argument("--assign", type=int, metavar="PARTITIONS")
    args = parser.parse_args()

    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    consumer = Consumer(args.bootstrap, group_id=args.group, auto_offset_reset="earliest")
    if args.group:
        consumer.subscribe([args.topic])
    else:
        consumer.assign([TopicPartition(args.topic, p) for p in range(args.assign)])
        consumer.seek_to_beginning()
    progress = {"count": 0, "first_t": None, "last_t": None, "cpu_first_s": None, "cpu_last_s": None}
    reported = time.monotonic()
    while not stopping:
        records = consumer.poll(100)
        if records:
            now, cpu = time.monotonic(), time.process_time()
            if progress["first_t"] is None:
                progress["first_t"], progress["cpu_first_s"] = now, cpu
            progress["count"] += len(records)
            progress["last_t"], progress["cpu_last_s"] = now, cpu
        if time.monotonic() - reported >= 0.2:
            write(args.report, progress)
            reported = time.monotonic()
    consumer.close()
    write(args.report, progress)


def write(path: str, progress: dict) -> None:
    with open(path + ".new", "w", encoding="utf-8") as handle:
        json.dump(progress, handle)
    os.replace(path + ".new", path)


if __name__ == "__main__":
    main()
