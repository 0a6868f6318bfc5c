"""`replog k8s roll` and `replog k8s rack`: the chart's brokers and controllers as Kubernetes sees them.

`roll` observes the pods of a release (by the chart's labels) and restarts them through the
Eviction API, so a PodDisruptionBudget is honoured too; the rule is `replog.core.roll`'s, the
loop `replog.cli.roll`'s. `rack` runs in a broker's init container: it writes broker.rack from
its node's zone label.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from replog.cli import roll
from replog.client import Admin
from replog.core.roll import ClusterView, Member, MemberKind
from replog.dev.processes import DevError

IN_CLUSTER_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
BROKER_ID_LABEL = "replog.io/broker-id"
METADATA_PORT = 9094


class KubernetesError(DevError):
    """A problem reaching or reading the Kubernetes API; the message says what to do."""


def add_commands(commands: Any) -> None:
    parser = commands.add_parser("k8s", help="operate a replog release on Kubernetes",
                                 description="Operate a replog release installed with the Helm chart.")
    sub = parser.add_subparsers(dest="k8s_command", metavar="ACTION", required=True)

    rolling = sub.add_parser(
        "roll", help="restart every pod, one at a time, never below min.insync.replicas",
        description="Restart the controller pods (the active one last), then the broker pods, one at a "
        "time. A broker pod is evicted (SIGTERM: controlled shutdown) only when no partition would fall "
        "below its min.insync.replicas without it; the next waits until the new pod is ready and every "
        "ISR is full again.")
    rolling.add_argument("--namespace", "-n", help="the release's namespace (default: the current context's)")
    rolling.add_argument("--release", default="replog", help="the Helm release (default replog)")
    rolling.add_argument("--bootstrap", metavar="HOST:PORT",
                         help="the metadata service (default: the release's Service, <fullname>-metadata.<namespace>.svc:9094)")
    roll.add_roll_arguments(rolling)
    rolling.set_defaults(handler=_roll)

    rack = sub.add_parser("rack", help="write broker.rack from this pod's node (an init container's job)")
    rack.add_argument("--node-label", default="topology.kubernetes.io/zone", help="the node label that names the rack")
    rack.add_argument("--node", default=os.environ.get("NODE_NAME"), help="the node (default: $NODE_NAME)")
    rack.add_argument("--output", required=True, help="the properties file to write")
    rack.set_defaults(handler=_rack)


def _client() -> Any:
    try:
        import kubernetes
    except ImportError:
        raise KubernetesError("this needs the kubernetes package: pip install 'replog[k8s]'") from None
    try:
        if os.environ.get("KUBERNETES_SERVICE_HOST"):
            kubernetes.config.load_incluster_config()
        else:
            kubernetes.config.load_kube_config()
    except kubernetes.config.ConfigException as error:
        raise KubernetesError(f"no Kubernetes cluster to talk to: {error}") from None
    return kubernetes


def _current_namespace(kubernetes: Any) -> str:
    if os.path.exists(IN_CLUSTER_NAMESPACE_FILE):
        with open(IN_CLUSTER_NAMESPACE_FILE, encoding="utf-8") as handle:
            return handle.read().strip()
    try:
        _, context = kubernetes.config.list_kube_config_contexts()
    except kubernetes.config.ConfigException:
        return "default"
    return context.get("context", {}).get("namespace") or "default"


def fullname(release: str) -> str:
    """The chart's name for the release's objects (its `replog.fullname`)."""
    return release[:40].rstrip("-") if "replog" in release else f"{release}-replog"[:40].rstrip("-")


class KubernetesPlatform:
    """The release's pods: controllers by their Deployment's pods, brokers by their StatefulSet's pod."""

    def __init__(self, core_api: Any, api_exception: type[Exception], namespace: str, release: str,
                 admin: Admin, eviction_body: Any) -> None:
        self._api = core_api
        self._api_exception = api_exception
        self._namespace = namespace
        self._release = release
        self._admin = admin
        self._eviction_body = eviction_body
        self._controller_ids: dict[str, int] = {}  # pod name -> the id the roll knows it by
        self._restarted: dict[Member, tuple[str, int]] = {}  # the evicted pod's uid, the pods there were

    def pods(self, component: str) -> list[Any]:
        selector = f"app.kubernetes.io/instance={self._release},app.kubernetes.io/component={component}"
        pods = self._api.list_namespaced_pod(self._namespace, label_selector=selector).items
        return sorted((p for p in pods if p.metadata.deletion_timestamp is None), key=lambda p: p.metadata.name)

    def observe(self) -> ClusterView:
        return roll.observe(self._admin, self._members)

    def _members(self, controller_address: str | None) -> roll.Members:
        controllers = self.pods("controller")
        for pod in controllers:
            self._controller_ids.setdefault(pod.metadata.name, len(self._controller_ids) + 1)
        active_ip = controller_address.rsplit(":", 1)[0] if controller_address else None
        active = next((self._controller_ids[p.metadata.name] for p in controllers if p.status.pod_ip == active_ip), None)
        brokers = tuple(int(p.metadata.labels[BROKER_ID_LABEL]) for p in self.pods("broker"))
        return tuple(self._controller_ids[p.metadata.name] for p in controllers), active, brokers

    def _pod_of(self, member: Member) -> Any:
        for pod in self.pods(member.kind.value):
            if member.kind is MemberKind.BROKER and pod.metadata.labels.get(BROKER_ID_LABEL) == str(member.id):
                return pod
            if member.kind is MemberKind.CONTROLLER and self._controller_ids.get(pod.metadata.name) == member.id:
                return pod
        return None

    def restart(self, member: Member) -> None:
        pod = self._pod_of(member)
        if pod is None:
            raise roll.RollError(f"{member} has no pod in namespace {self._namespace}")
        self._restarted[member] = (pod.metadata.uid, len(self.pods(member.kind.value)))
        body = self._eviction_body(metadata={"name": pod.metadata.name, "namespace": self._namespace})
        while True:
            try:
                self._api.create_namespaced_pod_eviction(pod.metadata.name, self._namespace, body)
                return
            except self._api_exception as error:
                if getattr(error, "status", None) != 429:  # 429: a PodDisruptionBudget says not now
                    raise KubernetesError(f"cannot evict pod {pod.metadata.name}: {error}") from None
                time.sleep(roll.POLL_INTERVAL_S)

    def serving(self, member: Member) -> bool:
        """The replacement pod is there and Ready (its readiness probe: gRPC health SERVING), and so are
        all the others of its kind: a Deployment's replacement has a name of its own."""
        old_uid, count = self._restarted[member]
        pods = self.pods(member.kind.value)
        if any(p.metadata.uid == old_uid for p in pods) or len(pods) < count:
            return False
        return all(_ready(p) for p in pods)


def _ready(pod: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []))


def _roll(args: argparse.Namespace) -> int:
    kubernetes = _client()
    namespace = args.namespace or _current_namespace(kubernetes)
    bootstrap = args.bootstrap or f"{fullname(args.release)}-metadata.{namespace}.svc:{METADATA_PORT}"
    with Admin(bootstrap) as admin:
        platform = KubernetesPlatform(kubernetes.client.CoreV1Api(), kubernetes.client.exceptions.ApiException,
                                      namespace, args.release, admin, kubernetes.client.V1Eviction)
        if not platform.pods("broker"):
            raise KubernetesError(f"no broker pods of release {args.release} in namespace {namespace}; "
                                  "check --release and --namespace")
        roll.roll(platform, dry_run=args.dry_run, wait_s_max=args.timeout_s)
    return 0


def _rack(args: argparse.Namespace) -> int:
    if not args.node:
        raise KubernetesError("no node to read: pass --node or set NODE_NAME (from spec.nodeName)")
    kubernetes = _client()
    node = kubernetes.client.CoreV1Api().read_node(args.node)
    rack = (node.metadata.labels or {}).get(args.node_label, "")
    with open(args.output, "w", encoding="utf-8") as handle:
        handle.write(f"broker.rack={rack}\n")
    print(f"broker.rack={rack}" if rack else f"node {args.node} has no label {args.node_label}: broker.rack stays empty")
    return 0
