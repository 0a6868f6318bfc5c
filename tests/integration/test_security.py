"""A `replog dev up --tls` cluster: every listener TLS with client certificates required, the
members reaching each other with their own certificates, and clients let in only with a
certificate of the cluster's CA that is valid now."""

import datetime
import os
import subprocess

import pytest

from replog.dev.processes import scrape_metric
from replog.rpc.channels import ClientSecurity
from replog.security.dev_ca import Authority
from tests.integration.cluster import REPLOG, LocalCluster, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    local = LocalCluster(str(tmp_path_factory.mktemp("secure") / "data"))
    local.up("--brokers", "2", "--controllers", "1", "--tls")
    yield local
    local.down()


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
    alice = ClientSecurity(tls["cafile"], certificates["alice"].certfile, certificates["alice"].keyfile)
    assert wait_for(lambda: scrape_metric(address, "replog_tls_certificate_expiry_timestamp_seconds", security=alice),
                    10, "the broker's metrics over HTTPS") > 0
    assert scrape_metric(address, "process_cpu_seconds_total") is None
