"""`replog dev` refuses what would go wrong, in one clear message, and leaves nothing running."""

import os
import socket
import subprocess
import sys

import pytest

from replog.dev.processes import is_alive
from tests.integration.cluster import replog

pytestmark = pytest.mark.slow


def assert_user_error(result, *fragments):
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def test_a_port_in_use_is_named(tmp_path):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        result = replog("dev", "up", "--data-dir", str(tmp_path / "c"), "--base-port", str(port), check=False)
    assert_user_error(result, f"port {port}", "in use", "--base-port")


def test_missing_java_says_what_to_install(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}  # no java on this PATH
    result = replog("dev", "up", "--data-dir", str(tmp_path / "c"), check=False, env=env)
    assert_user_error(result, "Java is not installed", "apt-get install default-jre-headless")


def test_monitoring_without_prometheus_says_what_to_install_and_starts_nothing(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}  # no prometheus on this PATH
    result = replog("dev", "up", "--monitoring", "--data-dir", str(tmp_path / "c"), check=False, env=env)
    assert_user_error(result, "Prometheus is not installed", "apt-get install prometheus")
    assert not (tmp_path / "c").exists()


def test_a_directory_that_is_not_a_cluster_is_refused(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "precious.txt").write_text("not ours")
    result = replog("dev", "up", "--data-dir", str(tmp_path / "c"), check=False)
    assert_user_error(result, "not a replog local cluster")
    assert (tmp_path / "c" / "precious.txt").read_text() == "not ours"


@pytest.mark.parametrize(("flags", "fragments"), [
    (["--base-port", "-5"], ["--base-port -5 is not from 1 to", "0 for free ports"]),
    (["--base-port", "65530"], ["--base-port 65530 is not from 1 to"]),
    (["--zookeeper", "nohost"], ["--zookeeper 'nohost' is not HOST:PORT"]),
    (["--zookeeper", "127.0.0.1:x/chroot"], ["is not HOST:PORT", "numeric port"]),
    (["--zookeeper", "127.0.0.1:2181/a//b"], ["is not HOST:PORT[,HOST:PORT...][/chroot]",
                                               "the chroot /a//b has an empty name"]),
    (["--zookeeper", "127.0.0.1:1/replog"], ["no ZooKeeper answers at 127.0.0.1:1/replog", "nothing was created"]),
    (["--config", "foo"], ["--config takes key=value, got 'foo'"]),
    (["--brokers", "0"], ["--brokers 0: a local cluster has from 1 to 100 brokers"]),
    (["--controllers", "99999999999999999999"], ["--controllers 99999999999999999999: a local cluster has from 1 to"]),
    (["--zookeeper", "127.0.0.1:1"], ["no ZooKeeper answers at 127.0.0.1:1", "nothing was created"]),
])
def test_flags_that_cannot_make_a_cluster_are_refused_and_record_nothing(tmp_path, flags, fragments):
    result = replog("dev", "up", *flags, "--data-dir", str(tmp_path / "c"), check=False)
    assert_user_error(result, *fragments)
    assert not (tmp_path / "c" / "cluster.json").exists()  # a later `dev up` there is not bound to the mistake


def test_a_data_dir_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "c").write_text("not ours")
    result = replog("dev", "up", "--data-dir", str(tmp_path / "c"), check=False)
    assert_user_error(result, "is a file; choose a new or empty directory")
    assert (tmp_path / "c").read_text() == "not ours"


def test_a_cluster_json_of_something_else_is_refused(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "cluster.json").write_text('{"name": "some other tool"}')
    result = replog("dev", "status", "--data-dir", str(tmp_path / "c"), check=False)
    assert_user_error(result, "cluster.json is not a replog cluster file")


def test_a_second_up_on_a_running_cluster_is_refused_and_a_stopped_one_restarts(new_cluster):
    new_cluster.up("--brokers", "1", "--controllers", "1")
    result = new_cluster("dev", "up", "--brokers", "1", "--controllers", "1", check=False)
    assert_user_error(result, "already running")
    new_cluster("dev", "down")
    new_cluster.up("--brokers", "1", "--controllers", "1")
    assert all(b["alive"] for b in new_cluster.status()["brokers"])


def test_a_broker_refuses_a_log_dir_of_another_cluster(new_cluster, tmp_path):
    new_cluster.up("--brokers", "1", "--controllers", "1")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "meta.properties").write_text("version=0\nbroker.id=7\ncluster.id=someothercluster\n")
    zookeeper = new_cluster.status()["zookeeper"]["address"]
    result = subprocess.run(
        [sys.executable, "-m", "replog.broker", "--override", "broker.id=7",
         "--override", f"zookeeper.connect={zookeeper}", "--override", f"log.dirs={foreign}",
         "--override", "listeners=127.0.0.1:0"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 1
    assert "belongs to cluster someothercluster" in result.stderr
    assert "Traceback" not in result.stderr


def test_killing_an_unknown_member_is_a_clear_error(new_cluster):
    new_cluster.up("--brokers", "1", "--controllers", "1")
    result = new_cluster("dev", "kill", "broker", "9", check=False)
    assert_user_error(result, "there is no broker 9", "broker ids: 1")
    pid = new_cluster.status()["brokers"][0]["pid"]
    assert is_alive(pid, "replog.broker")
