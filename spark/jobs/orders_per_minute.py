"""Orders per minute: a streaming job that reads JSON orders from replog and writes per-minute totals back.

    python -m replog.spark.jobs.orders_per_minute [--bootstrap HOST:PORT] [--command-config FILE]
        [--orders orders] [--results orders-per-minute] [--checkpoint DIR] [--trigger available-now|SECONDS]
    spark-submit spark/jobs/orders_per_minute.py --bootstrap HOST:PORT ...

It parses each order ({"order_id", "customer", "amount", "ts"}) with a schema, counts the
orders and sums their amounts per minute of event time with a one-minute watermark, and writes
each minute once the watermark has passed it (append mode) to the results topic, keyed by the
minute, as JSON {"minute", "orders", "revenue"}. The checkpoint directory keeps its place: run
it again and it goes on where it stopped. Every micro-batch prints its input rows, rows/s and
how many offsets it is behind the latest. On a TLS cluster the query's reads and writes use the
client properties of --command-config, else those of the local `dev up --tls` cluster or of
REPLOG_SSL_*, as the data source's ssl options.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile

from replog.cli.bootstrap import add_cluster_arguments, bootstrap_address, user_message
from replog.client import ClientError
from replog.config import read_properties
from replog.rpc import channels

ORDER_SCHEMA = "order_id string, customer string, amount double, ts timestamp"
WATERMARK = "1 minute"
WINDOW = "1 minute"
PROGRESS_POLL_S = 1.0


def build_query(spark, bootstrap: str, orders: str, results: str, checkpoint: str, trigger: str,
                security: dict[str, str] | None = None):
    """The streaming query, started: orders -> per-minute totals -> results (`security`: the ssl options)."""
    from pyspark.sql import functions as F

    parsed = (spark.readStream.format("replog").option("bootstrap", bootstrap).option("subscribe", orders)
              .option("startingOffsets", "earliest").options(**security or {}).load()
              .select(F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("order"))
              .select("order.*"))
    totals = (parsed.withWatermark("ts", WATERMARK).groupBy(F.window("ts", WINDOW))
              .agg(F.count("*").alias("orders"), F.round(F.sum("amount"), 2).alias("revenue")))
    minute = F.date_format(F.col("window.start"), "yyyy-MM-dd'T'HH:mm:ssXXX")
    out = totals.select(minute.alias("key"),
                        F.to_json(F.struct(minute.alias("minute"), "orders", "revenue")).alias("value"))
    writer = (out.writeStream.format("replog").option("bootstrap", bootstrap).option("topic", results)
              .options(**security or {}).option("checkpointLocation", checkpoint).outputMode("append"))
    writer = writer.trigger(availableNow=True) if trigger == "available-now" \
        else writer.trigger(processingTime=f"{float(trigger)} seconds")
    return writer.start()


def follow(query) -> None:
    """Print each micro-batch's figures as it finishes, until the query stops."""
    from replog.spark.progress import batch_summary

    printed = -1
    while True:
        stopped = query.awaitTermination(PROGRESS_POLL_S)
        for progress in query.recentProgress:
            if progress["batchId"] > printed:
                print(json.dumps(batch_summary(progress)), flush=True)
                printed = progress["batchId"]
        if stopped:
            return


def job_security(command_config: str | None) -> dict[str, str]:
    """The ssl options for the query: the --command-config file's, else what this process's clients use
    (the local TLS cluster's, or REPLOG_SSL_*), so that the tasks reach the cluster as the driver does."""
    from replog.spark.options import security_options

    if command_config:
        return security_options(read_properties(command_config))
    used = channels.default()
    return security_options({"ssl.cafile": used.cafile, "ssl.certfile": used.certfile, "ssl.keyfile": used.keyfile,
                             "ssl.server.name": used.server_name,
                             "bearer.token": used.token if isinstance(used.token, str) else ""})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="orders_per_minute", description=__doc__.splitlines()[0])
    add_cluster_arguments(parser)
    parser.add_argument("--orders", default="orders", help="the topic of JSON orders (default orders)")
    parser.add_argument("--results", default="orders-per-minute", help="the topic the totals go to")
    parser.add_argument("--checkpoint", default=None, help="the query's checkpoint directory (default: a new one)")
    parser.add_argument("--trigger", default="available-now",
                        help="available-now (read what is there, then stop) or the seconds between micro-batches")
    parser.add_argument("--master", default=None, help="Spark's master (default local[2], or spark-submit's)")
    args = parser.parse_args(argv)
    if args.trigger != "available-now":
        try:
            if float(args.trigger) <= 0:
                raise ValueError
        except ValueError:
            parser.error(f"--trigger must be available-now or a positive number of seconds, not {args.trigger!r}")
    try:
        bootstrap = bootstrap_address(args)
        security = job_security(args.command_config)
    except ClientError as error:
        print(f"orders_per_minute: {user_message(error)}", file=sys.stderr)
        return 1
    from replog.spark.session import replog_session

    spark = replog_session("orders-per-minute", master=args.master)
    spark.sparkContext.setLogLevel("ERROR")
    checkpoint = args.checkpoint or tempfile.mkdtemp(prefix="orders-per-minute-")
    query = build_query(spark, bootstrap, args.orders, args.results, checkpoint, args.trigger, security)
    try:
        follow(query)
    except KeyboardInterrupt:
        query.stop()
    error = query.exception()
    if error is not None:
        print(f"orders_per_minute: the query failed: {error.desc.splitlines()[0]}", file=sys.stderr)
        return 1
    print(f"done; the checkpoint is in {checkpoint}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
