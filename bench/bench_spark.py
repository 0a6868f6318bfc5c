"""Spark reading replog next to Spark reading the same rows from parquet on local disk, and writing to replog.

Starts a local cluster (3 brokers, RF 1 so the figures are the reader's, not replication's),
produces `--records` records of `--record-size` bytes into a topic of `--partitions` partitions,
and in one local[2] SparkSession times, `--runs` times each, median reported:

- replog -> count():    spark.read.format("replog")...load().count()
- parquet -> count():   the same rows (all columns, written once from the replog read) counted
- replog -> noop:       every column of every row read into Spark's noop sink (nothing written)
- parquet -> noop:      the same from parquet: a ceiling that reads the columns, where count()
                        answers from the files' footers
- replog offsets -> count(), replog values -> noop, parquet values -> noop: the same with the
                        columns picked by .schema("offset long") / .schema("value binary") (a Python
                        data source gets no column pruning) and parquet's select("value")
- replog -> parquet:    the replog rows written to parquet on local disk
- parquet -> parquet:   the parquet rows written again (Spark's own ceiling on this machine)
- a slice:              `where partition = 0 AND offset >= N/8 AND offset < N/8 + N/100` (1 % of the rows),
                        from replog with pushFilters=true (only that range is read), from replog without
                        it (every row read, Spark drops the rest) and from parquet; median seconds
- reader alone:         the tasks' reader (fetch from the leaders, decode into Arrow in C, Arrow's
                        IPC encoding as Spark's worker hands batches on) over every partition in
                        one thread of this process, without Spark

Then a streaming query at `--rate` records/s (one producer thread) with a `--trigger-s` trigger
into a noop sink: each micro-batch's duration and the time from a record's produce timestamp
to the end of the micro-batch that read it, p50 and p99.

Then writes: `--write-records` rows of `--record-size` bytes, made by Spark in two tasks, written
to a topic of `--partitions` partitions (replication factor 3, acks=all) by the at-least-once sink
and by the exactly-once sink (transactional=true), in turn, `--runs` times each, median reported.

    python bench/bench_spark.py [--records 10000000] [--record-size 100] [--runs 3] [--json]
                                [--parts read,streaming,write]

Run it under the cluster lock: flock /tmp/replog-cluster.lock python bench/bench_spark.py
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from replog.client import Admin, NewTopic, Producer  # noqa: E402
from tests.integration.cluster import LocalCluster  # noqa: E402

SEND_CHUNK = 10_000


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def median_rate(records: int, seconds: list[float]) -> dict:
    middle = statistics.median(seconds)
    return {"seconds": [round(s, 2) for s in seconds], "median_s": round(middle, 2),
            "records_per_s": round(records / middle)}


def fill(bootstrap: str, topic: str, records: int, record_size: int) -> float:
    value = b"x" * record_size
    started = time.perf_counter()
    with Producer(bootstrap, acks="all", linger_ms=20) as producer:
        futures = [producer.send_many(topic, [value] * min(SEND_CHUNK, records - sent))
                   for sent in range(0, records, SEND_CHUNK)]
        for future in futures:
            future.result(600)
    return time.perf_counter() - started


def read_alone(bootstrap: str, topic: str) -> int:
    """Every record of `topic` through the Spark tasks' reader and Arrow IPC, in this thread."""
    import pyarrow as pa

    from replog.client import Consumer
    from replog.core.topic_partition import TopicPartition
    from replog.rpc import allocator
    from replog.spark.partition_reader import PartitionReader, ReadSettings

    allocator.keep_freed_memory()  # as a task's process does (replog.spark.reader.read_range)

    with Admin(bootstrap) as admin:
        (description,) = admin.describe_topics([topic])
    with Consumer(bootstrap) as consumer:
        ends = consumer.end_offsets([TopicPartition(topic, p.partition) for p in description.partitions])
    reader = PartitionReader(bootstrap, ReadSettings())
    rows = 0
    try:
        for tp, end in ends.items():
            for batch in reader.read(tp, 0, end):
                sink = pa.BufferOutputStream()
                with pa.ipc.new_stream(sink, batch.schema) as writer:
                    writer.write_batch(batch)
                rows += batch.num_rows
    finally:
        reader.close()
    return rows


def batch_figures(spark, bootstrap: str, topic: str, records: int, runs: int, scratch: str) -> dict:
    def source(schema: str | None = None, push_filters: bool = False):
        reader = spark.read.format("replog") if schema is None else spark.read.format("replog").schema(schema)
        if push_filters:
            reader = reader.option("pushFilters", "true")
        return reader.option("bootstrap", bootstrap).option("subscribe", topic).load()

    base = os.path.join(scratch, "rows.parquet")
    source().write.mode("overwrite").parquet(base)
    assert spark.read.parquet(base).count() == records
    counts: dict[str, list[float]] = {"replog_count": [], "replog_offset_count": [], "parquet_count": [],
                                      "replog_noop": [], "parquet_noop": [], "replog_value_noop": [],
                                      "parquet_value_noop": [], "replog_to_parquet": [], "parquet_to_parquet": []}
    out = os.path.join(scratch, "out.parquet")
    for _ in range(runs):
        counts["replog_count"].append(timed(lambda: source().count()))
        counts["parquet_count"].append(timed(lambda: spark.read.parquet(base).count()))
        counts["replog_noop"].append(timed(lambda: source().write.format("noop").mode("overwrite").save()))
        counts["parquet_noop"].append(timed(lambda: spark.read.parquet(base).write.format("noop")
                                            .mode("overwrite").save()))
        counts["replog_offset_count"].append(timed(lambda: source("offset long").count()))
        counts["replog_value_noop"].append(timed(lambda: source("value binary").write.format("noop")
                                                 .mode("overwrite").save()))
        counts["parquet_value_noop"].append(timed(lambda: spark.read.parquet(base).select("value").write
                                                  .format("noop").mode("overwrite").save()))
        counts["replog_to_parquet"].append(timed(lambda: source().write.mode("overwrite").parquet(out)))
        counts["parquet_to_parquet"].append(timed(lambda: spark.read.parquet(base).write.mode("overwrite")
                                                  .parquet(out)))
    counts["reader_one_thread"] = [timed(lambda: read_alone(bootstrap, topic)) for _ in range(runs)]
    figures = {name: median_rate(records, seconds) for name, seconds in counts.items()}
    figures["slice"] = slice_figures(spark, source, base, records, runs)
    figures["count_ratio"] = round(figures["replog_count"]["records_per_s"]
                                   / figures["parquet_count"]["records_per_s"], 3)
    figures["offset_count_ratio"] = round(figures["replog_offset_count"]["records_per_s"]
                                          / figures["parquet_count"]["records_per_s"], 3)
    figures["noop_ratio"] = round(figures["replog_noop"]["records_per_s"]
                                  / figures["parquet_noop"]["records_per_s"], 3)
    figures["value_noop_ratio"] = round(figures["replog_value_noop"]["records_per_s"]
                                        / figures["parquet_value_noop"]["records_per_s"], 3)
    figures["write_ratio"] = round(figures["replog_to_parquet"]["records_per_s"]
                                   / figures["parquet_to_parquet"]["records_per_s"], 3)
    return figures


def slice_figures(spark, source, base: str, records: int, runs: int) -> dict:
    """1 % of the rows picked by a where on partition and offset: with the conditions taken over by the
    read (pushFilters=true), without, and from parquet; median seconds and the rows found."""
    first = records // 8
    condition = f"partition = 0 AND offset >= {first} AND offset < {first + records // 100}"
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        cases = {
            "replog_pushed": lambda: source(push_filters=True).where(condition).count(),
            "replog_not_pushed": lambda: source().where(condition).count(),
            "parquet": lambda: spark.read.parquet(base).where(condition).count(),
        }
        found = {name: case() for name, case in cases.items()}
        assert len(set(found.values())) == 1, found
        seconds = {name: [timed(case) for _ in range(runs)] for name, case in cases.items()}
    finally:
        spark.conf.unset("spark.sql.python.filterPushdown.enabled")
    figures = {name: round(statistics.median(values), 3) for name, values in seconds.items()}
    return {"condition": condition, "rows": found["parquet"], "median_s": figures,
            "pushed_over_not_pushed": round(figures["replog_not_pushed"] / figures["replog_pushed"], 1)}


def streaming_figures(spark, bootstrap: str, topic: str, rate: int, trigger_s: float, duration_s: float,
                      scratch: str) -> dict:
    stop = threading.Event()

    def produce_at_rate():
        with Producer(bootstrap, acks="all", linger_ms=5) as producer:
            started = time.monotonic()
            sent = 0
            while not stop.is_set():
                due = int((time.monotonic() - started) * rate)
                if due > sent:
                    producer.send_many(topic, [b"y" * 100] * (due - sent))
                    sent = due
                time.sleep(0.001)

    query = (spark.readStream.format("replog").option("bootstrap", bootstrap).option("subscribe", topic).load()
             .selectExpr("timestamp").writeStream.format("memory").queryName("stream_latency")
             .option("checkpointLocation", os.path.join(scratch, "stream-checkpoint"))
             .trigger(processingTime=f"{trigger_s} seconds").start())
    feeder = threading.Thread(target=produce_at_rate, daemon=True)
    feeder.start()
    time.sleep(duration_s)
    stop.set()
    feeder.join(30)
    query.processAllAvailable()
    progress = [p for p in query.recentProgress if p["numInputRows"] > 0][2:]  # past the warm-up
    query.stop()
    durations = sorted(p["durationMs"]["triggerExecution"] for p in progress)
    rows = sum(p["numInputRows"] for p in progress)
    return {"batches": len(progress), "rows": rows,
            "batch_ms_p50": _percentile(durations, 50), "batch_ms_p99": _percentile(durations, 99),
            "input_rows_per_s": round(statistics.median(p["inputRowsPerSecond"] for p in progress))
            if progress else 0}


def write_figures(spark, bootstrap: str, records: int, record_size: int, runs: int) -> dict:
    rows = spark.range(0, records, 1, 2).selectExpr(f"lpad(cast(id as string), {record_size}, 'x') as value")
    sinks = {"at_least_once": ("written", {}), "exactly_once": ("written-eos", {"transactional": "true"})}
    seconds: dict[str, list[float]] = {name: [] for name in sinks}
    for _ in range(runs):
        for name, (topic, options) in sinks.items():
            writer = rows.write.format("replog").option("bootstrap", bootstrap).option("topic", topic)
            for option, value in options.items():
                writer = writer.option(option, value)
            seconds[name].append(timed(lambda: writer.mode("append").save()))
    figures = {name: median_rate(records, times) for name, times in seconds.items()}
    figures["exactly_once_ratio"] = round(figures["exactly_once"]["records_per_s"]
                                          / figures["at_least_once"]["records_per_s"], 3)
    return figures


def _percentile(values: list[float], percent: float) -> float:
    if not values:
        return 0.0
    return values[min(len(values) - 1, int(len(values) * percent / 100))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rate", type=int, default=5_000)
    parser.add_argument("--trigger-s", type=float, default=1.0)
    parser.add_argument("--stream-s", type=float, default=30.0)
    parser.add_argument("--write-records", type=int, default=2_000_000)
    parser.add_argument("--parts", default="read,streaming,write",
                        help="which figures to take: read, streaming, write (comma-separated)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    if not parts <= {"read", "streaming", "write"}:
        parser.error(f"--parts takes read, streaming and write, not {args.parts!r}")
    scratch = tempfile.mkdtemp(prefix="bench-spark-")
    cluster = LocalCluster(os.path.join(scratch, "cluster"))
    cluster.up("--brokers", "3", "--controllers", "1")
    try:
        bootstrap = cluster.status()["metadata"][0]["address"]
        with Admin(bootstrap) as admin:
            admin.create_topics([NewTopic("bench", num_partitions=args.partitions, replication_factor=1),
                                 NewTopic("stream", num_partitions=2, replication_factor=3),
                                 NewTopic("written", num_partitions=args.partitions, replication_factor=3),
                                 NewTopic("written-eos", num_partitions=args.partitions, replication_factor=3)])
        from replog.spark.session import replog_session

        spark = replog_session("bench-spark")
        spark.sparkContext.setLogLevel("ERROR")
        result = {"records": args.records, "record_size": args.record_size, "partitions": args.partitions}
        if "read" in parts:
            produce_s = fill(bootstrap, "bench", args.records, args.record_size)
            result["produce_records_per_s"] = round(args.records / produce_s)
            result["batch"] = batch_figures(spark, bootstrap, "bench", args.records, args.runs, scratch)
        if "streaming" in parts:
            result["streaming"] = streaming_figures(spark, bootstrap, "stream", args.rate, args.trigger_s,
                                                    args.stream_s, scratch)
        if "write" in parts:
            result["write_records"] = args.write_records
            result["write"] = write_figures(spark, bootstrap, args.write_records, args.record_size, args.runs)
        spark.stop()
    finally:
        cluster.down()
        shutil.rmtree(scratch, ignore_errors=True)
    print(json.dumps(result, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
