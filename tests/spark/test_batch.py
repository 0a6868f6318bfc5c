"""Batch reads and writes through a real cluster, as a Spark user runs them (local[2])."""

import datetime
import json
import time

import pytest
from pyspark.sql.functions import col, lit

from replog.client import Producer
from tests.spark.conftest import create_topic, produce, wait_until

pytestmark = pytest.mark.slow

PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


def replog(spark, bootstrap, **options):
    reader = spark.read.format("replog").option("bootstrap", bootstrap)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def as_rows(df):
    return sorted((r.partition, r.offset, r.key, r.value, round(r.timestamp.timestamp() * 1000))
                  for r in df.collect())


def produced_rows(results, topic):
    return sorted((m.partition, m.offset, k, v, m.timestamp) for m, k, v in results if m.topic == topic)


@pytest.fixture(scope="module")
def orders(admin, bootstrap):
    create_topic(admin, "orders")
    return produce(bootstrap, "orders", [(b"k%d" % i, b"order %d" % i) for i in range(300)])


def test_a_batch_read_returns_exactly_the_produced_rows(spark, bootstrap, orders):
    df = replog(spark, bootstrap, subscribe="orders")
    assert df.schema.simpleString() == ("struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
                                        "timestamp:timestamp,timestampType:int>")
    assert as_rows(df) == produced_rows(orders, "orders")
    assert {r.topic for r in df.select("topic").distinct().collect()} == {"orders"}


def test_a_schema_picks_the_columns_spark_is_handed(spark, bootstrap, orders):
    df = (spark.read.format("replog").schema("value binary, offset long").option("bootstrap", bootstrap)
          .option("subscribe", "orders").load())
    assert df.columns == ["value", "offset"]
    got = sorted((r.offset, r.value) for r in df.collect())
    assert got == sorted((m.offset, v) for m, _, v in orders)


@pytest.mark.parametrize("schema, says", [
    ("value string", "value string is not one"),
    ("value binary, price double", "price double is not one"),
    ("headers array<struct<key:string,value:binary>>", 'headers with .option("includeHeaders", "true")'),
])
def test_a_schema_that_is_not_columns_of_the_rows_is_refused_before_any_task_starts(spark, bootstrap, orders,
                                                                                  schema, says):
    reader = spark.read.format("replog").schema(schema).option("bootstrap", bootstrap).option("subscribe", "orders")
    with pytest.raises(Exception) as failure:
        reader.load().count()
    assert "OptionError: a replog read's .schema(...) picks columns of its rows" in str(failure.value)
    assert says in str(failure.value)


def test_json_offsets_pick_per_partition_ranges(spark, bootstrap, orders):
    df = replog(spark, bootstrap, subscribe="orders", startingOffsets=json.dumps({"orders": {"0": 5, "1": -2}}),
                endingOffsets=json.dumps({"orders": {"0": 10, "1": 3, "2": -1}}))
    wanted = [r for r in produced_rows(orders, "orders")
              if (r[0] == 0 and 5 <= r[1] < 10) or (r[0] == 1 and r[1] < 3) or r[0] == 2]
    assert as_rows(df) == wanted


def test_earliest_to_latest_split_into_more_tasks_than_partitions_reads_each_row_once(spark, bootstrap, orders):
    df = replog(spark, bootstrap, subscribe="orders", startingOffsets="earliest", endingOffsets="latest",
                minPartitions="8")
    assert df.rdd.getNumPartitions() == 8
    assert as_rows(df) == produced_rows(orders, "orders")


def test_a_time_range_reads_the_records_written_within_it(spark, bootstrap, admin):
    create_topic(admin, "timed", partitions=2)
    before = produce(bootstrap, "timed", [(None, b"before %d" % i) for i in range(20)])
    wait_until(lambda: time.time() * 1000 > max(m.timestamp for m, _, _ in before) + 20, 5, "the clock to move on")
    within = produce(bootstrap, "timed", [(None, b"within %d" % i) for i in range(20)])
    wait_until(lambda: time.time() * 1000 > max(m.timestamp for m, _, _ in within) + 20, 5, "the clock to move on")
    produce(bootstrap, "timed", [(None, b"after %d" % i) for i in range(20)])
    start = min(m.timestamp for m, _, _ in within)
    end = max(m.timestamp for m, _, _ in within) + 1
    df = replog(spark, bootstrap, subscribe="timed", startingTimestamp=str(start), endingTimestamp=str(end))
    assert as_rows(df) == produced_rows(within, "timed")
    per_partition = json.dumps({"timed": {"0": start, "1": start}})
    assert replog(spark, bootstrap, subscribe="timed", startingOffsetsByTimestamp=per_partition).count() == 40


@pytest.fixture
def pushdown(spark):
    """Spark hands a Python data source its filters only with this setting on."""
    spark.conf.set(PUSHDOWN, "true")
    yield
    spark.conf.unset(PUSHDOWN)


def test_pushed_filters_read_only_the_partitions_and_offsets_the_query_asks_for(spark, bootstrap, orders, pushdown):
    df = replog(spark, bootstrap, subscribe="orders", pushFilters="true").where(
        "partition = 1 and offset >= 10 and offset < 20")
    assert df.rdd.getNumPartitions() == 1  # one range planned, of partition 1, where there are three partitions
    assert as_rows(df) == [r for r in produced_rows(orders, "orders") if r[0] == 1 and 10 <= r[1] < 20]
    listed = replog(spark, bootstrap, subscribe="orders", pushFilters="true").where("offset in (3, 7)")
    assert as_rows(listed) == [r for r in produced_rows(orders, "orders") if r[1] in (3, 7)]


def test_a_pushed_time_bound_starts_each_partition_at_that_time(spark, bootstrap, orders, pushdown):
    times = sorted(m.timestamp for m, _, _ in orders)
    since = times[len(times) // 2]
    bound = datetime.datetime.fromtimestamp(since / 1000, tz=datetime.timezone.utc)
    df = replog(spark, bootstrap, subscribe="orders", pushFilters="true").where(col("timestamp") >= lit(bound))
    assert as_rows(df) == [r for r in produced_rows(orders, "orders") if r[4] >= since]


def test_pushed_filters_without_sparks_setting_are_refused_naming_it(spark, bootstrap, orders):
    with pytest.raises(Exception, match=PUSHDOWN.replace(".", r"\.")):
        replog(spark, bootstrap, subscribe="orders", pushFilters="true").where("partition = 1").count()


def test_a_pattern_that_matches_no_topic_reads_no_rows(spark, bootstrap):
    assert replog(spark, bootstrap, subscribePattern="no-topic-is-named-so-.*").count() == 0


def test_a_pattern_subscription_and_headers(spark, bootstrap, admin):
    create_topic(admin, "events-a", partitions=1)
    create_topic(admin, "events-b", partitions=1)
    with Producer(bootstrap) as producer:
        producer.send("events-a", b"a", headers=[("trace", b"42")]).result(30)
        producer.send("events-b", b"b").result(30)
    df = replog(spark, bootstrap, subscribePattern="events-.*", includeHeaders="true")
    rows = {r.topic: r for r in df.collect()}
    assert set(rows) == {"events-a", "events-b"}
    assert [(h.key, h.value) for h in rows["events-a"].headers] == [("trace", b"42")]
    assert rows["events-b"].headers == []


def test_read_committed_reads_what_is_committed(spark, bootstrap, orders):
    df = replog(spark, bootstrap, subscribe="orders", isolationLevel="read_committed")
    assert as_rows(df) == produced_rows(orders, "orders")


def test_a_write_of_100000_rows_lands_complete(spark, bootstrap, admin):
    create_topic(admin, "written")
    rows = spark.range(100_000).selectExpr("cast(id as string) as key", "cast(id * 2 as string) as value")
    rows.write.format("replog").option("bootstrap", bootstrap).option("topic", "written").mode("append").save()
    back = replog(spark, bootstrap, subscribe="written").selectExpr("cast(key as string) k", "cast(value as string) v")
    summary = back.selectExpr("count(*) n", "count(distinct k) keys", "sum(cast(v as long)) total").first()
    assert (summary.n, summary.keys, summary.total) == (100_000, 100_000, 2 * sum(range(100_000)))
    # Keys land where Kafka's partitioner puts them: each key in one partition only.
    assert back.groupBy("k").agg({"*": "count"}).filter("`count(1)` > 1").count() == 0


def test_a_topic_column_routes_rows_and_a_partition_column_places_them(spark, bootstrap, admin):
    create_topic(admin, "routed-a", partitions=2)
    create_topic(admin, "routed-b", partitions=2)
    rows = spark.createDataFrame([("routed-a", 1, "x"), ("routed-b", 0, "y")],
                                 "topic string, partition int, value string")
    rows.write.format("replog").option("bootstrap", bootstrap).mode("append").save()
    got = replog(spark, bootstrap, subscribePattern="routed-.*").collect()
    assert sorted((r.topic, r.partition, r.value) for r in got) == [("routed-a", 1, b"x"), ("routed-b", 0, b"y")]


BAD_READS = [
    ({"subscribe": "orders"}, "option bootstrap is required"),
    ({"bootstrap": None, "subscribe": "orders", "assign": '{"orders":[0]}'},
     "give exactly one of the options subscribe, subscribePattern and assign (got subscribe and assign)"),
    ({"bootstrap": None, "subscribe": "orders", "startingOffsets": '{"orders":{0:1}}'},
     "option startingOffsets is not valid JSON"),
    ({"bootstrap": None, "subscribe": "no-such-topic"}, "topic 'no-such-topic' does not exist"),
    ({"bootstrap": None, "assign": '{"orders":[7]}'}, "partition orders-7 does not exist"),
    ({"bootstrap": None, "subscribe": "orders", "startingOffsets": '{"orders":{"0":1000000}}'},
     "startingOffsets for orders-0 (1000000) is after the offset the read ends at"),
    ({"bootstrap": None, "subscribe": "orders", "endingOffsets": '{"orders":{"0":1000000}}'},
     "endingOffsets for orders-0 (1000000) is after the partition's latest offset"),
]


@pytest.mark.parametrize("options, says", BAD_READS)
def test_bad_options_get_one_clear_error_before_any_task_starts(spark, bootstrap, orders, options, says):
    group = f"bad-{abs(hash(says))}"
    spark.sparkContext.setJobGroup(group, "a read with bad options")
    reader = spark.read.format("replog")
    for name, value in options.items():
        reader = reader.option(name, bootstrap if value is None else value)
    with pytest.raises(Exception) as failure:
        reader.load().count()
    assert f"OptionError: {says}" in str(failure.value)
    assert spark.sparkContext.statusTracker().getJobIdsForGroup(group) == []


def test_a_row_with_an_empty_topic_fails_its_write_at_once_naming_the_row(spark, bootstrap, orders):
    rows = spark.createDataFrame([("orders", "x"), ("", "y")], "topic string, value string").coalesce(1)
    started = time.monotonic()
    with pytest.raises(Exception, match="row 1 has a null or empty topic and no topic option is set"):
        rows.write.format("replog").option("bootstrap", bootstrap).mode("append").save()
    assert time.monotonic() - started < 30  # not a producer waiting for a topic named ""


def test_a_row_naming_a_missing_topic_fails_its_write_naming_the_topic_and_the_row(spark, bootstrap, orders):
    rows = spark.createDataFrame([("orders", "x"), ("orders", "y"), ("no-such-topic", "z")],
                                 "topic string, value string").coalesce(1)
    started = time.monotonic()
    with pytest.raises(Exception, match=r"topic 'no-such-topic' does not exist \(the topic column of row 2\); "
                                        "create it first"):
        rows.write.format("replog").option("bootstrap", bootstrap).mode("append").save()
    assert time.monotonic() - started < 30  # the task's topic lookup, not the producer's 60 s max_block_ms


def test_a_bad_write_is_refused_before_any_task_starts(spark, bootstrap):
    rows = spark.createDataFrame([("x",)], "payload string")
    with pytest.raises(Exception, match="writing to replog needs a value column"):
        rows.write.format("replog").option("bootstrap", bootstrap).option("topic", "orders").mode("append").save()
    values = spark.createDataFrame([("x",)], "value string")
    with pytest.raises(Exception, match=r"topic 'no-such-topic' does not exist \(topic=no-such-topic\)"):
        (values.write.format("replog").option("bootstrap", bootstrap).option("topic", "no-such-topic")
         .mode("append").save())
    with pytest.raises(Exception, match="a replog topic is append-only"):
        values.write.format("replog").option("bootstrap", bootstrap).option("topic", "orders").mode("overwrite").save()
    with pytest.raises(Exception, match="transactional=true writes with acks=all"):
        (values.write.format("replog").option("bootstrap", bootstrap).option("topic", "orders")
         .option("transactional", "true").option("acks", "1").mode("append").save())
