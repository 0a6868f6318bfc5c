"""One replog cluster and one SparkSession (local[2]) per test module; run under the cluster lock."""

import pytest

pytest.importorskip("pyspark")

from replog.client import NewTopic, Producer  # noqa: E402
from tests.integration.cluster import started, wait_for  # noqa: E402
from tests.integration.conftest import admin, bootstrap  # noqa: E402, F401  (the same fixtures, on this cluster)

SPARK_CONFIGS = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.streaming.pollingDelay": "50ms",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """3 brokers and 1 controller; retention checked twice a second so tests can watch it work."""
    yield from started(tmp_path_factory, "cluster", "--brokers", "3", "--controllers", "1",
                       "--config", "log.retention.check.interval.ms=500")


@pytest.fixture(scope="module")
def spark():
    from replog.spark.session import replog_session

    session = replog_session("replog-tests", configs=SPARK_CONFIGS)
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def create_topic(client, name: str, partitions: int = 3, **configs: str) -> None:
    client.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=3,
                                  configs={k.replace("_", "."): v for k, v in configs.items()})])


def produce(address: str, topic: str, rows, partition: int | None = None) -> list:
    """Send (key, value) rows with acks=all; returns (RecordMetadata, key, value) for each, in order."""
    with Producer(address, acks="all", linger_ms=1) as producer:
        futures = [(producer.send(topic, value, key=key, partition=partition), key, value) for key, value in rows]
        return [(future.result(30), key, value) for future, key, value in futures]


def wait_until(condition, timeout_s: float, what: str):
    return wait_for(condition, timeout_s, what, interval_s=0.2)
