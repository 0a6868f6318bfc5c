"""A real local cluster: ZooKeeper, 3 brokers, 2 controllers, a metadata service."""

import json
import os
import re
import subprocess
import urllib.request

import grpc
import pytest
from kazoo.client import KazooClient

from replog.api.metadata.v1 import metadata_pb2, metadata_pb2_grpc
from replog.dev import zookeeper
from replog.dev.processes import free_port, health_status, is_alive, scrape_metric
from tests.integration.cluster import wait_for

pytestmark = pytest.mark.slow

SESSION_TIMEOUT_S = 6.0  # replog dev's zookeeper.session.timeout.ms


def metadata(cluster) -> metadata_pb2.MetadataResponse:
    address = cluster.status()["metadata"][0]["address"]
    with grpc.insecure_channel(address) as channel:
        return metadata_pb2_grpc.MetadataServiceStub(channel).Metadata(metadata_pb2.MetadataRequest(), timeout=5)


def test_every_process_is_up_serving_and_measured(cluster):
    report = cluster.status()
    assert report["zookeeper"]["alive"]
    assert [b["id"] for b in report["brokers"] if b["alive"]] == [1, 2, 3]
    assert all(c["alive"] for c in report["controllers"]) and len(report["controllers"]) == 2
    assert len(cluster.active_controllers()) == 1
    assert all(m["alive"] for m in report["metadata"])
    # The harness reads the status in-process; the command prints the same.
    assert json.loads(cluster("dev", "status", "--json").stdout) == report

    state = cluster.state()
    for kind in ("brokers", "controllers", "metadata"):
        for member in state[kind]:
            assert health_status(member["address"]) == "SERVING", member
            assert scrape_metric(member["metrics_address"], "process_cpu_seconds_total") is not None, member


def test_metadata_service_lists_the_registered_brokers_and_the_controller(cluster):
    response = metadata(cluster)
    state = cluster.state()
    assert sorted(b.broker_id for b in response.brokers) == [1, 2, 3]
    addresses = {b.broker_id: f"{b.host}:{b.port}" for b in response.brokers}
    assert addresses == {b["id"]: b["address"] for b in state["brokers"]}
    assert response.cluster_id
    assert response.controller_id == cluster.active_controllers()[0]
    assert f"{response.controller.host}:{response.controller.port}" == next(
        c["address"] for c in state["controllers"] if c["id"] == response.controller_id
    )


def test_broker_death_is_seen_by_the_metadata_service_and_a_restart_registers_again(cluster):
    cluster("dev", "kill", "broker", "2", "--signal", "KILL")
    wait_for(lambda: 2 not in [b.broker_id for b in metadata(cluster).brokers],
             SESSION_TIMEOUT_S + 5, "broker 2's registration to expire")
    cluster("dev", "start", "broker", "2")
    wait_for(lambda: 2 in [b.broker_id for b in metadata(cluster).brokers], 10, "broker 2 to register again")
    assert "registered at" in cluster.log_text("broker", 2)


def test_sigkill_of_the_active_controller_elects_another_within_the_session_timeout(cluster):
    import time

    (old,) = cluster.active_controllers()
    cluster("dev", "kill", "controller", str(old), "--signal", "KILL")
    started = time.monotonic()
    (new,) = wait_for(cluster.active_controllers, SESSION_TIMEOUT_S + 5, "another controller to become active")
    elapsed_s = time.monotonic() - started
    print(f"controller failover after SIGKILL: {elapsed_s:.2f} s (session timeout {SESSION_TIMEOUT_S:g} s)")
    assert new != old
    assert elapsed_s <= SESSION_TIMEOUT_S + 5
    assert metadata(cluster).controller_id == new

    cluster("dev", "start", "controller", str(old))
    assert cluster.active_controllers() == [new], "a restarted controller must not take over"


def test_a_paused_controller_finds_it_lost_and_stands_down(cluster):
    (old,) = cluster.active_controllers()
    old_address = cluster.metrics_address("controller", old)
    cluster("dev", "kill", "controller", str(old), "--signal", "STOP")
    try:
        (new,) = wait_for(cluster.active_controllers, SESSION_TIMEOUT_S + 10, "a new active controller")
        assert new != old
    finally:
        cluster("dev", "kill", "controller", str(old), "--signal", "CONT")
    # Resumed, the old controller learns its session expired and resigns rather than acting.
    wait_for(lambda: "lost its ZooKeeper session; resigning" in cluster.log_text("controller", old),
             10, "the old controller to notice it lost")
    assert scrape_metric(old_address, "replog_active_controller_count") == 0.0
    assert cluster.active_controllers() == [new]
    assert metadata(cluster).controller_id == new


@pytest.mark.parametrize("kill", [False, True], ids=["stopped", "killed"])
def test_down_leaves_no_process_behind(new_cluster, kill):
    new_cluster.up("--brokers", "1", "--controllers", "1")
    pids = new_cluster.pids()
    assert len(pids) == 4
    new_cluster("dev", "kill", "broker", "1", "--signal", "STOP")  # a paused one must go too
    said = new_cluster("dev", "down", *(["--kill"] if kill else [])).stdout
    for pid in pids:
        assert not is_alive(pid, ""), f"pid {pid} is still running after dev down"
    # SIGTERM lets the broker stop as it should; --kill gives it no chance to.
    assert ("killed" in said, "stopping on SIGTERM" in new_cluster.log_text("broker", 1)) == (kill, not kill)
    report = new_cluster.status()
    assert not report["zookeeper"]["alive"]
    assert not any(m["alive"] for kind in ("brokers", "controllers", "metadata") for m in report[kind])


@pytest.fixture
def plain_zookeeper(tmp_path):
    """A ZooKeeper started as an operator would, with ZooKeeper's own defaults: of the four-letter words it
    answers only `srvr`."""
    port = free_port("127.0.0.1")
    (tmp_path / "zk-data").mkdir()
    config = tmp_path / "zoo.cfg"
    config.write_text(f"tickTime=2000\ndataDir={tmp_path / 'zk-data'}\nclientPort={port}\n"
                      "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n")
    process = subprocess.Popen([zookeeper.check_installed(), "-cp", zookeeper.ZOOKEEPER_JAR, zookeeper.MAIN_CLASS,
                                str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: zookeeper.is_ready("127.0.0.1", port), 30, "the operator's ZooKeeper to serve")
        yield f"127.0.0.1:{port}"
    finally:
        process.kill()
        process.wait(10)


def test_up_on_an_operators_zookeeper_runs_under_its_chroot_there_and_down_leaves_it_running(new_cluster,
                                                                                           plain_zookeeper):
    connect = f"{plain_zookeeper}/team-a/replog"
    new_cluster.up("--brokers", "1", "--controllers", "1", "--zookeeper", connect)
    report = new_cluster.status()
    assert report["zookeeper"] == {"address": connect, "pid": None, "alive": True}
    assert all(m["alive"] for kind in ("brokers", "controllers", "metadata") for m in report[kind])
    client = KazooClient(hosts=plain_zookeeper)
    client.start(10)
    try:
        assert client.get_children("/team-a/replog/brokers/ids") == ["1"]
        assert sorted(client.get_children("/")) == ["team-a", "zookeeper"]  # nothing of it outside its chroot
    finally:
        client.stop()
    new_cluster("dev", "down")
    report = new_cluster.status()
    assert not any(m["alive"] for kind in ("brokers", "controllers", "metadata") for m in report[kind])
    assert report["zookeeper"]["alive"]  # the operator's, untouched


def documented_metrics(section: str) -> list[str]:
    """The metric names in the first column of one section's table in docs/METRICS.md."""
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "METRICS.md"), encoding="utf-8") as doc:
        text = doc.read()
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(replog_\w+)` \|", body, flags=re.MULTILINE)


def exported_metrics(metrics_address: str) -> set[str]:
    with urllib.request.urlopen(f"http://{metrics_address}/metrics", timeout=5) as response:
        text = response.read().decode()
    return set(re.findall(r"^# TYPE (\w+) ", text, flags=re.MULTILINE))


def test_every_documented_metric_is_served(cluster):
    broker = exported_metrics(cluster.metrics_address("broker", 1))
    (active,) = cluster.active_controllers()
    controller = exported_metrics(cluster.metrics_address("controller", active))
    for section, served in (("Every service", broker & controller), ("Broker", broker), ("Controller", controller)):
        names = documented_metrics(section)
        assert names, f"docs/METRICS.md has no table under {section!r}"
        missing = [name for name in names if name not in served and name.removesuffix("_total") not in served]
        assert missing == [], f"{section}: documented but not served: {missing}"


def test_services_keep_freed_memory_for_their_next_messages(cluster):
    """Every service runs with replog's malloc settings (replog/rpc/allocator.py) and says so."""
    from replog.rpc import allocator

    for kind, member in (("broker", 1), ("metadata", 1)):
        with urllib.request.urlopen(f"http://{cluster.metrics_address(kind, member)}/metrics", timeout=5) as answer:
            text = answer.read().decode()
        (line,) = [line for line in text.splitlines() if line.startswith("replog_build_info{")]
        assert 'malloc="replog"' in line, line
    assert allocator.describe(allocator.KEPT) in cluster.log_text("broker", 1)
