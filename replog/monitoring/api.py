"""A small client of Prometheus's HTTP API (queries, alerts, targets), and how a dashboard's
query reads with its variables set to All."""

from __future__ import annotations

import json
import re
import urllib.parse
import urllib.request
from typing import Any

# Grafana's All of a multi-valued variable with allValue ".*": any value, or none.
ALL = ".*"
VARIABLE = re.compile(r"\$\{(\w+)\}|\$(\w+)")


def expand(expr: str, rate_interval: str) -> str:
    """The query as Grafana sends it with every variable at All and $__rate_interval given."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return rate_interval if name == "__rate_interval" else ALL

    return VARIABLE.sub(value, expr)


class PrometheusError(Exception):
    """Prometheus refused a request or could not be reached; the message says which."""


class PrometheusApi:
    def __init__(self, address: str, timeout_s: float = 10.0) -> None:
        self.url = f"http://{address}"
        self._timeout_s = timeout_s

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query: [{"metric": {labels}, "value": [time, "text"]}]."""
        return list(self._get("query", {"query": expr})["result"])

    def query_range(self, expr: str, start_s: float, end_s: float, step_s: float) -> list[dict[str, Any]]:
        """[{"metric": {labels}, "values": [[time, "text"], ...]}]."""
        return list(self._get("query_range", {"query": expr, "start": start_s, "end": end_s, "step": step_s})["result"])

    def alerts(self) -> list[dict[str, Any]]:
        """Pending and firing alerts: [{"labels", "annotations", "state", "activeAt", "value"}]."""
        return list(self._get("alerts", {})["alerts"])

    def targets(self) -> list[dict[str, Any]]:
        return list(self._get("targets", {})["activeTargets"])

    def _get(self, path: str, params: dict[str, Any]) -> Any:
        url = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=self._timeout_s) as response:
                body = json.load(response)
        except urllib.error.HTTPError as error:
            raise PrometheusError(f"{url}: {error.code} {error.read().decode(errors='replace')}") from None
        except OSError as error:
            raise PrometheusError(f"cannot reach Prometheus at {self.url}: {error}") from None
        if body.get("status") != "success":
            raise PrometheusError(f"{url}: {body.get('error', body)}")
        return body["data"]
