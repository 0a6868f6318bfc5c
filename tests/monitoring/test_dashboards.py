"""The dashboards: generated from code and committed as generated, every query valid PromQL
over documented metrics, every panel on the `$datasource`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from replog.monitoring import generate
from tests.monitoring import queries

METRICS_DOC = Path(__file__).resolve().parents[2] / "docs" / "METRICS.md"


def test_the_committed_dashboards_and_rules_are_what_the_code_generates():
    for path, text in generate.files().items():
        assert path.exists(), f"{path} is missing: run `make dashboards`"
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale: run `make dashboards`"
    committed = set(generate.DASHBOARDS_DIR.glob("*.json"))
    assert committed == {p for p in generate.files() if p.suffix == ".json"}, "a dashboard no code generates"


@pytest.mark.parametrize("name", sorted(queries.dashboards()))
def test_each_dashboard_has_unique_panel_ids_and_reads_from_the_datasource_variable(name):
    dashboard = queries.dashboards()[name]
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
            assert panel["targets"] and panel.get("description"), panel["title"]
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert {"datasource", "namespace"} <= variables


def test_every_query_parses_and_selects_the_namespace():
    for name, title, expr in queries.panel_queries():
        assert queries.metric_names(expr), f"{name} / {title}: {expr}"
        # Each selector carries the namespace matcher, so the Namespace variable narrows every panel.
        selectors = re.findall(r"\b[a-z_]+\{[^}]*\}", expr)
        assert selectors and all('namespace=~"$namespace"' in s for s in selectors), f"{name} / {title}: {expr}"


def test_every_metric_a_dashboard_or_rule_names_is_documented():
    documented = set(re.findall(r"`((?:replog|process)_[a-z_]+)`", METRICS_DOC.read_text(encoding="utf-8")))
    for name in sorted(queries.every_metric_name()):
        base = re.sub(r"_(bucket|count|sum|total)$", "", name)
        assert name in documented or base in documented, f"{name} is used by a dashboard or rule but not in METRICS.md"
