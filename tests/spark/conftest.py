"""One replog cluster and one SparkSession (local[2]) per test module; run under the cluster lock."""

import time

import pytest

pytest.importorskip("pyspark")

from replog.client import Admin, NewTopic, Producer  # noqa: E402
from tests.integration.cluster import LocalCluster  # noqa: E402

SPARK_CONFIGS = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.streaming.pollingDelay": "50ms",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """3 brokers and 1 controller; retention checked twice a second so tests can watch it work."""
    local = LocalCluster(str(tmp_path_factory.mktemp("cluster") / "data"))
    local.up("--brokers", "3", "--controllers", "1", "--config", "log.retention.check.interval.ms=500")
    yield local
    local.down()


@pytest.fixture(scope="module")
def bootstrap(cluster):
    return cluster.status()["metadata"][0]["address"]


@pytest.fixture(scope="module")
def admin(bootstrap):
    with Admin(bootstrap) as client:
        yield client


@pytest.fixture(scope="module")
def spark():
    from replog.spark.session import replog_session

    session = replog_session("replog-tests", configs=SPARK_CONFIGS)
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def create_topic(admin, name: str, partitions: int = 3, **configs: str) -> None:
    admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=3,
                                  configs={k.replace("_", "."): v for k, v in configs.items()})])


def produce(bootstrap: str, topic: str, rows, partition: int | None = None) -> list:
    """Send (key, value) rows with acks=all; returns (RecordMetadata, key, value) for each, in order."""
    with Producer(bootstrap, acks="all", linger_ms=1) as producer:
        futures = [(producer.send(topic, value, key=key, partition=partition), key, value) for key, value in rows]
        return [(future.result(30), key, value) for future, key, value in futures]


def wait_until(condition, timeout_s: float, what: str, interval_s: float = 0.2):
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(interval_s)
