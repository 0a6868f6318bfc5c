"""The dashboards and alerts against a real Prometheus scraping a real cluster.

Given a local cluster started with --monitoring, --tls and --log-format json (Prometheus scrapes
HTTPS with a client certificate, as a production cluster would have it), a producer writing, a
transactional producer committing small transactions and a consumer group reading, when a broker
is SIGKILLed: every query of every dashboard panel returns at least one series through
Prometheus's HTTP API, ReplogBrokerDown and ReplogUnderReplicatedPartitions fire, and both
resolve once the broker is back. Every metric the dashboards and rules name is served by a
member, and every log line is a JSON object with the stable fields.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from replog.client import Admin, ClientError, Consumer, NewTopic, Producer
from replog.dev.processes import metrics_client_context
from replog.monitoring import preview
from replog.monitoring.api import PrometheusApi, expand
from replog.rpc.channels import ClientSecurity
from tests.integration.cluster import LocalCluster, wait_for
from tests.monitoring import queries

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

TOPIC = "orders"
GROUP = "billing"
TRANSACTIONAL_ID = "order-batcher"
TXN_RECORDS = 5
TXN_PAUSE_S = 0.2
TXN_TIMEOUT_S = 10
# Grafana's $__rate_interval for a 1 s scrape interval would be seconds; a minute keeps the
# scenario's few events (one election, one rebalance) in every window the test looks at.
RATE_INTERVAL = "1m"
ALERT_WAIT_S = 60
LOG_FIELDS = {"time", "level", "service", "logger", "event", "message"}


@pytest.fixture(scope="module")
def monitored(tmp_path_factory):
    cluster = LocalCluster(str(tmp_path_factory.mktemp("monitored") / "data"))
    cluster.up("--brokers", "3", "--controllers", "2", "--monitoring", "--tls", "--log-format", "json")
    yield cluster
    cluster.down(kill=True)


@pytest.fixture(scope="module")
def api(monitored):
    return PrometheusApi(monitored.status()["prometheus"]["address"])


@pytest.fixture(scope="module")
def security(monitored):
    """The admin's certificate of the cluster's own CA."""
    tls = monitored.state()["tls"]
    admin = tls["identities"]["admin"]
    return ClientSecurity(tls["cafile"], admin["certfile"], admin["keyfile"])


@pytest.fixture(scope="module")
def traffic(monitored, security):
    """A producer writing about 200 records a second (after three records the leaders refuse), a
    transactional producer committing a few transactions of five records a second, and a consumer
    group reading them, on threads."""
    bootstrap = monitored.status()["metadata"][0]["address"]
    with Admin(bootstrap, security=security) as admin:
        admin.create_topics([NewTopic(TOPIC, 3, 3, configs={"min.insync.replicas": "2"})])
    stop = threading.Event()

    def produce():
        with Producer(bootstrap, linger_ms=20, security=security) as producer:
            # A record two hours ahead of the brokers' clocks to each partition: each leader refuses it
            # (INVALID_TIMESTAMP), which the topics dashboard's "Produce refused" panel shows.
            ahead_ms = int(time.time() * 1000) + 7_200_000
            for partition in range(3):
                with contextlib.suppress(ClientError):
                    producer.send(TOPIC, b"from the future", partition=partition, timestamp_ms=ahead_ms).result(30)
            while not stop.wait(0.005):
                producer.send(TOPIC, b"an order")

    def transact():
        producer = None
        while not stop.wait(TXN_PAUSE_S):
            try:
                if producer is None:
                    producer = Producer(bootstrap, transactional_id=TRANSACTIONAL_ID, linger_ms=5, security=security)
                    producer.init_transactions(TXN_TIMEOUT_S)
                producer.begin_transaction()
                for _ in range(TXN_RECORDS):
                    producer.send(TOPIC, b"an order of a batch")
                producer.commit_transaction(TXN_TIMEOUT_S)
            except ClientError:
                # A coordinator or leader moving: a new instance fences this one and ends what it left open.
                if producer is not None:
                    with contextlib.suppress(ClientError):
                        producer.close(TXN_TIMEOUT_S)
                producer = None
        if producer is not None:
            with contextlib.suppress(ClientError):
                producer.close(TXN_TIMEOUT_S)

    def consume():
        with Consumer(bootstrap, group_id=GROUP, auto_offset_reset="earliest", security=security) as consumer:
            consumer.subscribe([TOPIC])
            while not stop.is_set():
                try:
                    consumer.poll(200)
                except ClientError:
                    pass  # a coordinator or leader moving: the next poll goes on

    threads = [threading.Thread(target=work, daemon=True) for work in (produce, transact, consume)]
    for thread in threads:
        thread.start()
    yield
    stop.set()
    for thread in threads:
        thread.join(30)


def firing(api, name):
    return [a for a in api.alerts() if a["labels"]["alertname"] == name and a["state"] == "firing"]


def active(api, name):
    return [a for a in api.alerts() if a["labels"]["alertname"] == name]


def served_metric_names(cluster, security):
    """Every sample name each member's /metrics declares (a labelled metric with no series yet counts)."""
    suffixes = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_count", "_sum", "_created"),
                "gauge": ("",), "summary": ("_count", "_sum", "_created"), "unknown": ("",)}
    served = set()
    for kind in ("brokers", "controllers", "metadata"):
        for member in cluster.state()[kind]:
            with urllib.request.urlopen(f"https://{member['metrics_address']}/metrics", timeout=5,
                                        context=metrics_client_context(security)) as response:
                text = response.read().decode()
            for family in text_string_to_metric_families(text):
                served |= {family.name + suffix for suffix in suffixes.get(family.type, ("",))}
                served |= {sample.name for sample in family.samples}
    return served


def test_dashboards_and_alerts_follow_a_broker_failure(monitored, api, security, traffic, tmp_path):
    # Given traffic that every dashboard sees: a group with lag figures, records flowing, transactions
    # committed.
    wait_for(lambda: api.query(f'sum(replog_consumergroup_members{{group="{GROUP}"}}) > 0')
             and api.query(f'sum(rate(replog_messages_in_total{{topic="{TOPIC}"}}[{RATE_INTERVAL}])) > 0')
             and api.query(f'replog_consumergroup_lag{{group="{GROUP}"}}')
             and api.query(f'sum(rate(replog_txn_marker_latency_seconds_count[{RATE_INTERVAL}])) > 0'), 60,
             "Prometheus to see the producers and the consumer group")

    missing = queries.every_metric_name() - served_metric_names(monitored, security)
    assert not missing, f"named by a dashboard or rule but served by no member: {sorted(missing)}"

    # When a broker that does not coordinate the group is SIGKILLed.
    coordinator = api.query(f'replog_consumergroup_members{{group="{GROUP}"}}')[0]["metric"]["member"]
    victim = next(b["id"] for b in monitored.status()["brokers"] if f"broker-{b['id']}" != coordinator)
    monitored.signal("broker", victim, "KILL")

    # Then the broker-down and under-replicated alerts fire.
    down = wait_for(lambda: firing(api, "ReplogBrokerDown"), ALERT_WAIT_S, "ReplogBrokerDown to fire")
    assert [a["labels"]["broker"] for a in down] == [str(victim)]
    wait_for(lambda: firing(api, "ReplogUnderReplicatedPartitions"), ALERT_WAIT_S,
             "ReplogUnderReplicatedPartitions to fire")

    # And every panel's query returns series; the overview shows the failure.
    empty = [(name, title, expr) for name, title, expr in queries.panel_queries()
             if not api.query(expand(expr, RATE_INTERVAL))]
    assert not empty, "panels without data:\n" + "\n".join(f"{n} / {t}: {e}" for n, t, e in empty)
    for name, variable, selector in queries.variable_selectors():
        if variable != "namespace":  # the local cluster's targets have no namespace label
            assert api.query(expand(selector, RATE_INTERVAL)), f"{name}: variable {variable} has no values"
    assert value(api, "sum(replog_active_broker_count)") == 2
    assert value(api, "sum(replog_under_replicated_partitions)") > 0
    assert value(api, "sum(replog_offline_replica_count)") > 0
    # Every member's certificate and CA come from the cluster's CA, valid for a year: no expiry alert.
    left_days = value(api, "min(replog_tls_certificate_expiry_timestamp_seconds) - time()") / 86_400
    assert 364 < left_days <= 365
    assert not active(api, "ReplogCertificateExpiresSoon")

    dashboard = queries.dashboards()["replog-cluster.json"]
    picture = tmp_path / "cluster.png"
    preview.render(dashboard, api, picture, minutes=3)
    assert picture.stat().st_size > 50_000

    # When the broker is back, both alerts resolve.
    monitored("dev", "start", "broker", str(victim))
    wait_for(lambda: not active(api, "ReplogBrokerDown") and not active(api, "ReplogUnderReplicatedPartitions"),
             ALERT_WAIT_S, "ReplogBrokerDown and ReplogUnderReplicatedPartitions to resolve")

    # Every member logged JSON lines with the stable fields, some about partitions and groups.
    lines = [json.loads(line) for kind, count in (("broker", 3), ("controller", 2), ("metadata", 1))
             for member_id in range(1, count + 1) for line in monitored.log_text(kind, member_id).splitlines()]
    assert lines and all(LOG_FIELDS <= line.keys() for line in lines)
    assert any(line["event"] == "isr_changed" and {"topic", "partition", "broker_id"} <= line.keys() for line in lines)
    assert any(line["event"] == "member_joined" and line["group"] == GROUP for line in lines)


def value(api, expr):
    (sample,) = api.query(expr)
    return float(sample["value"][1])
