"""Every query replog ships — dashboard panels, dashboard variables, alert rules — and the metric
names they read, found with a PromQL parser."""

from __future__ import annotations

import json
import re

import promql_parser
import yaml

from replog.monitoring.api import expand
from replog.monitoring.generate import DASHBOARDS_DIR, RULES_PATH

# label_values(SELECTOR, LABEL): a Grafana variable's query; SELECTOR is PromQL.
LABEL_VALUES = re.compile(r"^label_values\((?P<selector>.+),\s*(?P<label>\w+)\)$")


def dashboards() -> dict[str, dict]:
    return {path.name: json.loads(path.read_text(encoding="utf-8")) for path in sorted(DASHBOARDS_DIR.glob("*.json"))}


def panel_queries() -> list[tuple[str, str, str]]:
    """(dashboard file, panel title, expr) of every panel query, variables as written."""
    return [(name, panel["title"], target["expr"])
            for name, dashboard in dashboards().items()
            for panel in dashboard["panels"] for target in panel.get("targets", [])]


def variable_selectors() -> list[tuple[str, str, str]]:
    """(dashboard file, variable, the PromQL selector of its label_values query)."""
    found = []
    for name, dashboard in dashboards().items():
        for variable in dashboard["templating"]["list"]:
            if variable["type"] == "query":
                match = LABEL_VALUES.match(variable["query"])
                assert match, f"{name}: variable {variable['name']} is not a label_values query"
                found.append((name, variable["name"], match["selector"]))
    return found


def rule_queries() -> list[tuple[str, str]]:
    """(alert, expr) of every rule of the chart's rule file."""
    document = yaml.safe_load(RULES_PATH.read_text(encoding="utf-8"))
    return [(rule["alert"], rule["expr"]) for group in document["groups"] for rule in group["rules"]]


def metric_names(expr: str) -> set[str]:
    names: set[str] = set()

    def visit(node: object) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            assert node.name, f"a selector without a metric name in {expr}"
            names.add(node.name)

    promql_parser.walk(promql_parser.parse(expand(expr, "1m")), visit)
    return names


def every_metric_name() -> set[str]:
    exprs = [expr for _, _, expr in panel_queries()] + [expr for _, expr in rule_queries()]
    exprs += [selector for _, _, selector in variable_selectors()]
    return set().union(*(metric_names(expr) for expr in exprs))
