"""The alert rules: valid for Prometheus (the chart's and the local cluster's rendering), each
alert proven to fire and to stay quiet by `promtool test rules`, each with a runbook."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from replog.monitoring import rules
from replog.monitoring.generate import RULES_PATH

HERE = Path(__file__).resolve().parent
TEST_FILE = HERE / "replog.rules.test.yaml"
OPERATIONS = HERE.parents[1] / "docs" / "OPERATIONS.md"
PROMTOOL_TIMEOUT_S = 60

promtool = pytest.mark.skipif(shutil.which("promtool") is None,
                              reason="promtool comes with Debian's prometheus package (`make setup`)")


def run_promtool(*args: str, cwd: Path = HERE) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["promtool", *args], cwd=cwd, capture_output=True, text=True, timeout=PROMTOOL_TIMEOUT_S)


@promtool
def test_promtool_checks_the_chart_rules_and_the_local_cluster_rules(tmp_path):
    dev_rules = tmp_path / "dev.rules.yaml"
    dev_rules.write_text(rules.rule_file(dev=True), encoding="utf-8")
    result = run_promtool("check", "rules", str(RULES_PATH), str(dev_rules))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count(f"SUCCESS: {len(rules.ALERTS)} rules found") == 2


@promtool
def test_promtool_unit_tests_pass():
    result = run_promtool("test", "rules", TEST_FILE.name)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_a_case_where_it_fires_and_one_where_it_stays_quiet():
    cases = yaml.safe_load(TEST_FILE.read_text(encoding="utf-8"))["tests"]
    fires, quiet = set(), set()
    for case in cases:
        for check in case["alert_rule_test"]:
            (fires if check["exp_alerts"] else quiet).add(check["alertname"])
    names = {alert.name for alert in rules.ALERTS}
    assert names - fires == set(), "alerts never shown to fire"
    # An alert whose firing case also shows another series staying quiet counts as quiet too.
    shown_quiet = quiet | {c["alert_rule_test"][0]["alertname"] for c in cases if len(c["input_series"]) > 1}
    assert names - shown_quiet == set(), "alerts never shown to stay quiet"


def test_every_alert_has_a_summary_a_description_and_a_runbook_section():
    headings = {heading.lower() for heading in re.findall(r"^#+ (Replog\w+)", OPERATIONS.read_text(encoding="utf-8"),
                                                             re.MULTILINE)}
    for alert in rules.ALERTS:
        assert alert.summary and alert.description
        assert alert.runbook.split("#")[1] in headings, f"docs/OPERATIONS.md has no section {alert.name}"


def test_the_local_cluster_waits_a_second_where_production_waits_a_minute():
    production = yaml.safe_load(rules.rule_file())["groups"][0]["rules"]
    dev = yaml.safe_load(rules.rule_file(dev=True))["groups"][0]["rules"]
    assert [r["for"] for r in production if r["alert"] == "ReplogUnderReplicatedPartitions"] == ["5m"]
    assert [r["for"] for r in dev if r["alert"] == "ReplogUnderReplicatedPartitions"] == ["5s"]
    assert [{**r, "for": None} for r in production] == [{**r, "for": None} for r in dev]
