"""replog's Grafana dashboards, built with the grafana-foundation-sdk.

Each module builds one dashboard; `render()` gives every file of helm/replog/dashboards/
with its JSON. The chart ships each as a ConfigMap labelled for Grafana's dashboard sidecar.
"""

from __future__ import annotations

from replog.monitoring.dashboards import cluster, controller, groups, topics

BUILDERS = {
    "replog-cluster.json": cluster.build,
    "replog-topics.json": topics.build,
    "replog-consumer-groups.json": groups.build,
    "replog-controller.json": controller.build,
}


def render() -> dict[str, str]:
    """File name -> JSON text, for every dashboard."""
    return {name: build().to_json() for name, build in BUILDERS.items()}
