"""The data source on a `replog dev up --tls` cluster (mTLS on every listener, bearer tokens accepted):
with the ssl options a batch write reads back row for row, an exactly-once write reaches a stream read with
a token beside the certificate; without them, or with a token the cluster does not take, the read or write
stops on the driver with a sentence that says what to set."""

import time

import pytest

from replog.client import Admin, NewTopic
from replog.core.tokens import sign_hs256
from replog.rpc.channels import ClientSecurity
from tests.integration.cluster import TOKEN_SECRET
from tests.integration.conftest import tls_client, tls_cluster  # noqa: F401  (the --tls cluster and a certificate)

pytestmark = pytest.mark.slow

QUERY_TIMEOUT_S = 120
ROWS = 2000


@pytest.fixture(scope="module")
def cluster(tls_cluster):  # noqa: F811  (what bootstrap reaches)
    return tls_cluster


@pytest.fixture(scope="module")
def ssl_options(tls_client):  # noqa: F811
    """The client certificate as the data source's options."""
    return {"ssl.cafile": tls_client.cafile, "ssl.certfile": tls_client.certfile, "ssl.keyfile": tls_client.keyfile}


@pytest.fixture(scope="module")
def admin(bootstrap, ssl_options):
    security = ClientSecurity(ssl_options["ssl.cafile"], ssl_options["ssl.certfile"], ssl_options["ssl.keyfile"])
    with Admin(bootstrap, security=security) as client:
        yield client


def create(admin, name: str) -> str:
    admin.create_topics([NewTopic(name, num_partitions=2, replication_factor=2)])
    return name


def with_options(builder, options):
    for name, value in options.items():
        builder = builder.option(name, value)
    return builder


def read(spark, bootstrap, topic, **options):
    return with_options(spark.read.format("replog").option("bootstrap", bootstrap).option("subscribe", topic),
                        options).load()


def write(df, bootstrap, topic, **options):
    with_options(df.write.format("replog").option("bootstrap", bootstrap).option("topic", topic).mode("append"),
                 options).save()


def values(df):
    return sorted(r.value.decode() for r in df.select("value").collect())


def test_a_batch_write_then_read_over_mtls_returns_every_row(spark, bootstrap, admin, ssl_options):
    topic = create(admin, "tls-batch")
    rows = spark.range(ROWS).selectExpr("cast(id as string) as key", "concat('row ', id) as value")
    write(rows, bootstrap, topic, **ssl_options)
    assert values(read(spark, bootstrap, topic, **ssl_options)) == sorted(f"row {i}" for i in range(ROWS))


def test_an_exactly_once_write_reaches_a_stream_read_with_a_bearer_token_beside_the_certificate(
        spark, bootstrap, admin, ssl_options, tmp_path):
    topic = create(admin, "tls-transactional")
    token_file = tmp_path / "token"
    token_file.write_text(sign_hs256(TOKEN_SECRET, "spark", int(time.time()) + 600))
    secured = {**ssl_options, "bearerTokenFile": str(token_file)}
    write(spark.range(500).selectExpr("concat('txn ', id) as value"), bootstrap, topic, transactional="true",
          **secured)

    stream = with_options(spark.readStream.format("replog").option("bootstrap", bootstrap).option("subscribe", topic),
                          {"startingOffsets": "earliest", "isolationLevel": "read_committed", **secured})
    query = (stream.load().select("value").writeStream.format("memory").queryName("tls_stream")
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    query.awaitTermination(QUERY_TIMEOUT_S)
    assert query.exception() is None
    assert values(spark.table("tls_stream")) == sorted(f"txn {i}" for i in range(500))


def test_a_read_without_the_ssl_options_says_to_set_them(spark, bootstrap, admin):
    topic = create(admin, "tls-plaintext-reader")
    with pytest.raises(Exception) as failure:
        read(spark, bootstrap, topic).count()
    message = str(failure.value)
    assert "ClusterUnreachableError: no metadata service answered" in message
    assert "if the cluster serves TLS, set the options ssl.cafile (its CA), and ssl.certfile and ssl.keyfile" in message


def test_a_write_without_the_ssl_options_stops_before_any_task(spark, bootstrap):
    group = "tls-plaintext-writer"
    spark.sparkContext.setJobGroup(group, "a write without the ssl options")
    with pytest.raises(Exception) as failure:
        write(spark.createDataFrame([("x",)], "value string"), bootstrap, "tls-batch")
    assert "if the cluster serves TLS, set the options ssl.cafile" in str(failure.value)
    assert spark.sparkContext.statusTracker().getJobIdsForGroup(group) == []


def test_a_token_the_cluster_does_not_verify_is_named_on_the_driver(spark, bootstrap, admin, ssl_options):
    topic = create(admin, "tls-bad-token")
    with pytest.raises(Exception) as failure:
        read(spark, bootstrap, topic, bearerToken="not-a-token", **ssl_options).count()
    message = str(failure.value)
    assert "UNAUTHENTICATED" in message and "check the ssl and bearerToken options" in message


def test_the_orders_job_runs_on_the_tls_cluster_with_the_command_config(spark, bootstrap, admin, ssl_options,
                                                                       tmp_path):
    import datetime
    import json

    from replog.rpc import channels
    from replog.spark.jobs import orders_feed, orders_per_minute

    create(admin, "orders")
    create(admin, "orders-per-minute")
    config = tmp_path / "client.properties"
    config.write_text("".join(f"{name}={value}\n" for name, value in ssl_options.items()))
    cluster_args = ["--bootstrap", bootstrap, "--command-config", str(config)]
    try:
        assert orders_feed.main([*cluster_args, "--count", "120", "--minutes", "2"]) == 0
        assert orders_per_minute.main([*cluster_args, "--checkpoint", str(tmp_path / "checkpoint")]) == 0
    finally:
        channels.set_default(None)  # --command-config set this process's default
    got = {json.loads(r.value)["minute"]: (json.loads(r.value)["orders"], json.loads(r.value)["revenue"])
           for r in read(spark, bootstrap, "orders-per-minute", **ssl_options).collect()}
    start = datetime.datetime(2024, 1, 1, 10, tzinfo=datetime.timezone.utc)
    assert got == {minute.replace("+00:00", "Z"): totals
                   for minute, totals in orders_feed.per_minute(orders_feed.orders(120, 2, start)).items()}
