"""The pieces every replog dashboard is built from, on the grafana-foundation-sdk's builders.

A `Board` lays panels out row by row, numbers them, points them at the `$datasource`
variable, and gives its queries the `$namespace` matcher; `q` writes a selector with it.
Panel queries use Grafana's `$__rate_interval` for rate windows.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from grafana_foundation_sdk.builders import stat, statetimeline, timeseries
from grafana_foundation_sdk.builders.dashboard import (
    Dashboard,
    DatasourceVariable,
    QueryVariable,
    Row,
    ThresholdsConfig,
)
from grafana_foundation_sdk.builders.prometheus import Dataquery
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import (
    DataSourceRef,
    Threshold,
    ThresholdsMode,
    ValueMap,
    ValueMappingResult,
    VariableOption,
    VariableRefresh,
    VariableSort,
)

DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
RATE = "$__rate_interval"
NAMESPACE = 'namespace=~"$namespace"'

TAGS = ["replog"]


def q(metric: str, *matchers: str) -> str:
    """A selector of `metric` in the chosen namespaces, with more matchers."""
    return f"{metric}{{{', '.join((NAMESPACE, *matchers))}}}"


def rate(metric: str, *matchers: str) -> str:
    return f"rate({q(metric, *matchers)}[{RATE}])"


def quantiles(histogram: str, by: str, *matchers: str) -> list[tuple[str, str]]:
    """p50 and p99 of a histogram, per `by` (a label list, possibly empty): (expr, legend) pairs."""
    labels = f"{by}, le" if by else "le"
    legend = " ".join(f"{{{{{label.strip()}}}}}" for label in by.split(",") if label.strip())
    return [(f"histogram_quantile({quantile}, sum by ({labels}) ({rate(histogram + '_bucket', *matchers)}))",
             f"{legend} p{int(quantile * 100)}".strip()) for quantile in (0.5, 0.99)]


def thresholds(*steps: tuple[float | None, str]) -> ThresholdsConfig:
    return ThresholdsConfig().mode(ThresholdsMode.ABSOLUTE).steps(
        [Threshold(value=value, color=color) for value, color in steps])


# Green at the right value, red otherwise: zero is the healthy count of a problem.
ZERO_IS_GOOD = thresholds((None, "green"), (1, "red"))


class Board:
    def __init__(self, uid: str, title: str, description: str) -> None:
        self._builder = (Dashboard(title).uid(uid).description(description).tags(TAGS)
                         .time("now-1h", "now").refresh("30s").timezone("browser").editable())
        self._builder.with_variable(DatasourceVariable("datasource").label("Data source").type("prometheus"))
        self._builder.with_variable(self.variable("namespace", "Namespace", "replog_zookeeper_session_state"))
        self._next_id = 1

    def variable(self, name: str, label: str, metric: str, *matchers: str) -> QueryVariable:
        """A multi-valued variable of a label's values (All: any value, or none)."""
        selector = q(metric, *matchers) if name != "namespace" else metric
        return (QueryVariable(name).label(label).datasource(DATASOURCE)
                .query(f"label_values({selector}, {name})")
                .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED).sort(VariableSort.ALPHABETICAL_ASC)
                .multi(True).include_all(True).all_value(".*")
                .current(VariableOption(selected=True, text="All", value="$__all")))

    def add_variable(self, name: str, label: str, metric: str, *matchers: str) -> None:
        self._builder.with_variable(self.variable(name, label, metric, *matchers))

    def row(self, title: str) -> None:
        """A row header; the panels added after it are its own (Grafana's layout of an open row)."""
        self._builder.with_row(Row(title).id(self._take_id()))

    def stat(self, title: str, description: str, expr: str, *, unit: str = "short",
             steps: ThresholdsConfig = ZERO_IS_GOOD, width: int = 3) -> None:
        panel = (stat.Panel().title(title).description(description).unit(unit).thresholds(steps)
                 .with_target(self._target(expr, "", "A").instant()))
        self._add(panel, width, 4)

    def timeseries(self, title: str, description: str, targets: Sequence[tuple[str, str]], *,
                   unit: str = "short", width: int = 8, height: int = 8, maximum: float | None = None) -> None:
        panel = timeseries.Panel().title(title).description(description).unit(unit).min(0)
        if maximum is not None:
            panel = panel.max(maximum)
        for index, (expr, legend) in enumerate(targets):
            panel = panel.with_target(self._target(expr, legend, chr(ord("A") + index)))
        self._add(panel, width, height)

    def states(self, title: str, description: str, expr: str, legend: str, names: dict[int, tuple[str, str]], *,
               width: int = 12, height: int = 6) -> None:
        """A state timeline whose numbers stand for states: {value: (name, colour)}."""
        mapping = ValueMap({str(value): ValueMappingResult(text=name, color=colour, index=index)
                            for index, (value, (name, colour)) in enumerate(sorted(names.items()))})
        panel = (statetimeline.Panel().title(title).description(description).mappings([mapping])
                 .with_target(self._target(expr, legend, "A")))
        self._add(panel, width, height)

    def to_json(self) -> str:
        return JSONEncoder(sort_keys=True, indent=2).encode(self._builder.build()) + "\n"

    def _target(self, expr: str, legend: str, ref_id: str) -> Dataquery:
        target = Dataquery().expr(expr).ref_id(ref_id).datasource(DATASOURCE)
        return target.legend_format(legend) if legend else target

    def _add(self, panel: Any, width: int, height: int) -> None:
        self._builder.with_panel(panel.id(self._take_id()).datasource(DATASOURCE).span(width).height(height))

    def _take_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1


def panel_queries(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """(panel title, expr) of every query of every panel."""
    return [(panel["title"], target["expr"]) for panel in dashboard["panels"] for target in panel.get("targets", [])]


def load(text: str) -> dict[str, Any]:
    return json.loads(text)
