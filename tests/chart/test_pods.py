"""The chart runs: its rendered pods (ZooKeeper, controllers, brokers, the metadata service) as real
containers of the image built from the Dockerfile, used through the metadata Service's name.

Needs podman (make setup installs it). Where the engine cannot run a container at all the module
is skipped with the reason.
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from replog.cli import roll
from replog.core.roll import ClusterView, Member, MemberKind, PartitionView
from tests.chart import images, pods
from tests.chart.chart import NAMESPACE, ROOT, env, render
from tests.integration.cluster import wait_for

START_S_MAX = 240
# A backstop: the first test to run includes building both images on a machine that has none
# (debootstrap, wheels, two builds; each step has a deadline of its own).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(2 * images.BUILD_S_MAX + START_S_MAX)]

NETWORK = "replog-chart-test"
DOMAIN = "cluster.local"
VALUES = {
    "image": {"repository": images.IMAGE.rsplit(":", 1)[0], "tag": images.IMAGE.rsplit(":", 1)[1],
              "pullPolicy": "Never"},
    "zookeeper": {"image": {"repository": images.ZOOKEEPER_IMAGE.rsplit(":", 1)[0],
                            "tag": images.ZOOKEEPER_IMAGE.rsplit(":", 1)[1], "pullPolicy": "Never"}},
    # One broker's own env: asyncio's event loop instead of uvloop's (its build info says which).
    "brokers": [{"id": 1}, {"id": 2}, {"id": 3, "env": [{"name": "REPLOG_EVENT_LOOP", "value": "asyncio"}]}],
}
CLIENT = "replog-client"
TESTS_MOUNT = "/opt/replog-tests"
SHARED_MOUNT = "/shared"
RECORDS = 10_000
PARTITIONS = 6
WHILE_DOWN = 100
ROLL_WAIT_S_MAX = 300
HEALTH_SCRIPT = """\
import sys, grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
def status(address, service):
    with grpc.insecure_channel(address) as channel:
        try:
            answer = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=1.0)
        except grpc.RpcError as error:
            return error.code().name
    return health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)
args = sys.argv[1:]
print(" ".join(status(a, s) for a, s in zip(args[::2], args[1::2])))
"""


@dataclass
class Cluster:
    deployment: pods.Deployment
    shared: Path  # the client pod's SHARED_MOUNT, seen from here
    build_s: float
    start_s: float = 0.0

    @property
    def client(self) -> pods.PodPlan:
        return self.deployment.pods[CLIENT]


def client_pod(test_pod: dict, shared: Path) -> dict:
    """A client beside the cluster: the chart's `helm test` pod, kept running for commands, with
    these tests mounted (the load generator) and a folder shared with the host."""
    pod = copy.deepcopy(test_pod)
    pod["metadata"] = {"name": CLIENT, "labels": {**pod["metadata"]["labels"], "app.kubernetes.io/component": "client"}}
    container = pod["spec"]["containers"][0]
    container["command"] = ["python", "-c", "import signal, time; signal.signal(signal.SIGTERM, lambda *_: exit(0)); "
                            "time.sleep(86400)"]
    container.pop("args")
    container["env"].append({"name": "PYTHONPATH", "value": TESTS_MOUNT})
    container["volumeMounts"] += [{"name": "tests", "mountPath": f"{TESTS_MOUNT}/tests", "readOnly": True},
                                  {"name": "shared", "mountPath": SHARED_MOUNT}]
    pod["spec"]["volumes"] += [{"name": "tests", "hostPath": {"path": str(ROOT / "tests"), "type": "Directory"}},
                               {"name": "shared", "hostPath": {"path": str(shared), "type": "Directory"}}]
    pod["spec"]["restartPolicy"] = "Always"
    return pod


def in_client(cluster: Cluster, *command: str, timeout_s: float = 300, check: bool = True):
    return pods.exec_in(cluster.client, *command, timeout_s=timeout_s, check=check)


def serving(cluster: Cluster, members: list[pods.PodPlan]) -> bool:
    """Whether each pod's gRPC health service says SERVING of the service its readiness probe
    names, asked from the client pod as the kubelet would ask (podman runs no probe)."""
    asked = []
    for pod in members:
        readiness = pod.probes["readinessProbe"]["grpc"]
        asked += [f"{pod.ip}:{readiness['port']}", readiness["service"]]
    result = in_client(cluster, "python", "-c", HEALTH_SCRIPT, *asked, check=False)
    return result.returncode == 0 and result.stdout.split() == ["SERVING"] * len(members)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    started = time.monotonic()
    problem = images.prepare()
    if problem:
        pytest.skip(f"the chart's pods cannot run here: {problem}")
    images.build_images()
    workdir = tmp_path_factory.mktemp("pods")
    shared = workdir / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    objects = render(VALUES)
    test_pod = render(VALUES, tests=True)[0]
    subnet = pods.create_network(NETWORK)
    deployment = pods.plan(objects + [test_pod, client_pod(test_pod, shared)], network=NETWORK, subnet=subnet,
                           namespace=NAMESPACE, domain=DOMAIN, workdir=workdir)
    running = Cluster(deployment, shared, build_s=time.monotonic() - started)
    remove(deployment)  # what a run that was killed may have left
    try:
        for component in ("zookeeper", "controller", "broker", "metadata", "client"):
            for pod in deployment.of_component(component):
                pods.play(deployment, pod)
        replog_pods = [p for p in deployment.pods.values() if p.component in ("controller", "broker", "metadata")]
        wait_for(lambda: serving(running, replog_pods), START_S_MAX, "every replog pod to serve", interval_s=0.5)
        running.start_s = time.monotonic() - started - running.build_s
        yield running
    except BaseException:
        for pod in deployment.pods.values():
            print(pods.logs(pod))
        raise
    finally:
        remove(deployment)
        images.podman("network", "rm", "-f", NETWORK, check=False)


def remove(deployment: pods.Deployment) -> None:
    """Every pod and volume of the deployment, at once (podman removes them in parallel)."""
    # Stopped first: `pod rm --force` alone waits seconds for each pod.
    images.podman("pod", "stop", "--ignore", "--time", "0", *deployment.pods, check=False)
    images.podman("pod", "rm", "--force", "--ignore", *deployment.pods, check=False)
    claims = [claim for pod in deployment.pods.values() for claim in pod.claims]
    images.podman("volume", "rm", "--force", *claims, check=False)


def test_the_image_runs_as_a_non_root_user_on_a_read_only_root_with_the_compiled_record_decoder(cluster):
    assert in_client(cluster, "id", "-u").stdout.strip() == "10001"
    assert in_client(cluster, "touch", "/opt/replog/written", check=False).returncode != 0
    in_client(cluster, "python", "-c", "import replog.protocol._records")
    size_mb = images.image_size_bytes(images.IMAGE) / 1e6
    print(f"image {images.IMAGE}: {size_mb:.0f} MB; images ready in {cluster.build_s:.0f} s; every replog pod "
          f"serving {cluster.start_s:.0f} s after that")
    assert size_mb < 400


BUILD_INFO_SCRIPT = """\
import sys, urllib.request
text = urllib.request.urlopen(f"http://{sys.argv[1]}/metrics", timeout=5).read().decode()
print(next(line for line in text.splitlines() if line.startswith("replog_build_info{")))
"""


def test_a_brokers_own_env_reaches_its_process_and_every_broker_keeps_freed_memory(cluster):
    loops = {}
    for pod in cluster.deployment.of_component("broker"):
        settings = env(pod.manifest["spec"]["containers"][0])
        address = f"{pod.ip}:{settings['REPLOG_METRICS_PORT']}"
        line = in_client(cluster, "python", "-c", BUILD_INFO_SCRIPT, address).stdout
        assert 'malloc="replog"' in line, line
        loops[settings["REPLOG_BROKER_ID"]] = line.split('event_loop="', 1)[1].split('"', 1)[0]
    assert loops == {"1": "uvloop", "2": "uvloop", "3": "asyncio"}


def test_the_helm_test_pod_produces_and_consumes_through_the_metadata_service(cluster):
    test = cluster.deployment.of_component("test")[0]
    pods.play(cluster.deployment, test)
    exit_code = wait_for(lambda: _exit_code(test.containers[0]), 180, "the helm test pod to finish", interval_s=0.5)
    output = pods.stop(test)
    assert exit_code == "0", output
    assert "produced and consumed 100 records with acks=all through replog-metadata" in output


def _exit_code(container: str) -> str | None:
    state = images.podman("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", container).stdout.split()
    return state[1] if state[0] == "exited" else None


@pytest.fixture(scope="module")
def orders(cluster) -> str:
    """A topic RF=3, min.insync.replicas=2, holding the values 1 to RECORDS written with acks=all
    through the metadata Service's name."""
    in_client(cluster, "replog", "topics", "create", "orders", "--partitions", str(PARTITIONS),
              "--replication-factor", "3", "--config", "min.insync.replicas=2")
    in_client(cluster, "sh", "-c", f"seq 1 {RECORDS} | replog produce orders --acks all")
    return "orders"


def test_ten_thousand_records_acks_all_through_the_metadata_service_all_consumed(cluster, orders):
    assert consumed_distinct(cluster, orders, RECORDS) == RECORDS


def consumed_distinct(cluster: Cluster, topic: str, records: int) -> int:
    """How many distinct values a consumer reads from the start, when it stops after `records`."""
    result = in_client(cluster, "sh", "-c", f"replog consume {topic} --from-beginning --max-messages {records} "
                       "--timeout-ms 30000 | sort -u | wc -l")
    return int(result.stdout.strip())


def test_a_deleted_broker_pod_comes_back_with_its_volume_and_nothing_is_lost(cluster, orders):
    platform = PodmanPlatform(cluster)
    broker = platform.brokers[2]
    pods.stop(broker)
    # Two of three replicas left: min.insync.replicas=2 still holds, so acks=all writes go on.
    in_client(cluster, "sh", "-c", f"seq {RECORDS + 1} {RECORDS + WHILE_DOWN} | replog produce {orders} --acks all")
    pods.play(cluster.deployment, broker)
    wait_for(lambda: serving(cluster, [broker]), START_S_MAX, "broker 2 to serve again", interval_s=0.5)
    wait_for(lambda: all(2 in p.isr for p in platform.observe().partitions), 120, "broker 2 back in every ISR",
             interval_s=0.5)
    assert consumed_distinct(cluster, orders, RECORDS + WHILE_DOWN) == RECORDS + WHILE_DOWN


class PodmanPlatform:
    """The roll's front end for podman pods: observes from the client pod, restarts by deleting a pod
    (SIGTERM, grace period) and playing it again with its volume, as a StatefulSet controller does."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.controllers = {i: p for i, p in enumerate(cluster.deployment.of_component("controller"), start=1)}
        self.brokers = {int(env(p.manifest["spec"]["containers"][0])["REPLOG_BROKER_ID"]): p
                        for p in cluster.deployment.of_component("broker")}
        self.last_words: dict[Member, str] = {}  # what each stopped member logged last

    def observe(self) -> ClusterView:
        seen = json.loads(in_client(self.cluster, "python", "-m", "tests.chart.observe", timeout_s=120).stdout)
        active_ip = (seen["controller_address"] or ":").rsplit(":", 1)[0]
        active = next((i for i, p in self.controllers.items() if p.ip == active_ip), None)
        partitions = tuple(PartitionView(p["topic"], p["partition"], tuple(p["replicas"]), tuple(p["isr"]),
                                         p["min_insync_replicas"]) for p in seen["partitions"])
        return ClusterView(tuple(self.controllers), active, tuple(sorted(self.brokers)), frozenset(seen["registered"]),
                           partitions)

    def _pod(self, member: Member) -> pods.PodPlan:
        return (self.controllers if member.kind is MemberKind.CONTROLLER else self.brokers)[member.id]

    def restart(self, member: Member) -> None:
        pod = self._pod(member)
        self.last_words[member] = pods.stop(pod)
        pods.play(self.cluster.deployment, pod)

    def serving(self, member: Member) -> bool:
        return serving(self.cluster, [self._pod(member)])


def test_the_roller_restarts_every_pod_under_acks_all_load_with_no_error_and_nothing_lost(cluster):
    in_client(cluster, "replog", "topics", "create", "rolled", "--partitions", str(PARTITIONS),
              "--replication-factor", "3", "--config", "min.insync.replicas=2")
    # The load runs in the client pod until the stop file appears, then writes its outcome.
    images.podman("exec", "-d", cluster.client.containers[0], "sh", "-c",
                  f"cd {SHARED_MOUNT} && python -m tests.chart.load \"$REPLOG_BOOTSTRAP\" rolled {PARTITIONS} stop "
                  "> outcome.part 2> load.log && mv outcome.part outcome.json")
    stop_file, outcome_file, load_log = (cluster.shared / name for name in ("stop", "outcome.json", "load.log"))
    platform = PodmanPlatform(cluster)
    started = time.monotonic()
    said = []
    try:
        restarted = roll.roll(platform, dry_run=False, wait_s_max=ROLL_WAIT_S_MAX,
                              say=lambda line: said.append(f"[{time.monotonic() - started:6.1f} s] {line}"))
    finally:
        stop_file.touch()
    roll_s = time.monotonic() - started
    wait_for(outcome_file.exists, 300, "the load's outcome", interval_s=0.5)
    outcome = json.loads(outcome_file.read_text())
    print("\n".join(said), f"\nroll took {roll_s:.0f} s; load: {outcome}")
    assert [str(m) for m in restarted][-3:] == ["broker 1", "broker 2", "broker 3"]
    assert len(restarted) == 5
    for member, words in platform.last_words.items():
        if member.kind is MemberKind.BROKER:  # it stopped on SIGTERM with the controller still in reach
            assert "controlled shutdown moved its leaderships" in words, words
    assert outcome["sent"] > 1000
    assert (outcome["acknowledged"], outcome["failed"], outcome["unanswered"], outcome["lost"]) == (
        outcome["sent"], {}, 0, 0), load_log.read_text() if load_log.exists() else outcome
