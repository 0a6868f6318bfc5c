"""The exactly-once sink (transactional=true) on a real cluster: a task that fails after part of its rows
reached the log and is tried again, and a micro-batch run again after a restart from the checkpoint,
leave every row once in a read_committed read."""

import os

import pytest

from replog.client import Consumer, TopicPartition
from tests.spark.conftest import SPARK_CONFIGS, create_topic, produce, wait_until

pytestmark = pytest.mark.slow

ROWS = 1_000
FAIL_AT_ROW = 300  # the failing attempt's rows before this one are written first
# Rows of about 1 KB: a Python UDF's worker sends its results on in 64 KiB buffers, so small rows would
# stay in the buffer until the task ends and the failing attempt would write nothing before it fails.
PADDING = "." * 1_000
WAIT_S = 60


@pytest.fixture(scope="module")
def spark():
    """local[2,4]: two threads, and a failed task is tried up to 4 times (local[2] never retries);
    Arrow batches of 100 rows, so a task's first rows leave for the log while later ones are computed."""
    from replog.spark.session import replog_session

    session = replog_session("replog-exactly-once", master="local[2,4]",
                             configs={**SPARK_CONFIGS, "spark.sql.execution.arrow.maxRecordsPerBatch": "100"})
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def failing_first_attempt(bootstrap: str, out_topic: str):
    """An identity UDF over the value column that makes the first attempt of task 0 fail at its
    FAIL_AT_ROW-th row, once the rows it passed on before are in the output topic (uncommitted)."""
    from pyspark import TaskContext
    from pyspark.sql.functions import udf

    passed = []

    def identity(value):
        context = TaskContext.get()
        if context.partitionId() != 0 or context.attemptNumber() != 0:
            return value
        passed.append(value)
        if len(passed) == FAIL_AT_ROW:
            _wait_for_uncommitted(bootstrap, out_topic, passed[0].encode())
            raise RuntimeError(f"task 0 fails after writing part of its rows ({passed[0][:12]} is in the log)")
        return value

    return udf(identity, "string", useArrow=False)


def _wait_for_uncommitted(bootstrap: str, topic: str, value: bytes) -> None:
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        seen = []
        wait_until(lambda: seen.extend(r.value for r in consumer.poll(200)) or value in seen, WAIT_S,
                   f"{value[:12]!r}... in {topic}")


def values_in(spark, bootstrap: str, topic: str, isolation_level: str) -> list[str]:
    df = (spark.read.format("replog").option("bootstrap", bootstrap).option("subscribe", topic)
          .option("isolationLevel", isolation_level).load())
    return sorted(r.value.decode() for r in df.select("value").collect())


def fill(bootstrap: str, topic: str, first: int, count: int) -> list[str]:
    """Rows row-<first>..., alternately into the topic's two partitions; returns them sorted."""
    values = sorted(f"row-{i}:{PADDING}" for i in range(first, first + count))
    for partition in (0, 1):
        produce(bootstrap, topic, [(None, v.encode()) for v in values[partition::2]], partition=partition)
    return values


def stream_into(spark, bootstrap: str, source: str, sink: str, checkpoint: str, value_column=None):
    rows = (spark.readStream.format("replog").option("bootstrap", bootstrap).option("subscribe", source)
            .option("startingOffsets", "earliest").load().selectExpr("cast(value as string) as value"))
    if value_column is not None:
        rows = rows.select(value_column(rows.value).alias("value"))
    query = (rows.writeStream.format("replog").option("bootstrap", bootstrap).option("topic", sink)
             .option("transactional", "true").option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination(300)
    assert not query.isActive and query.exception() is None
    return query


def test_a_streaming_task_that_fails_mid_write_and_is_retried_leaves_each_row_once(spark, admin, bootstrap,
                                                                                  tmp_path):
    create_topic(admin, "eos-in", partitions=2)
    create_topic(admin, "eos-out", partitions=1)
    values = fill(bootstrap, "eos-in", 0, ROWS)
    stream_into(spark, bootstrap, "eos-in", "eos-out", str(tmp_path / "checkpoint"),
                failing_first_attempt(bootstrap, "eos-out"))
    assert values_in(spark, bootstrap, "eos-out", "read_committed") == values
    uncommitted = values_in(spark, bootstrap, "eos-out", "read_uncommitted")
    aborted = list(uncommitted)
    for value in values:
        aborted.remove(value)
    assert aborted and len(aborted) < FAIL_AT_ROW  # the failed attempt's partial write, aborted


def test_a_micro_batch_run_again_after_a_restart_writes_nothing_twice(spark, admin, bootstrap, tmp_path):
    checkpoint = str(tmp_path / "checkpoint")
    create_topic(admin, "replay-in", partitions=2)
    create_topic(admin, "replay-out", partitions=1)
    values = fill(bootstrap, "replay-in", 0, 200)
    stream_into(spark, bootstrap, "replay-in", "replay-out", checkpoint)
    # The driver dies after the sink committed the last micro-batch and before Spark's commit log says so.
    commits = os.path.join(checkpoint, "commits")
    last = max(int(name) for name in os.listdir(commits) if name.isdigit())
    for name in (str(last), f".{last}.crc"):
        if os.path.exists(os.path.join(commits, name)):
            os.remove(os.path.join(commits, name))
    values += fill(bootstrap, "replay-in", 200, 100)

    again = stream_into(spark, bootstrap, "replay-in", "replay-out", checkpoint)
    assert last in [p["batchId"] for p in again.recentProgress]  # the micro-batch did run again
    assert values_in(spark, bootstrap, "replay-out", "read_committed") == sorted(values)
    assert values_in(spark, bootstrap, "replay-out", "read_uncommitted") == sorted(values)  # not even aborted


def test_a_batch_write_task_that_fails_mid_write_and_is_retried_leaves_each_row_once(spark, admin, bootstrap):
    create_topic(admin, "eos-batch", partitions=1)
    rows = spark.range(0, 5_000, 1, 2).selectExpr(f"concat(cast(id as string), ':{PADDING}') as value")
    rows = rows.select(failing_first_attempt(bootstrap, "eos-batch")(rows.value).alias("value"))
    (rows.write.format("replog").option("bootstrap", bootstrap).option("topic", "eos-batch")
     .option("transactional", "true").mode("append").save())
    committed = values_in(spark, bootstrap, "eos-batch", "read_committed")
    assert committed == sorted(f"{i}:{PADDING}" for i in range(5_000))
    assert len(values_in(spark, bootstrap, "eos-batch", "read_uncommitted")) > len(committed)
