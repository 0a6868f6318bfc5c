"""The chart rendered by the real Helm engine (helm-python-sdk: Helm's Go code, no helm binary)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "replog"
RELEASE = "replog"
NAMESPACE = "streaming"


def render(values: Mapping[str, Any] | None = None, *, release: str = RELEASE,
           namespace: str = NAMESPACE, tests: bool = False) -> list[dict[str, Any]]:
    """Every object the chart renders for `values` (schema and template checks included); the
    `helm test` hooks only with tests=True."""
    manifests = helm.Chart.load(str(CHART)).render(dict(values or {}), name=release, namespace=namespace,
                                                   is_install=True)
    objects = []
    for path, text in sorted(manifests.items()):
        if path.endswith("NOTES.txt") or ("/tests/" in path) != tests:
            continue
        objects += [doc for doc in yaml.safe_load_all(text) if doc]
    return objects


def notes(values: Mapping[str, Any] | None = None) -> str:
    manifests = helm.Chart.load(str(CHART)).render(dict(values or {}), name=RELEASE, namespace=NAMESPACE,
                                                   is_install=True)
    return next(text for path, text in manifests.items() if path.endswith("NOTES.txt"))


def refusal(values: Mapping[str, Any]) -> str:
    """The message Helm gives for values it refuses (AssertionError when it renders them)."""
    try:
        render(values)
    except helm.HelmError as error:
        return str(error)
    raise AssertionError(f"the chart rendered {dict(values)}")


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def named(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    for candidate in of_kind(objects, kind):
        if candidate["metadata"]["name"] == name:
            return candidate
    raise AssertionError(f"no {kind} {name} among {[o['metadata']['name'] for o in of_kind(objects, kind)]}")


def container(workload: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    containers = workload["spec"]["template"]["spec"]["containers"]
    return containers[0] if name is None else next(c for c in containers if c["name"] == name)


def env(container_spec: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container_spec.get("env", [])}
