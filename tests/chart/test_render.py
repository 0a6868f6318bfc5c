"""The chart as a reviewer reads it: rendered by Helm's own engine for the value sets operators use,
linted strictly, every object valid for Kubernetes 1.30 to 1.34, and bad values refused in words."""

from __future__ import annotations

import shlex

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from tests.chart.chart import CHART, NAMESPACE, container, env, named, notes, of_kind, refusal, render

KUBERNETES_VERSIONS = ("1.30.0", "1.31.0", "1.32.0", "1.33.0", "1.34.0")
# Prometheus Operator's and cert-manager's kinds are CRDs: no Kubernetes schema knows them.
CUSTOM_KINDS = {"ServiceMonitor": "monitoring.coreos.com/v1", "PodMonitor": "monitoring.coreos.com/v1",
                "PrometheusRule": "monitoring.coreos.com/v1", "Certificate": "cert-manager.io/v1"}
SECURE = {"tls": {"enabled": True, "certManager": {"enabled": True, "issuerRef": {"name": "ca-issuer"}}},
          "authorizer": {"enabled": True}, "zookeeper": {"auth": {"existingSecret": "zookeeper-digest"}},
          "topics": [{"name": "orders", "partitions": 3, "replicationFactor": 3}]}

FIVE_BROKERS = {
    "brokers": [
        {"id": 1, "rack": "zone-a"},
        {"id": 2, "rack": "zone-b", "storage": {"size": "500Gi", "storageClass": "fast-ssd"}},
        {"id": 3, "rack": "zone-c", "resources": {"requests": {"cpu": "4", "memory": "16Gi"}}},
        {"id": 7, "nodeSelector": {"node-pool": "big"},
         "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "replog", "effect": "NoSchedule"}]},
        {"id": 9, "config": {"replica.fetch.max.bytes": "4194304"}},
    ],
    "topics": [{"name": "orders", "partitions": 12, "replicationFactor": 3,
                "config": {"min.insync.replicas": "2", "retention.ms": "86400000"}}],
}
VALUE_SETS = {
    "default": {},
    "one broker": {"brokers": [{"id": 1}]},
    "five brokers with overrides": FIVE_BROKERS,
    "external ZooKeeper": {"zookeeper": {"enabled": False, "external": {"connect": "zk-0.zk:2181,zk-1.zk:2181/replog"}}},
    "persistence off": {"broker": {"storage": {"persistent": False}}, "zookeeper": {"storage": {"persistent": False}}},
    "metrics on": {"metrics": {"serviceMonitor": {"enabled": True}, "podMonitor": {"enabled": True},
                               "prometheusRule": {"enabled": True}, "dashboards": {"enabled": True}}},
    "rack awareness and autoscaling": {"rackAwareness": {"enabled": True},
                                       "metadata": {"autoscaling": {"enabled": True}}},
    "closed network": {"networkPolicy": {"allowExternal": False}},
    "mTLS, ACLs and ZooKeeper credentials": SECURE,
    "extra environment": {"broker": {"env": [{"name": "GLIBC_TUNABLES", "value": "glibc.malloc.perturb=0"}]},
                          "controller": {"env": [{"name": "REPLOG_EVENT_LOOP", "value": "asyncio"}]},
                          "metadata": {"env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]}},
}


def brokers_of(objects):
    return [s for s in of_kind(objects, "StatefulSet") if s["metadata"]["labels"]["app.kubernetes.io/component"] == "broker"]


@pytest.mark.parametrize("values", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_every_object_is_valid_for_kubernetes_1_30_to_1_34(values):
    objects = render(values) + render(values, tests=True)
    problems = []
    for version in KUBERNETES_VERSIONS:
        for obj in objects:
            if obj["kind"] in CUSTOM_KINDS:
                assert obj["apiVersion"] == CUSTOM_KINDS[obj["kind"]]
                continue
            try:
                kubernetes_validate.validate(obj, version, strict=True)
            except kubernetes_validate.ValidationError as error:
                problems.append(f"{version} {obj['kind']}/{obj['metadata']['name']}: {error.message}")
    assert problems == []


@pytest.mark.parametrize("values", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_helm_lint_strict_is_clean(values):
    report = helm.lint(str(CHART), values, strict=True, namespace=NAMESPACE)
    warnings = [m for m in report["messages"] if m["severity"] >= 2]
    assert (report["errors"], warnings) == ([], [])


@pytest.mark.parametrize("values, ids", [({}, [1, 2, 3]), ({"brokers": [{"id": 1}]}, [1]),
                                         (FIVE_BROKERS, [1, 2, 3, 7, 9])])
def test_one_statefulset_of_one_pod_per_broker_each_with_its_own_volume(values, ids):
    statefulsets = brokers_of(render(values))
    assert [s["metadata"]["name"] for s in statefulsets] == [f"replog-broker-{i}" for i in ids]
    for broker_id, sts in zip(ids, statefulsets):
        spec = sts["spec"]
        assert spec["replicas"] == 1
        assert spec["updateStrategy"] == {"type": "OnDelete"}
        assert spec["serviceName"] == "replog-broker"
        assert [t["metadata"]["name"] for t in spec["volumeClaimTemplates"]] == ["data"]
        variables = env(container(sts))
        assert variables["REPLOG_BROKER_ID"] == str(broker_id)
        assert variables["REPLOG_ADVERTISED_LISTENERS"] == (
            f"replog-broker-{broker_id}-0.replog-broker.{NAMESPACE}.svc.cluster.local:9092")


def test_each_broker_takes_its_own_overrides_and_the_defaults_for_the_rest():
    statefulsets = {s["metadata"]["labels"]["replog.io/broker-id"]: s for s in brokers_of(render(FIVE_BROKERS))}
    claim = statefulsets["2"]["spec"]["volumeClaimTemplates"][0]["spec"]
    assert (claim["storageClassName"], claim["resources"]["requests"]["storage"]) == ("fast-ssd", "500Gi")
    default_claim = statefulsets["1"]["spec"]["volumeClaimTemplates"][0]["spec"]
    assert "storageClassName" not in default_claim and default_claim["resources"]["requests"]["storage"] == "20Gi"
    # Its own requests replace broker.resources whole: 16Gi under the default 2Gi limit is refused by Kubernetes.
    assert container(statefulsets["3"])["resources"] == {"requests": {"cpu": "4", "memory": "16Gi"}}
    assert container(statefulsets["1"])["resources"]["requests"] == {"cpu": "500m", "memory": "1Gi"}
    pod_7 = statefulsets["7"]["spec"]["template"]["spec"]
    assert pod_7["nodeSelector"] == {"node-pool": "big"} and pod_7["tolerations"][0]["key"] == "dedicated"
    assert env(container(statefulsets["1"]))["REPLOG_BROKER_RACK"] == "zone-a"
    assert "REPLOG_BROKER_RACK" not in env(container(statefulsets["9"]))
    assert env(container(statefulsets["9"]))["REPLOG_REPLICA_FETCH_MAX_BYTES"] == "4194304"


def test_probes_ask_the_grpc_health_service_and_readiness_means_registered_and_serving():
    objects = render()
    for workload, port, service in [
            (named(objects, "StatefulSet", "replog-broker-1"), 9092, "replog.api.broker.v1.BrokerService"),
            (named(objects, "Deployment", "replog-controller"), 9093, "replog.api.controller.v1.ControllerService"),
            (named(objects, "Deployment", "replog-metadata"), 9094, "replog.api.metadata.v1.MetadataService")]:
        spec = container(workload)
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            # The named service: it turns SERVING only once the process has started (a broker:
            # registered in ZooKeeper).
            assert spec[probe]["grpc"] == {"port": port, "service": service}, (workload["metadata"]["name"], probe)
    broker_startup = container(named(objects, "StatefulSet", "replog-broker-1"))["startupProbe"]
    # Log recovery after an unclean stop may take long: twenty minutes before the kubelet gives up.
    assert broker_startup["periodSeconds"] * broker_startup["failureThreshold"] >= 1200


def test_pods_run_as_non_root_on_a_read_only_root_with_no_capabilities():
    for workload in of_kind(render(), "StatefulSet") + of_kind(render(), "Deployment"):
        pod = workload["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        for spec in pod["containers"]:
            assert spec["securityContext"]["readOnlyRootFilesystem"] is True
            assert spec["securityContext"]["capabilities"] == {"drop": ["ALL"]}
            assert spec["securityContext"]["allowPrivilegeEscalation"] is False
            assert "/tmp" in [m["mountPath"] for m in spec["volumeMounts"]]


def test_a_broker_has_time_for_a_controlled_shutdown_and_spreads_over_nodes_and_zones():
    pod = named(render(), "StatefulSet", "replog-broker-1")["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] >= 60
    assert container(named(render(), "StatefulSet", "replog-broker-1"))["command"] == ["python", "-m", "replog.broker"]
    term = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert pod["topologySpreadConstraints"][0]["topologyKey"] == "topology.kubernetes.io/zone"
    hard = named(render({"broker": {"podAntiAffinity": "hard"}}), "StatefulSet", "replog-broker-1")
    assert "requiredDuringSchedulingIgnoredDuringExecution" in hard["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]


def test_rack_awareness_reads_the_node_zone_unless_a_broker_names_its_rack():
    objects = render({"rackAwareness": {"enabled": True}, "brokers": [{"id": 1}, {"id": 2, "rack": "zone-b"}]})
    zoned = named(objects, "StatefulSet", "replog-broker-1")["spec"]["template"]["spec"]
    assert zoned["initContainers"][0]["command"][:3] == ["replog", "k8s", "rack"]
    assert "topology.kubernetes.io/zone" in zoned["initContainers"][0]["command"]
    assert zoned["containers"][0]["args"] == ["/var/run/replog/broker.properties"]
    named_rack = named(objects, "StatefulSet", "replog-broker-2")["spec"]["template"]["spec"]
    assert "initContainers" not in named_rack
    assert named(objects, "ClusterRole", f"replog-{NAMESPACE}-rack")["rules"][0]["resources"] == ["nodes"]


def test_the_headless_service_publishes_brokers_before_they_are_ready():
    service = named(render(), "Service", "replog-broker")
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["publishNotReadyAddresses"] is True


def test_clients_bootstrap_from_the_metadata_service_of_two_or_more_replicas():
    objects = render()
    assert named(objects, "Service", "replog-metadata")["spec"]["ports"][0]["port"] == 9094
    assert named(objects, "Deployment", "replog-metadata")["spec"]["replicas"] == 2
    scaled = render({"metadata": {"autoscaling": {"enabled": True}}})
    assert "replicas" not in named(scaled, "Deployment", "replog-metadata")["spec"]
    assert named(scaled, "HorizontalPodAutoscaler", "replog-metadata")["spec"]["minReplicas"] == 2


def test_controllers_are_a_deployment_of_two_listening_on_their_pod_address():
    controller = named(render(), "Deployment", "replog-controller")
    assert controller["spec"]["replicas"] == 2
    variables = env(container(controller))
    assert variables["POD_IP"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert variables["REPLOG_LISTENERS"] == "$(POD_IP):9093"
    assert container(controller)["args"][0].startswith("exec python -m replog.controller")


def test_one_disruption_budget_over_the_brokers_and_one_over_zookeeper():
    budgets = {b["metadata"]["name"]: b["spec"] for b in of_kind(render(), "PodDisruptionBudget")}
    assert budgets["replog-broker"]["maxUnavailable"] == 1
    assert budgets["replog-broker"]["selector"]["matchLabels"]["app.kubernetes.io/component"] == "broker"
    assert budgets["replog-zookeeper"]["maxUnavailable"] == 1


def test_zookeeper_is_three_nodes_in_the_chart_or_the_external_ensemble():
    objects = render()
    zookeeper = named(objects, "StatefulSet", "replog-zookeeper")
    assert zookeeper["spec"]["replicas"] == 3
    connect = env(container(named(objects, "StatefulSet", "replog-broker-1")))["REPLOG_ZOOKEEPER_CONNECT"]
    assert connect.count(f".replog-zookeeper-headless.{NAMESPACE}.svc.cluster.local:2181") == 3
    external = render(VALUE_SETS["external ZooKeeper"])
    assert not [s for s in of_kind(external, "StatefulSet") if "zookeeper" in s["metadata"]["name"]]
    for workload in brokers_of(external) + of_kind(external, "Deployment"):
        assert env(container(workload))["REPLOG_ZOOKEEPER_CONNECT"] == "zk-0.zk:2181,zk-1.zk:2181/replog"


def test_persistence_off_keeps_data_in_an_empty_dir():
    for sts in of_kind(render(VALUE_SETS["persistence off"]), "StatefulSet"):
        assert "volumeClaimTemplates" not in sts["spec"]
        volumes = {v["name"]: v for v in sts["spec"]["template"]["spec"]["volumes"]}
        assert volumes["data"] == {"name": "data", "emptyDir": {}}


def test_metrics_switches_add_the_monitors_rules_and_dashboards_and_are_off_by_default():
    kinds = {o["kind"] for o in render()}
    assert not kinds & set(CUSTOM_KINDS)
    objects = render(VALUE_SETS["metrics on"])
    assert {o["kind"] for o in objects} >= {"ServiceMonitor", "PodMonitor", "PrometheusRule"}
    assert named(objects, "PodMonitor", "replog")["spec"]["podMetricsEndpoints"][0]["port"] == "metrics"
    # Every alert rule and every dashboard that replog/monitoring generates, as generated.
    rules = yaml.safe_load((CHART / "rules" / "replog.rules.yaml").read_text())
    assert rules["groups"] and named(objects, "PrometheusRule", "replog")["spec"] == rules
    dashboards = {path.name: path.read_text() for path in (CHART / "dashboards").glob("*.json")}
    shipped = {key: text for cm in of_kind(objects, "ConfigMap") for key, text in cm.get("data", {}).items()}
    assert dashboards and shipped == dashboards


def test_network_policies_open_each_service_port_and_metrics_only_to_prometheus():
    policies = {p["metadata"]["name"]: p["spec"] for p in of_kind(render(), "NetworkPolicy")}
    assert set(policies) == {"replog-broker", "replog-controller", "replog-metadata", "replog-zookeeper"}
    broker_ports = [rule["ports"][0]["port"] for rule in policies["replog-broker"]["ingress"]]
    assert broker_ports == [9092, 9404]
    assert policies["replog-broker"]["ingress"][1]["from"][0]["podSelector"]["matchLabels"] == {
        "app.kubernetes.io/name": "prometheus"}
    closed = {p["metadata"]["name"]: p["spec"] for p in of_kind(render(VALUE_SETS["closed network"]), "NetworkPolicy")}
    allowed = closed["replog-metadata"]["ingress"][0]["from"]
    assert {"podSelector": {"matchLabels": {"replog-client": "true"}}} in allowed


def test_declared_topics_are_created_by_an_idempotent_hook_job():
    job = named(render(FIVE_BROKERS), "Job", "replog-topics")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "post-install,post-upgrade"
    script = container(job)["args"][0]
    assert ("replog topics create 'orders' --if-not-exists --partitions 12 --replication-factor 3 "
            "--config 'min.insync.replicas=2' --config 'retention.ms=86400000'") in script
    assert not of_kind(render(), "Job")


def test_numbers_in_a_values_file_reach_the_services_as_written():
    # A values file's numbers reach the templates as float64, which Go prints as 6.048e+08.
    objects = render({"brokers": [{"id": 1000000}], "config": {"log.retention.ms": 604800000},
                      "topics": [{"name": "orders", "replicationFactor": 1, "config": {"retention.ms": 86400000}}]})
    broker = named(objects, "StatefulSet", "replog-broker-1000000")
    assert broker["metadata"]["labels"]["replog.io/broker-id"] == "1000000"
    variables = env(container(broker))
    assert (variables["REPLOG_BROKER_ID"], variables["REPLOG_LOG_RETENTION_MS"]) == ("1000000", "604800000")
    assert "--config 'retention.ms=86400000'" in container(named(objects, "Job", "replog-topics"))["args"][0]


def test_each_topic_setting_reaches_the_shell_as_one_word():
    job = named(render({"topics": [{"name": "orders", "config": {"cleanup.policy": "it's"}}]}), "Job", "replog-topics")
    line = container(job)["args"][0].strip()
    assert shlex.split(line) == ["replog", "topics", "create", "orders", "--if-not-exists",
                                 "--config", "cleanup.policy=it's"]


def test_helm_test_produces_and_consumes_with_acks_all_through_the_metadata_service():
    pod = named(render(tests=True), "Pod", "replog-test-produce-consume")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    script = pod["spec"]["containers"][0]["args"][0]
    assert "--acks all" in script and "replog consume" in script
    assert env(pod["spec"]["containers"][0])["REPLOG_BOOTSTRAP"] == f"replog-metadata.{NAMESPACE}.svc.cluster.local:9094"


def test_notes_tell_how_to_reach_the_metadata_service_and_a_first_produce_and_consume():
    text = notes()
    assert f"replog-metadata.{NAMESPACE}.svc.cluster.local:9094" in text
    assert "replog produce orders --acks all" in text and "replog consume orders" in text


REFUSALS = {
    "no brokers": ({"brokers": []}, ["/brokers", "minItems"]),
    "duplicate broker ids": ({"brokers": [{"id": 1}, {"id": 2}, {"id": 1}]}, ["broker id 1 appears twice"]),
    "replication factor above the broker count": (
        {"topics": [{"name": "orders", "replicationFactor": 4}]},
        ["orders asks for replicationFactor 4, but the chart runs 3 broker(s)"]),
    "minimum ISR above the replication factor": (
        {"topics": [{"name": "orders", "replicationFactor": 2, "config": {"min.insync.replicas": "3"}}]},
        ["orders sets min.insync.replicas=3 above its replicationFactor 2"]),
    "a broker id that is no number": ({"brokers": [{"id": "one"}]}, ["/brokers/0/id", "want integer"]),
    "an unknown key": ({"brokerz": []}, ["additional properties 'brokerz' not allowed"]),
    "external ZooKeeper without an address": ({"zookeeper": {"enabled": False}}, ["external.connect is empty"]),
    "an even ZooKeeper ensemble": ({"zookeeper": {"replicas": 2}}, ["/zookeeper/replicas"]),
    "a setting the chart owns": ({"brokers": [{"id": 1, "config": {"log.dirs": "/data"}}]},
                                 ["brokers[id=1].config: log.dirs is set by the chart (from the broker's volume)"]),
    "a variable the chart sets, in broker.env": (
        {"broker": {"env": [{"name": "REPLOG_LISTENERS", "value": "0.0.0.0:1"}]}},
        ["broker.env: REPLOG_LISTENERS is set by the chart; give replog's settings under config"]),
    "a variable set from config, in a broker's env": (
        {"brokers": [{"id": 1, "config": {"log.retention.ms": "1000"},
                      "env": [{"name": "REPLOG_LOG_RETENTION_MS", "value": "2000"}]}]},
        ["brokers[id=1].env: REPLOG_LOG_RETENTION_MS is set by the chart"]),
    "the pod's address, in controller.env": (
        {"controller": {"env": [{"name": "POD_IP", "value": "10.0.0.1"}]}},
        ["controller.env: POD_IP is set by the chart; remove it from controller.env"]),
    "an env entry without a name": ({"metadata": {"env": [{"value": "x"}]}}, ["/metadata/env/0", "name"]),
    "TLS without a Secret": ({"tls": {"enabled": True}}, ["tls.enabled: name the Secret", "tls.certManager"]),
    "cert-manager without an issuer": ({"tls": {"enabled": True, "certManager": {"enabled": True}}},
                                       ["tls.certManager.issuerRef.name"]),
    "cert-manager without tls.enabled": (
        {"tls": {"certManager": {"enabled": True, "issuerRef": {"name": "ca-issuer"}}}},
        ["tls.certManager.enabled: cert-manager makes the certificate only with tls.enabled: true"]),
    "a setting the chart takes from tls.*, under config": (
        {"config": {"ssl.client.auth": "none"}},
        ["config: ssl.client.auth is set by the chart (from tls.clientAuth)"]),
    "a rack under a broker's config": (
        {"brokers": [{"id": 1, "config": {"broker.rack": "zone-a"}}]},
        ["brokers[id=1].config: broker.rack is set by the chart (from brokers[].rack"]),
    "a variable given twice in an env": (
        {"broker": {"env": [{"name": "GRPC_VERBOSITY", "value": "info"},
                            {"name": "GRPC_VERBOSITY", "value": "debug"}]}},
        ["broker.env: GRPC_VERBOSITY appears twice"]),
    "an env entry with both a value and a valueFrom": (
        {"metadata": {"env": [{"name": "NODE", "value": "a",
                               "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]}},
        ["metadata.env: NODE has both a value and a valueFrom"]),
    "an env valueFrom with a misspelt source": (
        {"broker": {"env": [{"name": "NODE", "valueFrom": {"fieldRf": {"fieldPath": "spec.nodeName"}}}]}},
        ["/broker/env/0/valueFrom", "'fieldRf' not allowed"]),
    "the metrics port on the broker port": ({"metrics": {"port": 9092}},
                                            ["broker.port and metrics.port are both 9092"]),
    "the health port on the metadata port under TLS": (
        {"tls": {"enabled": True, "secretName": "replog-tls", "healthPort": 9094}},
        ["metadata.port and tls.healthPort are both 9094"]),
    "a resource request above its limit": (
        {"brokers": [{"id": 1, "resources": {"requests": {"memory": "4Gi"}, "limits": {"memory": "1Gi"}}}]},
        ["brokers[id=1].resources: requests.memory 4Gi is above limits.memory 1Gi"]),
    "a resource quantity Kubernetes does not read": (
        {"broker": {"resources": {"requests": {"memory": "1GB"}}}},
        ["/broker/resources/requests/memory", "does not match pattern"]),
    "a misspelt resource name": ({"controller": {"resources": {"requests": {"cpuu": "1"}}}},
                                 ["invalid propertyName 'cpuu'"]),
    "a ZooKeeper heap that does not fit in its memory limit": (
        {"zookeeper": {"heapSize": "1g"}},
        ["zookeeper.heapSize 1g does not fit in zookeeper.resources.limits.memory 768Mi"]),
    "a storage size of zero": ({"broker": {"storage": {"size": "0"}}},
                               ["/broker/storage/size", "does not match pattern"]),
    "autoscaling with minReplicas above maxReplicas": (
        {"metadata": {"autoscaling": {"enabled": True, "minReplicas": 5, "maxReplicas": 2}}},
        ["metadata.autoscaling: minReplicas 5 is above maxReplicas 2"]),
    "autoscaling without a CPU request": (
        {"metadata": {"autoscaling": {"enabled": True}, "resources": {"requests": {"cpu": None}}}},
        ["give metadata.resources.requests.cpu"]),
    "an external ZooKeeper while the chart runs its own": (
        {"zookeeper": {"external": {"connect": "zk-0.zk:2181"}}},
        ["external.connect is given but enabled is true", "set zookeeper.enabled: false"]),
    "an external ZooKeeper port out of range": (
        {"zookeeper": {"enabled": False, "external": {"connect": "zk-0.zk:2181,zk-1.zk:99999/replog"}}},
        ["zookeeper.external.connect: zk-1.zk:99999 has no port from 1 to 65535"]),
    "a broker id too long for a StatefulSet's name": (
        {"fullnameOverride": "a" * 40, "brokers": [{"id": 12345}]},
        ["broker id 12345 names the StatefulSet", "53 characters; Kubernetes allows 52"]),
    "a name Kubernetes refuses": ({"fullnameOverride": "Replog"}, ["/fullnameOverride", "does not match pattern"]),
    "one of the chart's labels in commonLabels": (
        {"commonLabels": {"app.kubernetes.io/name": "kafka"}},
        ["commonLabels: app.kubernetes.io/name is set by the chart (its selectors match it)"]),
    "a label value Kubernetes refuses": ({"commonLabels": {"team": "data platform"}}, ["/commonLabels/team"]),
    "a toleration with a misspelt key": ({"broker": {"tolerations": [{"ky": "dedicated"}]}},
                                         ["/broker/tolerations/0", "'ky' not allowed"]),
    "an image repository with its tag": ({"image": {"repository": "registry.example.com/replog:0.1.0"}},
                                         ["/image/repository", "does not match pattern"]),
    "no ZooKeeper image tag": ({"zookeeper": {"image": {"tag": ""}}}, ["/zookeeper/image/tag"]),
    "a scrape interval that is no duration": ({"metrics": {"serviceMonitor": {"enabled": True, "interval": "30 s"}}},
                                              ["/metrics/serviceMonitor/interval", "does not match pattern"]),
    "a topic given twice": ({"topics": [{"name": "orders"}, {"name": "orders", "partitions": 6}]},
                            ["topics: orders appears twice"]),
    "a topic named ..": ({"topics": [{"name": ".."}]}, ['topics: ".." cannot name a topic']),
    "a topic setting with a quote in its name": ({"topics": [{"name": "orders", "config": {"retention'ms": "1"}}]},
                                                  ["invalid propertyName"]),
}


def test_env_adds_variables_to_each_services_containers_and_a_brokers_own_replaces_the_default():
    glibc_defaults = {"name": "GLIBC_TUNABLES", "value": "glibc.malloc.perturb=0"}
    objects = render({"broker": {"env": [glibc_defaults]},
                      "brokers": [{"id": 1}, {"id": 2, "env": [{"name": "REPLOG_EVENT_LOOP", "value": "asyncio"}]}],
                      "controller": {"env": [{"name": "GRPC_VERBOSITY", "value": "debug"}]},
                      "metadata": {"env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}})
    first, second = (container(named(objects, "StatefulSet", f"replog-broker-{i}")) for i in (1, 2))
    assert env(first)["GLIBC_TUNABLES"] == "glibc.malloc.perturb=0"
    assert first["env"][-1] == glibc_defaults  # after the chart's own
    assert env(first)["REPLOG_BROKER_ID"] == "1"
    assert env(second)["REPLOG_EVENT_LOOP"] == "asyncio" and "GLIBC_TUNABLES" not in env(second)
    assert env(container(named(objects, "Deployment", "replog-controller")))["GRPC_VERBOSITY"] == "debug"
    metadata = container(named(objects, "Deployment", "replog-metadata"))
    assert metadata["env"][-1]["valueFrom"] == {"secretKeyRef": {"name": "s", "key": "k"}}
    assert env(metadata)["REPLOG_LISTENERS"] == "0.0.0.0:9094"


def test_under_tls_every_pod_mounts_the_secret_and_probes_a_plaintext_health_port():
    objects = render(SECURE) + render(SECURE, tests=True)
    workloads = [*brokers_of(objects), *of_kind(objects, "Deployment")]
    assert len(workloads) == 5
    for workload in workloads:
        main = container(workload)
        settings = env(main)
        assert settings["REPLOG_SSL_CERTFILE"] == "/etc/replog/tls/tls.crt"
        assert settings["REPLOG_SSL_CLIENT_AUTH"] == "required"
        assert settings["REPLOG_SSL_SERVER_NAME"] == "replog"
        assert settings["REPLOG_AUTHORIZER_CLASS_NAME"] == "AclAuthorizer"
        assert settings["REPLOG_ZOOKEEPER_SET_ACL"] == "true"
        assert {m["mountPath"] for m in main["volumeMounts"]} >= {"/etc/replog/tls", "/etc/replog/zookeeper"}
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            assert main[probe]["grpc"]["port"] == 9095 == int(settings["REPLOG_HEALTH_PORT"])
        secrets = {v["secret"]["secretName"] for v in workload["spec"]["template"]["spec"]["volumes"] if "secret" in v}
        assert secrets == {"replog-tls", "zookeeper-digest"}
    clients = [container(job) for job in of_kind(objects, "Job")] + [pod["spec"]["containers"][0]
                                                                       for pod in of_kind(objects, "Pod")]
    assert len(clients) == 2
    for client in clients:
        assert env(client)["REPLOG_SSL_CAFILE"] == "/etc/replog/tls/ca.crt"
    certificate = named(objects, "Certificate", "replog-tls")
    assert certificate["spec"]["secretName"] == "replog-tls"
    assert set(certificate["spec"]["dnsNames"]) >= {"replog", "replog-metadata.streaming.svc.cluster.local",
                                                    "*.replog-broker.streaming.svc.cluster.local"}
    assert certificate["spec"]["usages"][:2] == ["server auth", "client auth"]


@pytest.mark.parametrize("values, phrases", REFUSALS.values(), ids=REFUSALS.keys())
def test_values_that_cannot_work_are_refused_with_a_message_that_says_why(values, phrases):
    message = refusal(values)
    assert "Traceback" not in message
    for phrase in phrases:
        assert phrase in message
