"""The chart's rendered workloads run as podman pods, with the commands, args, env, ports and
volumes the chart renders.

`podman kube play` runs Pod YAML but knows no StatefulSets, Deployments or Services, so this does
what their controllers and the cluster DNS would: each StatefulSet becomes its pods (named
`<name>-<ordinal>`, with a volume per claim template that outlives the pod), each Deployment its
replicas; every pod gets a fixed address on a network of its own, and `hostAliases` map the
Services' and pods' DNS names to those addresses. The downward API's fields and `$(VAR)`
references are filled in as the kubelet would. What podman cannot do is left out and said so:
probes (the harness asks the same gRPC health service itself), resource limits (cgroupfs here
cannot apply them) and the `ports` lists (podman would publish each on the host).
"""

from __future__ import annotations

import copy
import ipaddress
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.chart.images import podman

PROBES = ("startupProbe", "livenessProbe", "readinessProbe")
FIRST_HOST = 10
NODE_NAME = "podman"


@dataclass
class PodPlan:
    name: str
    component: str
    ip: str
    manifest: dict[str, Any]
    claims: list[str] = field(default_factory=list)  # podman volumes standing for its PVCs
    grace_s: int = 30
    probes: dict[str, Any] = field(default_factory=dict)  # the main container's, which podman does not run

    @property
    def containers(self) -> list[str]:
        """podman's names for the pod's containers (<pod>-<container>)."""
        return [f"{self.name}-{c['name']}" for c in self.manifest["spec"]["containers"]]


@dataclass
class Deployment:
    network: str
    namespace: str
    domain: str
    pods: dict[str, PodPlan]
    workdir: Path

    def of_component(self, component: str) -> list[PodPlan]:
        return [p for p in self.pods.values() if p.component == component]


def plan(objects: list[dict[str, Any]], *, network: str, subnet: str, namespace: str, domain: str,
         workdir: Path) -> Deployment:
    """Pods for every StatefulSet and Deployment, with addresses and DNS names."""
    hosts = ipaddress.ip_network(subnet).hosts()
    for _ in range(FIRST_HOST - 1):
        next(hosts)
    pods: dict[str, PodPlan] = {}
    for workload in objects:
        for name, template_spec, claims in _pods_of(workload):
            labels = (workload["metadata"] if workload["kind"] == "Pod" else workload["spec"]["template"]["metadata"])["labels"]
            manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
                        "spec": template_spec}
            component = manifest["metadata"]["labels"].get("app.kubernetes.io/component", "")
            pods[name] = PodPlan(name, component, str(next(hosts)), manifest, claims,
                                 template_spec.get("terminationGracePeriodSeconds", 30))
    deployment = Deployment(network, namespace, domain, pods, workdir)
    aliases = _host_aliases(objects, deployment)
    for pod in pods.values():
        _fill_in(pod, aliases, deployment)
    return deployment


def _pods_of(workload: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], list[str]]]:
    if workload["kind"] == "Pod":
        yield workload["metadata"]["name"], copy.deepcopy(workload["spec"]), []
        return
    if workload["kind"] not in ("StatefulSet", "Deployment"):
        return
    name = workload["metadata"]["name"]
    for ordinal in range(workload["spec"].get("replicas", 1)):
        spec = copy.deepcopy(workload["spec"]["template"]["spec"])
        claims = []
        pod_name = f"{name}-{ordinal}"
        if workload["kind"] == "StatefulSet":
            spec["hostname"], spec["subdomain"] = pod_name, workload["spec"]["serviceName"]
            for template in workload["spec"].get("volumeClaimTemplates", []):
                claim = f"{template['metadata']['name']}-{pod_name}"
                spec.setdefault("volumes", []).append(
                    {"name": template["metadata"]["name"], "persistentVolumeClaim": {"claimName": claim}})
                claims.append(claim)
        yield pod_name, spec, claims


def _host_aliases(objects: list[dict[str, Any]], deployment: Deployment) -> list[dict[str, Any]]:
    """The cluster DNS: a headless Service's pods by name, another Service by its first pod."""
    by_ip: dict[str, list[str]] = {}
    suffix = f"{deployment.namespace}.svc.{deployment.domain}"
    for service in (o for o in objects if o["kind"] == "Service"):
        name = service["metadata"]["name"]
        selected = [p for p in deployment.pods.values()
                    if all(p.manifest["metadata"]["labels"].get(k) == v for k, v in service["spec"]["selector"].items())]
        if service["spec"].get("clusterIP") == "None":
            for pod in selected:
                by_ip.setdefault(pod.ip, []).extend(
                    [f"{pod.name}.{name}.{suffix}", f"{pod.name}.{name}.{deployment.namespace}.svc", f"{pod.name}.{name}"])
        elif selected:
            by_ip.setdefault(selected[0].ip, []).extend(
                [f"{name}.{suffix}", f"{name}.{deployment.namespace}.svc", f"{name}.{deployment.namespace}", name])
    return [{"ip": ip, "hostnames": names} for ip, names in sorted(by_ip.items())]


def _fill_in(pod: PodPlan, aliases: list[dict[str, Any]], deployment: Deployment) -> None:
    spec = pod.manifest["spec"]
    spec["hostAliases"] = aliases
    fields = {"metadata.name": pod.name, "metadata.namespace": deployment.namespace, "status.podIP": pod.ip,
              "spec.nodeName": NODE_NAME}
    pod.probes = {probe: spec["containers"][0][probe] for probe in PROBES if probe in spec["containers"][0]}
    for container in spec.get("initContainers", []) + spec["containers"]:
        for probe in PROBES:
            container.pop(probe, None)
        container.pop("resources", None)
        # podman 4 publishes a containerPort on the host's same port: the pods would collide there.
        container.pop("ports", None)
        values: dict[str, str] = {}
        for variable in container.get("env", []):
            if "valueFrom" in variable:
                variable["value"] = fields[variable.pop("valueFrom")["fieldRef"]["fieldPath"]]
            variable["value"] = _expand(variable["value"], values)
            values[variable["name"]] = variable["value"]
        for key in ("command", "args"):
            if key in container:
                container[key] = [_expand(part, values) for part in container[key]]


def _expand(text: str, values: dict[str, str]) -> str:
    """Kubernetes' $(VAR) references to variables defined earlier; $$ stays a literal $."""
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                  lambda m: "$" if m.group(0) == "$$" else values.get(m.group(1), m.group(0)), text)


# -- running ----------------------------------------------------------------------------------


def create_network(name: str) -> str:
    """A podman network of the deployment's own; returns its subnet."""
    podman("network", "rm", "-f", name, check=False)
    podman("network", "create", name)
    inspected = json.loads(podman("network", "inspect", name).stdout)[0]
    return inspected["subnets"][0]["subnet"]


def play(deployment: Deployment, pod: PodPlan) -> None:
    fs_group = pod.manifest["spec"].get("securityContext", {}).get("fsGroup")
    for claim in pod.claims:
        if podman("volume", "exists", claim, check=False).returncode != 0:
            podman("volume", "create", claim)
            if fs_group is not None:  # what the kubelet's fsGroup does to a new volume
                mountpoint = podman("volume", "inspect", "--format", "{{.Mountpoint}}", claim).stdout.strip()
                os.chown(mountpoint, fs_group, fs_group)
                Path(mountpoint).chmod(0o2775)
    path = deployment.workdir / f"{pod.name}.yaml"
    path.write_text(yaml.safe_dump(pod.manifest, sort_keys=False))
    podman("kube", "play", "--network", deployment.network, "--ip", pod.ip, str(path), timeout_s=120)


def stop(pod: PodPlan) -> str:
    """Delete a pod as the kubelet does: SIGTERM to its containers, SIGKILL after the grace period,
    and only then the pod's network (podman's infra container, the kubelet's sandbox), so that a
    broker's controlled shutdown can still reach the controller. Volumes stay. Returns what the
    containers logged."""
    podman("stop", "--time", str(pod.grace_s), *pod.containers, check=False, timeout_s=pod.grace_s + 60)
    last_words = logs(pod, tail=None)
    podman("pod", "rm", "--force", pod.name, check=False, timeout_s=60)
    return last_words


def exec_in(pod: PodPlan, *command: str, timeout_s: float = 300, check: bool = True):
    return podman("exec", pod.containers[0], *command, timeout_s=timeout_s, check=check)


def logs(pod: PodPlan, tail: int | None = 30) -> str:
    """The last `tail` lines each container logged (None: all)."""
    out = []
    for container in pod.containers:
        result = podman("logs", *(["--tail", str(tail)] if tail is not None else []), container, check=False)
        out.append(f"--- {container}\n{result.stdout}{result.stderr}")
    return "\n".join(out)
