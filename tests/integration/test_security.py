"""A `replog dev up --tls --authorizer` cluster: every listener TLS with client certificates
required, the members reaching each other with their own certificates, clients let in only with a
certificate of the cluster's CA that is valid now; then each operation allowed by exactly its ACL,
changed with `replog acls` while the cluster runs."""

import datetime
import os
import subprocess

import pytest

from replog.dev.processes import scrape_metric
from replog.rpc.channels import ClientSecurity
from replog.security.dev_ca import Authority
from tests.integration.cluster import REPLOG, LocalCluster, token_secret_file, wait_for

pytestmark = pytest.mark.slow


QUOTA_WINDOWS = 3  # of quota.window.size.seconds=1


@pytest.fixture(scope="module")
def secret_file(tmp_path_factory):
    return token_secret_file(tmp_path_factory)


@pytest.fixture(scope="module")
def digest_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("zookeeper") / "digest"
    path.write_text("replog:a-zookeeper-password\n")
    return str(path)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, secret_file, digest_file):
    local = LocalCluster(str(tmp_path_factory.mktemp("secure") / "data"))
    local.up("--brokers", "2", "--controllers", "1", "--tls", "--authorizer",
             "--config", f"token.hmac.secret.file={secret_file}",
             "--config", "zookeeper.set.acl=true", "--config", f"zookeeper.auth.digest.file={digest_file}",
             "--config", f"quota.window.num={QUOTA_WINDOWS}")  # a quota's rate over 3 s: the test sees it settle sooner
    yield local
    local.down(kill=True)


@pytest.fixture(scope="module")
def tls(cluster):
    return cluster.state()["tls"]


@pytest.fixture(scope="module")
def certificates(tls, tmp_path_factory):
    """Client certificates beside the admin's: one of the cluster's CA, one of another CA, an expired one."""
    folder = str(tmp_path_factory.mktemp("clients"))
    ca = Authority.load(os.path.dirname(tls["cafile"]))
    return {
        "alice": ca.issue(folder, "alice"),
        "expired": ca.issue(folder, "expired", not_before=datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC),
                            valid_for=datetime.timedelta(days=1)),
        "stranger": Authority.create(os.path.join(folder, "other")).issue(folder, "stranger"),
    }


def client_properties(path, cafile="", files=None):
    lines = [f"ssl.cafile={cafile}"] if cafile else []
    if files is not None:
        lines += [f"ssl.certfile={files.certfile}", f"ssl.keyfile={files.keyfile}"]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def run(cluster, *args, stdin="", command_config=None):
    extra = ["--command-config", command_config] if command_config else []
    return subprocess.run([*REPLOG, *args, "--data-dir", cluster.data_dir, *extra], input=stdin,
                          capture_output=True, text=True, timeout=120)


def test_the_members_replicate_and_commands_work_over_mtls(cluster):
    assert run(cluster, "topics", "create", "tls", "--partitions", "2", "--replication-factor", "2").returncode == 0
    produced = run(cluster, "produce", "tls", "--acks", "all", stdin="a\nb\nc\n")
    assert produced.returncode == 0, produced.stderr
    consumed = run(cluster, "consume", "tls", "--from-beginning", "--max-messages", "3", "--timeout-ms", "10000")
    assert sorted(consumed.stdout.split()) == ["a", "b", "c"], consumed.stderr
    described = run(cluster, "topics", "describe", "tls").stdout
    assert described.count("Isr: 1,2") + described.count("Isr: 2,1") == 2, described


@pytest.mark.parametrize("who", ["plaintext", "no certificate", "another CA's certificate", "an expired certificate"])
def test_clients_without_a_valid_certificate_of_the_cluster_are_refused(cluster, tls, certificates, who, tmp_path):
    config = {
        "plaintext": lambda: client_properties(tmp_path / "c.properties"),
        "no certificate": lambda: client_properties(tmp_path / "c.properties", tls["cafile"]),
        "another CA's certificate": lambda: client_properties(tmp_path / "c.properties", tls["cafile"],
                                                              certificates["stranger"]),
        "an expired certificate": lambda: client_properties(tmp_path / "c.properties", tls["cafile"],
                                                            certificates["expired"]),
    }[who]()
    result = run(cluster, "topics", "list", command_config=config)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "no metadata service answered" in result.stderr and "--command-config" in result.stderr, result.stderr


def test_a_certificate_of_the_clusters_ca_gets_in(cluster, tls, certificates, tmp_path):
    config = client_properties(tmp_path / "alice.properties", tls["cafile"], certificates["alice"])
    result = run(cluster, "topics", "list", command_config=config)
    assert result.returncode == 0, result.stderr


def test_metrics_are_served_over_https_to_certificate_holders(cluster, tls, certificates):
    address = cluster.metrics_address("broker", 1)
    alice = _client(tls, certificates["alice"])
    expiry = 'replog_tls_certificate_expiry_timestamp_seconds{kind="%s"}'
    served = wait_for(lambda: scrape_metric(address, expiry % "certificate", security=alice), 10,
                      "the broker's metrics over HTTPS")
    # The alerts on certificate expiry read these: the broker's own certificate and the cluster's CA.
    assert served == _not_after(tls["identities"]["broker"]["certfile"])
    assert scrape_metric(address, expiry % "ca", security=alice) == _not_after(tls["cafile"])
    assert scrape_metric(address, "process_cpu_seconds_total") is None


def _not_after(path: str) -> float:
    from cryptography import x509

    with open(path, "rb") as pem:
        return x509.load_pem_x509_certificate(pem.read()).not_valid_after_utc.timestamp()


# -- ACLs ------------------------------------------------------------------------------------

ACL_WAIT_S = 10.0


@pytest.fixture(scope="module")
def alice(tls, certificates, tmp_path_factory):
    return client_properties(tmp_path_factory.mktemp("alice") / "client.properties", tls["cafile"],
                             certificates["alice"])


def acls(cluster, *args):
    result = run(cluster, "acls", *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def until_allowed(attempt, what):
    """Retry `attempt` (a finished process) until it succeeds: ACLs reach every service within seconds."""
    return wait_for(lambda: (lambda r: r if r.returncode == 0 else None)(attempt()), ACL_WAIT_S, what, interval_s=0.3)


def test_a_produce_is_refused_until_an_acl_allows_write_and_refused_again_once_it_is_removed(cluster, alice):
    assert run(cluster, "topics", "create", "orders", "--partitions", "2", "--replication-factor", "2").returncode == 0
    refused = run(cluster, "produce", "orders", stdin="x\n", command_config=alice)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    # Metadata hides what alice may not Describe, so the topic is as good as absent to her.
    assert "does not exist" in refused.stderr and "may Describe" in refused.stderr, refused.stderr
    acls(cluster, "add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "orders")
    until_allowed(lambda: run(cluster, "produce", "orders", "--acks", "all", stdin="a\nb\n", command_config=alice),
                  "alice's produce to be allowed")
    consume = run(cluster, "consume", "orders", "--from-beginning", "--max-messages", "1", "--timeout-ms", "3000",
                  command_config=alice)
    assert consume.returncode != 0 or consume.stdout.strip() == "", "Write must not allow Read"
    acls(cluster, "remove", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "orders")
    wait_for(lambda: run(cluster, "produce", "orders", stdin="c\n", command_config=alice).returncode == 1,
             ACL_WAIT_S, "alice's produce to be refused again", interval_s=0.3)


def test_read_on_a_prefix_lets_a_consumer_read_every_topic_it_covers_and_deny_beats_it(cluster, alice):
    for topic in ("logs-app", "logs-db"):
        run(cluster, "topics", "create", topic, "--partitions", "1", "--replication-factor", "2")
        assert run(cluster, "produce", topic, stdin=f"{topic}\n").returncode == 0
    acls(cluster, "add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "logs-",
         "--resource-pattern-type", "prefixed")
    for topic in ("logs-app", "logs-db"):
        consumed = until_allowed(lambda t=topic: run(cluster, "consume", t, "--from-beginning", "--max-messages", "1",
                                                     "--timeout-ms", "10000", command_config=alice),
                                 f"alice's read of {topic}")
        assert consumed.stdout.split() == [topic]
    acls(cluster, "add", "--deny-principal", "User:alice", "--operation", "Read", "--topic", "logs-db")
    wait_for(lambda: run(cluster, "consume", "logs-db", "--from-beginning", "--max-messages", "1", "--timeout-ms",
                         "2000", command_config=alice).stdout.strip() == "", ACL_WAIT_S, "the deny to win",
             interval_s=0.3)
    listed = run(cluster, "topics", "list", command_config=alice).stdout.split()
    assert listed == ["logs-app", "logs-db"], "Metadata lists the topics alice may Describe: the prefixed Read " \
                                              "implies it, and the Deny is of Read only"


def test_creating_and_deleting_topics_need_create_and_delete(cluster, alice):
    refused = run(cluster, "topics", "create", "alices", "--partitions", "1", "--replication-factor", "1",
                  command_config=alice)
    assert refused.returncode == 1 and "TOPIC_AUTHORIZATION_FAILED" in refused.stderr, refused.stderr
    acls(cluster, "add", "--allow-principal", "User:alice", "--operation", "Create", "--operation", "Delete",
         "--topic", "alices")
    until_allowed(lambda: run(cluster, "topics", "create", "alices", "--partitions", "1", "--replication-factor", "1",
                              "--if-not-exists", command_config=alice), "alice's topic creation")
    deleted = run(cluster, "topics", "delete", "alices", command_config=alice)
    assert deleted.returncode == 0, deleted.stderr


def test_a_group_needs_read_on_the_group_as_well_as_the_topic(cluster, alice):
    run(cluster, "topics", "create", "events", "--partitions", "1", "--replication-factor", "2")
    assert run(cluster, "produce", "events", stdin="e1\n").returncode == 0
    acls(cluster, "add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "events")
    refused = run(cluster, "consume", "events", "--group", "analytics", "--from-beginning", "--max-messages", "1",
                  "--timeout-ms", "5000", command_config=alice)
    assert refused.returncode == 1 and "GROUP_AUTHORIZATION_FAILED" in refused.stderr, refused.stderr
    acls(cluster, "add", "--allow-principal", "User:alice", "--operation", "Read", "--group", "analytics")
    consumed = until_allowed(lambda: run(cluster, "consume", "events", "--group", "analytics", "--from-beginning",
                                         "--max-messages", "1", "--timeout-ms", "10000", command_config=alice),
                             "alice's group read")
    assert consumed.stdout.split() == ["e1"]
    groups = run(cluster, "groups", "describe", "analytics", "--offsets").stdout
    assert "events" in groups, "the group committed its offset"


def test_a_controller_request_from_a_client_principal_is_refused_naming_principal_and_operation(cluster, tls,
                                                                                                  certificates):
    import grpc

    from replog.api.broker.v1 import broker_pb2, broker_pb2_grpc
    from replog.rpc.channels import channel

    alice = _client(tls, certificates["alice"])
    with channel(cluster.status()["brokers"][0]["address"], security=alice) as opened:
        with pytest.raises(grpc.RpcError) as refused:
            broker_pb2_grpc.BrokerServiceStub(opened).LeaderAndIsr(broker_pb2.LeaderAndIsrRequest(), timeout=5)
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "User:alice may not ClusterAction on the cluster (LeaderAndIsr)" in refused.value.details()


def test_a_bearer_token_names_the_principal_and_a_forged_one_is_refused(cluster, tls, certificates, tmp_path,
                                                                       secret_file):
    from replog.core.tokens import sign_hs256

    acls(cluster, "add", "--allow-principal", "User:bob", "--operation", "Describe", "--topic", "orders")
    minted = subprocess.run([*REPLOG, "tokens", "create", "--principal", "User:bob", "--secret-file", secret_file],
                            capture_output=True, text=True, timeout=60)
    assert minted.returncode == 0, minted.stderr
    # The cluster requires a client certificate; the token, sent beside it, names the principal.
    base = (tmp_path / "base.properties")
    client_properties(base, tls["cafile"], certificates["alice"])
    config = tmp_path / "bob.properties"
    config.write_text(base.read_text() + f"bearer.token={minted.stdout.strip()}\n")
    listed = until_allowed(lambda: run(cluster, "topics", "list", command_config=str(config)), "bob's listing")
    assert listed.stdout.split() == ["orders"]
    forged = sign_hs256(b"another secret of thirty-two bytes or more", "admin", 2**31)
    config.write_text(base.read_text() + f"bearer.token={forged}\n")
    refused = run(cluster, "topics", "list", command_config=str(config))
    assert refused.returncode == 1 and "signature does not verify" in refused.stderr, refused.stderr


def test_acls_list_shows_what_was_added(cluster):
    listed = acls(cluster, "list", "--topic", "orders")
    assert "Topic:orders" in listed and "User:bob" in listed


def test_a_transactional_write_needs_write_on_its_transactional_id_as_well_as_the_topic(cluster, tls, certificates,
                                                                                        bootstrap):
    from replog.client import ClientError, Consumer, Producer, TopicPartition

    run(cluster, "topics", "create", "ledger", "--partitions", "1", "--replication-factor", "2")
    acls(cluster, "add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "ledger")
    alice = _client(tls, certificates["alice"])

    def refusal(value):
        """The error of one transaction of `value` by alice, or "" once it commits."""
        try:
            with Producer(bootstrap, transactional_id="ledger-writer", linger_ms=1, security=alice) as producer:
                producer.init_transactions(timeout=10)
                producer.begin_transaction()
                producer.send("ledger", value, partition=0)
                producer.commit_transaction(timeout=20)
        except ClientError as error:
            assert "TRANSACTIONAL_ID_AUTHORIZATION_FAILED" in str(error), error
            return str(error)
        return ""

    # Write on the topic is not enough: the transactional id is a resource of its own.
    assert "User:alice may not Describe on TransactionalId:ledger-writer" in refusal(b"refused")
    acls(cluster, "add", "--allow-principal", "User:alice", "--operation", "Describe", "--transactional-id",
         "ledger-writer")
    refused = wait_for(lambda: (lambda e: e if "may not Write" in e else None)(refusal(b"refused")), ACL_WAIT_S,
                       "InitProducerId to be refused for want of Write")
    assert "InitProducerId for transactional id 'ledger-writer'" in refused, refused
    acls(cluster, "remove", "--allow-principal", "User:alice", "--operation", "Describe", "--transactional-id",
         "ledger-writer", "--force")
    acls(cluster, "add", "--allow-principal", "User:alice", "--operation", "Write", "--transactional-id",
         "ledger-writer")
    wait_for(lambda: refusal(b"committed") == "", ACL_WAIT_S, "alice's transaction to commit", interval_s=0.3)
    with Consumer(bootstrap, isolation_level="read_committed", security=_client(tls, tls["identities"]["admin"])) \
            as consumer:
        consumer.assign([TopicPartition("ledger", 0)])
        consumer.seek_to_beginning()
        records = []
        wait_for(lambda: records.extend(consumer.poll(200)) or records, 15, "the committed record")
        records += consumer.poll(500)
    assert [r.value for r in records] == [b"committed"], "only the committed transaction is read"


# -- ZooKeeper ---------------------------------------------------------------------------------


def test_only_replogs_identity_may_write_cluster_state_in_zookeeper(cluster):
    from kazoo.exceptions import NoAuthError

    from replog.zk.session import new_client

    stranger = new_client(cluster.status()["zookeeper"]["address"], 10)
    stranger.start(10)
    try:
        assert stranger.get_children("/brokers/ids"), "everyone may read"
        with pytest.raises(NoAuthError):
            stranger.create("/brokers/topics/planted", b"{}")
        with pytest.raises(NoAuthError):
            stranger.set("/kafka-acl/Topic/orders", b'{"version":1,"acls":[]}')
        acl, _ = stranger.get_acls("/brokers/topics/orders")
    finally:
        stranger.stop()
        stranger.close()
    assert {(entry.id.scheme, entry.perms) for entry in acl} == {("digest", 31), ("world", 1)}


# -- quotas ----------------------------------------------------------------------------------

QUOTA_BYTES_PER_S = 100_000
REQUESTS_PER_S = 25


def metered_topic(cluster, topic, operation, entity_type, entity_name, quota):
    """A one-partition topic alice may `operation`, and `quota` (k=v) set on a user or client id: the
    address of the topic's leader and its metrics."""
    import json

    run(cluster, "topics", "create", topic, "--partitions", "1", "--replication-factor", "1")
    acls(cluster, "add", "--allow-principal", "User:alice", "--operation", operation, "--topic", topic)
    altered = run(cluster, "configs", "alter", "--entity-type", entity_type, "--entity-name", entity_name,
                  "--add-config", quota)
    assert altered.returncode == 0 and quota in altered.stdout, altered.stderr
    [partition] = json.loads(run(cluster, "topics", "describe", topic, "--json").stdout)["topics"][0]["partitions"]
    return next((b["address"], b["metrics_address"]) for b in cluster.state()["brokers"]
                if b["id"] == partition["leader"])


def rate_held_to(call, spans=3, settle_s=3):
    """Call `call()` (it returns the amount the quota counts) back to back: the amount per second
    sent over `spans` whole spans of the quota's windows, from the first whole second after
    `settle_s`. A broker's windows start on whole seconds of the host's monotonic clock, which the
    test shares: over whole spans the windows bound the count, where a stretch cut anywhere else may
    end in the burst the windows allow when a busy one falls out."""
    import math
    import time

    first = math.ceil(time.monotonic() + settle_s)
    last = first + spans * QUOTA_WINDOWS
    sent = []
    while (at := time.monotonic()) < last:
        sent.append((at, call()))
    return sum(amount for at, amount in sent if at >= first) / (last - first)


def test_a_producer_over_its_quota_is_told_to_wait_and_held_to_its_rate(cluster, tls, certificates):
    from replog.api.broker.v1 import broker_pb2, broker_pb2_grpc
    from replog.api.common.v1 import common_pb2
    from replog.protocol import encode_batch
    from replog.rpc.channels import channel

    leader, _ = metered_topic(cluster, "metered", "Write", "users", "alice", f"producer_byte_rate={QUOTA_BYTES_PER_S}")
    batch = encode_batch([(None, b"x" * 1000) for _ in range(10)])
    request = broker_pb2.ProduceRequest(acks=1, timeout_ms=5000, topics=[broker_pb2.ProduceTopicData(
        topic="metered", partitions=[broker_pb2.ProducePartitionData(partition=0, records=batch)])])
    throttles = []
    with channel(leader, security=_client(tls, certificates["alice"])) as opened:
        stub = broker_pb2_grpc.BrokerServiceStub(opened)

        def produce():
            response = stub.Produce(request, timeout=40)
            assert response.topics[0].partitions[0].error_code == common_pb2.ERROR_CODE_NONE, response
            throttles.append(response.throttle_time_ms)
            return request.ByteSize()

        rate = rate_held_to(produce)
    assert max(throttles) > 0, "the answers over the quota carry throttle_time_ms"
    assert abs(rate - QUOTA_BYTES_PER_S) <= 0.1 * QUOTA_BYTES_PER_S, f"{rate:.0f} B/s against a quota of " \
                                                                     f"{QUOTA_BYTES_PER_S} B/s"


def test_a_client_over_its_request_rate_is_held_to_it_and_bad_rates_are_refused(cluster, tls, certificates):
    from replog.api.broker.v1 import broker_pb2, broker_pb2_grpc
    from replog.api.common.v1 import common_pb2
    from replog.rpc.channels import channel

    for bad, complaint in (("-1", "from 1 to 9223372036854775807 requests per second"),
                           ("abc", "not a whole number of requests")):
        refused = run(cluster, "configs", "alter", "--entity-type", "clients", "--entity-name", "looper",
                      "--add-config", f"request_rate={bad}")
        assert refused.returncode != 0 and complaint in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    leader, metrics = metered_topic(cluster, "looped", "Describe", "clients", "looper",
                                    f"request_rate={REQUESTS_PER_S}")
    held = 'replog_throttled_responses_total{quota="request"}'
    held_before = scrape_metric(metrics, held, security=_client(tls, tls["identities"]["admin"])) or 0
    request = broker_pb2.ListOffsetsRequest(replica_id=-1, topics=[broker_pb2.ListOffsetsTopic(
        topic="looped", partitions=[broker_pb2.ListOffsetsPartition(partition=0, timestamp_ms=-1)])])
    try:
        with channel(leader, security=_client(tls, certificates["alice"])) as opened:
            stub = broker_pb2_grpc.BrokerServiceStub(opened)

            def list_offsets():
                response = stub.ListOffsets(request, metadata=[("client-id", "looper")], timeout=40)
                assert response.topics[0].partitions[0].error_code == common_pb2.ERROR_CODE_NONE, response
                return 1

            rate = rate_held_to(list_offsets)
    finally:
        run(cluster, "configs", "alter", "--entity-type", "clients", "--entity-name", "looper",
            "--delete-config", "request_rate")
    assert abs(rate - REQUESTS_PER_S) <= 0.1 * REQUESTS_PER_S, f"{rate:.1f} requests/s against a request_rate of " \
                                                               f"{REQUESTS_PER_S}"
    assert scrape_metric(metrics, held, security=_client(tls, tls["identities"]["admin"])) > held_before


def _client(tls, identity):
    """ClientSecurity of a certificate of the cluster's CA (a dict as cluster.json keeps it, or files)."""
    files = identity if isinstance(identity, dict) else {"certfile": identity.certfile, "keyfile": identity.keyfile}
    return ClientSecurity(tls["cafile"], files["certfile"], files["keyfile"])


# -- fuzzing -----------------------------------------------------------------------------------

FUZZ_EXAMPLES = int(os.environ.get("REPLOG_FUZZ_EXAMPLES", "15"))  # `make chaos` runs the long form
FUZZED_SERVICES = ("replog.api.broker.v1.BrokerService", "replog.api.coordinator.v1.CoordinatorService",
                   "replog.api.metadata.v1.MetadataService", "replog.api.controller.v1.ControllerService")
# Answers a strange request may get; UNKNOWN or INTERNAL would be a servicer that broke on it.
CLEAR_ERRORS = {"OK", "INVALID_ARGUMENT", "PERMISSION_DENIED", "UNAUTHENTICATED", "RESOURCE_EXHAUSTED",
                "DEADLINE_EXCEEDED", "UNIMPLEMENTED", "FAILED_PRECONDITION", "OUT_OF_RANGE", "NOT_FOUND",
                "CANCELLED"}


def fuzz(call, method, request_type, path, broken):
    """A Hypothesis test that sends `call` strange requests and notes the answers that are no clear error."""
    import grpc
    from hypothesis import HealthCheck, given, settings

    from tests.integration.fuzz_messages import wire_bytes

    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(payload=wire_bytes(request_type))
    def send(payload):
        try:
            if method.client_streaming:
                list(call(iter([payload, payload]), timeout=2))
            elif method.server_streaming:
                for _ in call(payload, timeout=1):
                    break
            else:
                call(payload, timeout=5)
            code = "OK"
        except grpc.RpcError as error:
            code = error.code().name
        if code not in CLEAR_ERRORS:
            broken.setdefault(path, set()).add(f"{code}: {payload[:40]!r}")

    return send


def test_every_rpc_survives_random_and_mutated_messages_and_acknowledged_data_stays_intact(cluster, tls,
                                                                                           certificates):
    from google.protobuf import descriptor_pool, message_factory

    from replog.rpc.channels import channel

    run(cluster, "topics", "create", "intact", "--partitions", "2", "--replication-factor", "2")
    lines = [f"acknowledged-{i}" for i in range(50)]
    assert run(cluster, "produce", "intact", "--acks", "all", stdin="\n".join(lines) + "\n").returncode == 0
    for resource, operations in ((["--topic", "*"], ("Read", "Write", "Describe")), (["--group", "*"], ("Read",)),
                                 (["--transactional-id", "*"], ("Write", "Describe"))):
        acls(cluster, "add", "--allow-principal", "User:fuzzer", *resource,
             *[flag for operation in operations for flag in ("--operation", operation)])
    fuzzer = Authority.load(os.path.dirname(tls["cafile"])).issue(os.path.dirname(certificates["alice"].certfile),
                                                                 "fuzzer")
    security = _client(tls, fuzzer)
    status = cluster.status()
    active = next(c["address"] for c in status["controllers"] if c["active"])
    broker = status["brokers"][0]["address"]
    addresses = dict(zip(FUZZED_SERVICES, (broker, broker, status["metadata"][0]["address"], active), strict=True))
    broken: dict[str, set[str]] = {}
    for service_name, address in addresses.items():
        service = descriptor_pool.Default().FindServiceByName(service_name)
        with channel(address, security=security) as opened:
            for method in service.methods:
                path = f"/{service_name}/{method.name}"
                request_type = message_factory.GetMessageClass(method.input_type)
                call = (opened.stream_stream(path) if method.client_streaming else
                        opened.unary_stream(path) if method.server_streaming else opened.unary_unary(path))
                fuzz(call, method, request_type, path, broken)()
    after = cluster.status()
    dead = [m for kind in ("brokers", "controllers", "metadata") for m in after[kind] if not m["alive"]]
    assert dead == [], f"processes died under the fuzzing: {dead}"
    consumed = run(cluster, "consume", "intact", "--from-beginning", "--max-messages", "50", "--timeout-ms", "15000")
    assert sorted(consumed.stdout.split()) == sorted(lines), "acknowledged records changed under the fuzzing"
    assert broken == {}, f"RPCs that broke on a strange request instead of answering clearly: {broken}"
