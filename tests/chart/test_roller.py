"""The roll loop and the Kubernetes front end, against a cluster that is scripted, not run."""

from types import SimpleNamespace

from replog.cli import roll
from replog.cli.k8s import KubernetesPlatform, fullname
from replog.core.roll import ClusterView, Member, MemberKind, PartitionView

BROKER = MemberKind.BROKER


class ScriptedCluster:
    """Three brokers, one partition at RF 3 / min ISR 2 whose follower 3 lags until `catch_up_after` looks."""

    def __init__(self, catch_up_after: int) -> None:
        self.looks = 0
        self.catch_up_after = catch_up_after
        self.stopped: list[Member] = []

    def observe(self) -> ClusterView:
        self.looks += 1
        isr = (1, 2, 3) if self.looks > self.catch_up_after else (1, 2)
        partition = PartitionView("orders", 0, (1, 2, 3), isr, 2)
        return ClusterView((1, 2), 2, (1, 2, 3), frozenset({1, 2, 3}), (partition,))

    def restart(self, member: Member) -> None:
        self.stopped.append(member)

    def serving(self, member: Member) -> bool:
        return True


def test_the_roll_waits_while_a_partition_is_at_its_minimum_and_says_which():
    cluster = ScriptedCluster(catch_up_after=6)  # the plan and both controllers take 5 looks
    said = []
    restarted = roll.roll(cluster, dry_run=False, say=said.append, poll_interval_s=0)
    assert [str(m) for m in restarted] == ["controller 1", "controller 2", "broker 1", "broker 2", "broker 3"]
    assert cluster.stopped == restarted
    waits = [line for line in said if line.startswith("Waiting")]
    assert waits and "orders-0 (ISR 1,2, min.insync.replicas=2)" in waits[0]
    # Broker 1 was held until broker 3 was back in the ISR.
    assert said.index("Restarting broker 1") > said.index(waits[-1]) > said.index("Restarting controller 2")


def test_a_dry_run_prints_the_plan_and_what_would_wait_and_restarts_nothing():
    cluster = ScriptedCluster(catch_up_after=10**6)
    said = []
    assert roll.roll(cluster, dry_run=True, say=said.append) == []
    assert said[0] == "Plan: controller 1, controller 2 (active), broker 1, broker 2, broker 3"
    assert "broker 1: would wait: stopping it would leave partitions below min.insync.replicas (orders-0)" in said
    assert "broker 3: may restart now" in said and cluster.stopped == []


def test_a_hold_that_never_clears_ends_the_roll_with_the_reason():
    cluster = ScriptedCluster(catch_up_after=10**6)
    cluster.observe = lambda: ClusterView((), None, (1, 2), frozenset({1, 2}),
                                          (PartitionView("orders", 0, (1, 2, 3), (1, 2), 2),))
    try:
        roll.roll(cluster, dry_run=False, wait_s_max=0, say=lambda line: None, poll_interval_s=0)
    except roll.RollError as error:
        assert "orders-0" in str(error) and "gave up" in str(error)
    else:
        raise AssertionError("the roll went on past a partition at its minimum")


def pod(name, component, ip, uid, ready=True, broker_id=None):
    labels = {"app.kubernetes.io/component": component}
    if broker_id is not None:
        labels["replog.io/broker-id"] = str(broker_id)
    condition = SimpleNamespace(type="Ready", status="True" if ready else "False")
    return SimpleNamespace(metadata=SimpleNamespace(name=name, labels=labels, uid=uid, deletion_timestamp=None),
                           status=SimpleNamespace(pod_ip=ip, conditions=[condition]))


class TooManyRequests(Exception):
    status = 429


class FakeCoreApi:
    def __init__(self, pods):
        self.pods = pods
        self.evictions = []
        self.refusals = 1  # the PodDisruptionBudget says "not now" once

    def list_namespaced_pod(self, namespace, label_selector):
        component = label_selector.rsplit("=", 1)[1]
        return SimpleNamespace(items=[p for p in self.pods if p.metadata.labels["app.kubernetes.io/component"] == component])

    def create_namespaced_pod_eviction(self, name, namespace, body):
        if self.refusals:
            self.refusals -= 1
            raise TooManyRequests()
        self.evictions.append(name)


class FakeAdmin:
    def __init__(self, controller_address):
        self.controller_address = controller_address

    def cluster(self):
        return SimpleNamespace(controller_address=self.controller_address, topics={}, brokers={1: "", 2: ""})


def platform(api, controller_address="10.0.0.6:9093"):
    return KubernetesPlatform(api, TooManyRequests, "streaming", "replog", FakeAdmin(controller_address),
                              lambda metadata: metadata)


def test_kubernetes_finds_the_active_controller_by_the_address_it_registered():
    api = FakeCoreApi([pod("replog-controller-a", "controller", "10.0.0.5", "u1"),
                       pod("replog-controller-b", "controller", "10.0.0.6", "u2"),
                       pod("replog-broker-1-0", "broker", "10.0.0.7", "u3", broker_id=1),
                       pod("replog-broker-2-0", "broker", "10.0.0.8", "u4", broker_id=2)])
    view = platform(api).observe()
    assert (view.controllers, view.active_controller, view.brokers) == ((1, 2), 2, (1, 2))
    assert [str(m) for m in roll.roll_order(view)] == ["controller 1", "controller 2", "broker 1", "broker 2"]


def test_kubernetes_evicts_through_the_disruption_budget_and_waits_for_the_new_pod_to_be_ready():
    broker = pod("replog-broker-1-0", "broker", "10.0.0.7", "old", broker_id=1)
    api = FakeCoreApi([broker])
    front = platform(api)
    member = Member(BROKER, 1)
    front.restart(member)
    assert api.evictions == ["replog-broker-1-0"]
    assert not front.serving(member)  # the old pod is still there
    api.pods = []
    assert not front.serving(member)  # gone, its replacement not there yet
    api.pods = [pod("replog-broker-1-0", "broker", "10.0.0.9", "new", ready=False, broker_id=1)]
    assert not front.serving(member)
    api.pods = [pod("replog-broker-1-0", "broker", "10.0.0.9", "new", broker_id=1)]
    assert front.serving(member)


def test_the_release_name_maps_to_the_charts_object_names():
    assert (fullname("replog"), fullname("prod"), fullname("replog-prod")) == ("replog", "prod-replog", "replog-prod")


def test_a_controller_is_back_once_its_deployment_has_a_ready_replacement_under_a_new_name():
    api = FakeCoreApi([pod("replog-controller-a", "controller", "10.0.0.5", "u1"),
                       pod("replog-controller-b", "controller", "10.0.0.6", "u2")])
    front = platform(api)
    front.observe()
    front.restart(Member(MemberKind.CONTROLLER, 1))
    api.pods = [api.pods[1]]
    assert not front.serving(Member(MemberKind.CONTROLLER, 1))  # one of two: the replacement is not there
    api.pods.append(pod("replog-controller-c", "controller", "10.0.0.9", "u3"))
    assert front.serving(Member(MemberKind.CONTROLLER, 1))
    assert front.observe().controllers == (2, 3)


def test_the_rack_init_container_writes_the_nodes_zone_as_broker_rack(tmp_path, monkeypatch, capsys):
    from replog.cli import k8s
    from replog.cli.main import main

    node = SimpleNamespace(metadata=SimpleNamespace(labels={"topology.kubernetes.io/zone": "eu-west-1b"}))
    api = SimpleNamespace(read_node=lambda name: node if name == "node-7" else None)
    monkeypatch.setattr(k8s, "_client", lambda: SimpleNamespace(client=SimpleNamespace(CoreV1Api=lambda: api)))
    output = tmp_path / "broker.properties"
    assert main(["k8s", "rack", "--node", "node-7", "--output", str(output)]) == 0
    assert output.read_text() == "broker.rack=eu-west-1b\n"
    monkeypatch.delenv("NODE_NAME", raising=False)
    assert main(["k8s", "rack", "--node", "", "--output", str(output)]) == 1
    assert "pass --node or set NODE_NAME" in capsys.readouterr().err
