"""skaffold.yaml against skaffold's published schema for its apiVersion (no skaffold binary here)."""

import json

import jsonschema
import yaml

from tests.chart.chart import CHART, ROOT, render

SCHEMA = ROOT / "tests" / "chart" / "data" / "skaffold-v4beta13.json"


def skaffold_config():
    return yaml.safe_load((ROOT / "skaffold.yaml").read_text())


def test_skaffold_yaml_is_valid_against_the_v4beta13_schema():
    config = skaffold_config()
    assert config["apiVersion"] == "skaffold/v4beta13"
    jsonschema.validate(config, json.loads(SCHEMA.read_text()))


def test_skaffold_builds_the_image_deploys_the_chart_and_forwards_the_metadata_service():
    config = skaffold_config()
    assert config["build"]["artifacts"][0]["docker"]["dockerfile"] == "Dockerfile"
    release = config["deploy"]["helm"]["releases"][0]
    assert (ROOT / release["chartPath"]) == CHART
    assert release["setValueTemplates"]["image.repository"] == "{{.IMAGE_REPO_replog}}"
    forward = config["portForward"][0]
    assert (forward["resourceType"], forward["resourceName"], forward["port"]) == ("service", "replog-metadata", 9094)


def test_the_dev_profile_runs_three_brokers_on_small_volumes():
    profile = next(p for p in skaffold_config()["profiles"] if p["name"] == "dev")
    values_file = ROOT / profile["patches"][0]["value"][0]
    objects = render(yaml.safe_load(values_file.read_text()))
    brokers = [o for o in objects if o["kind"] == "StatefulSet" and "broker" in o["metadata"]["name"]]
    assert len(brokers) == 3
    assert {b["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] for b in brokers} == {"1Gi"}
