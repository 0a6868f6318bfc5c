"""Streaming reads through a real cluster: checkpoints, a leader killed mid-stream, lost offsets (local[2])."""

import threading

import pytest
from pyspark.errors import StreamingQueryException

from replog.client import Producer
from replog.spark.progress import batch_summary, offsets_behind_latest
from tests.spark.conftest import create_topic, produce, wait_until

pytestmark = pytest.mark.slow

QUERY_TIMEOUT_S = 120


def stream(spark, bootstrap, topic, **options):
    reader = (spark.readStream.format("replog").option("bootstrap", bootstrap).option("subscribe", topic)
              .option("startingOffsets", "earliest"))
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def run_available_now(df, sink, checkpoint):
    query = (df.selectExpr("partition", "offset", "cast(value as string) value").writeStream.format("parquet")
             .option("path", str(sink)).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    try:
        query.awaitTermination(QUERY_TIMEOUT_S)
    except StreamingQueryException:
        pass  # the caller looks at query.exception()
    return query


def sink_rows(spark, sink):
    return sorted((r.partition, r.offset, r.value) for r in spark.read.parquet(str(sink)).collect())


def test_available_now_restarted_from_its_checkpoint_writes_each_record_exactly_once(
        spark, bootstrap, admin, tmp_path):
    create_topic(admin, "clicks")
    first = produce(bootstrap, "clicks", [(None, b"first %d" % i) for i in range(500)])
    query = run_available_now(stream(spark, bootstrap, "clicks", maxOffsetsPerTrigger="200"), tmp_path / "sink",
                              tmp_path / "checkpoint")
    assert query.exception() is None
    assert len(query.recentProgress) >= 3  # 500 records at most 200 per micro-batch
    assert all(p["numInputRows"] <= 200 for p in query.recentProgress)
    second = produce(bootstrap, "clicks", [(None, b"second %d" % i) for i in range(300)])
    run_available_now(stream(spark, bootstrap, "clicks"), tmp_path / "sink", tmp_path / "checkpoint")
    produced = sorted((m.partition, m.offset, v.decode()) for m, _, v in first + second)
    assert sink_rows(spark, tmp_path / "sink") == produced


def test_the_query_reports_how_far_it_is_behind_the_latest_offsets(spark, bootstrap, admin, tmp_path):
    create_topic(admin, "lagging", partitions=2)
    produce(bootstrap, "lagging", [(None, b"x")] * 100)
    query = run_available_now(stream(spark, bootstrap, "lagging", maxOffsetsPerTrigger="40"), tmp_path / "sink",
                              tmp_path / "checkpoint")
    first = batch_summary(query.recentProgress[0])
    assert first["numInputRows"] == 40
    assert sum(offsets_behind_latest(query.recentProgress[0]["sources"][0]).values()) == 60
    assert first["maxOffsetsBehindLatest"] >= 30
    assert batch_summary(query.recentProgress[-1])["maxOffsetsBehindLatest"] == 0


def test_a_stream_goes_on_through_its_leader_being_killed_and_loses_nothing(spark, bootstrap, admin, cluster,
                                                                            tmp_path):
    create_topic(admin, "failover", partitions=1)
    leader = admin.describe_topics(["failover"])[0].partitions[0].leader
    acked: list = []
    stop = threading.Event()

    def keep_producing():
        with Producer(bootstrap, acks="all", linger_ms=5) as producer:
            for i in range(100_000):
                if stop.is_set():
                    break
                acked.append(producer.send("failover", b"%d" % i).result(60).offset)

    producer = threading.Thread(target=keep_producing, daemon=True)
    producer.start()
    query = (stream(spark, bootstrap, "failover").selectExpr("offset", "cast(value as string) value").writeStream
             .format("memory").queryName("failover_rows").option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(processingTime="500 milliseconds").start())
    try:
        wait_until(lambda: spark.sql("select count(*) c from failover_rows").first().c > 50, 60,
                   "the stream to read from the first leader")
        cluster.signal("broker", leader, "KILL")
        wait_until(lambda: admin.describe_topics(["failover"])[0].partitions[0].leader not in (leader, -1), 60,
                   "a new leader")
        count_at_kill = len(acked)
        wait_until(lambda: len(acked) > count_at_kill + 50, 60, "records acknowledged by the new leader")
        stop.set()
        producer.join(90)
        wanted = sorted(acked)
        wait_until(lambda: spark.sql("select count(*) c from failover_rows").first().c >= len(wanted), 90,
                   "the stream to catch up")
        assert query.exception() is None
        got = sorted(r.offset for r in spark.sql("select offset from failover_rows").collect())
        assert got == wanted
    finally:
        stop.set()
        query.stop()
        cluster("dev", "start", "broker", str(leader))


def test_fail_on_data_loss_names_the_deleted_range_or_goes_on_from_the_earliest(spark, bootstrap, admin, tmp_path):
    create_topic(admin, "retained", partitions=1, segment_bytes="1024", retention_bytes="2048")
    produce(bootstrap, "retained", [(None, b"a" * 50)] * 10)
    run_available_now(stream(spark, bootstrap, "retained"), tmp_path / "sink", tmp_path / "checkpoint")
    assert len(sink_rows(spark, tmp_path / "sink")) == 10
    for _ in range(20):  # one batch at a time, so segments of 1 KB roll and the oldest are deleted
        produce(bootstrap, "retained", [(None, b"b" * 50)] * 10)
    tp = ("retained", 0)
    earliest = wait_until(lambda: (lambda e: e if e > 10 else None)(admin.list_offsets({tp: "earliest"})[tp]), 30,
                          "retention to delete the first segments")

    failed = run_available_now(stream(spark, bootstrap, "retained"), tmp_path / "sink", tmp_path / "checkpoint")
    assert failed.exception() is not None
    assert "retained-0 offsets [10, " in str(failed.exception())
    assert "were deleted (retention, or records deleted) before they were read" in str(failed.exception())

    went_on = run_available_now(stream(spark, bootstrap, "retained", failOnDataLoss="false"), tmp_path / "sink",
                                tmp_path / "checkpoint")
    assert went_on.exception() is None
    offsets = [offset for _, offset, _ in sink_rows(spark, tmp_path / "sink")]
    latest = admin.list_offsets({tp: "latest"})[tp]
    assert offsets[:10] == list(range(10))
    assert offsets[10] >= earliest and offsets[10:] == list(range(offsets[10], latest))


def test_a_stream_starting_past_the_log_end_is_refused_naming_the_offset(spark, bootstrap, admin, tmp_path):
    create_topic(admin, "short", partitions=1)
    produce(bootstrap, "short", [(None, b"x")] * 10)
    failed = run_available_now(stream(spark, bootstrap, "short", startingOffsets='{"short":{"0":1000}}'),
                               tmp_path / "sink", tmp_path / "checkpoint")
    assert "OptionError: startingOffsets for short-0 (1000) is after the partition's latest offset (10)" in str(
        failed.exception())


def test_a_stream_given_a_batch_only_option_fails_with_that_sentence_last(spark, bootstrap, admin, tmp_path):
    create_topic(admin, "streamed-badly", partitions=1)
    failed = run_available_now(stream(spark, bootstrap, "streamed-badly", endingOffsets="latest"),
                               tmp_path / "sink", tmp_path / "checkpoint")
    message = str(failed.exception())
    assert "OptionError: endingOffsets is for batch reads only" in message
    assert "UnboundLocalError" not in message, message


def test_the_orders_per_minute_job_writes_each_minutes_totals(spark, bootstrap, admin, tmp_path):
    import datetime
    import json

    from replog.spark.jobs import orders_feed, orders_per_minute

    create_topic(admin, "orders", partitions=3)
    create_topic(admin, "orders-per-minute", partitions=1)
    assert orders_feed.main(["--bootstrap", bootstrap, "--count", "300", "--minutes", "3"]) == 0
    assert orders_per_minute.main(["--bootstrap", bootstrap, "--checkpoint", str(tmp_path / "checkpoint")]) == 0
    results = (spark.read.format("replog").option("bootstrap", bootstrap).option("subscribe", "orders-per-minute")
               .load().collect())
    got = {json.loads(r.value)["minute"]: (json.loads(r.value)["orders"], json.loads(r.value)["revenue"])
           for r in results}
    start = datetime.datetime(2024, 1, 1, 10, tzinfo=datetime.timezone.utc)
    wanted = {minute.replace("+00:00", "Z"): totals
              for minute, totals in orders_feed.per_minute(orders_feed.orders(300, 3, start)).items()}
    assert got == wanted and len(results) == 3
    assert {r.key.decode() for r in results} == set(wanted)
