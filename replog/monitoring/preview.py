"""Draw each dashboard's panels from a live Prometheus into a PNG, for a person without a Grafana.

`python -m replog.monitoring.preview` (or `make dashboards-preview`) reads the dashboards of
helm/replog/dashboards/, queries the Prometheus of the local cluster (`replog dev up
--monitoring`) or the one given, and writes one PNG per dashboard, laid out on Grafana's grid:
time series and state timelines as lines over the last minutes, stats as their current value.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from replog.monitoring.api import PrometheusApi, PrometheusError, expand

DASHBOARDS_DIR = Path(__file__).resolve().parents[2] / "helm" / "replog" / "dashboards"
GRID_COLUMNS = 24
INCHES_PER_COLUMN = 0.75
INCHES_PER_GRID_ROW = 0.42
LEGEND_ENTRIES_MAX = 6
POINTS_MAX = 240
PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def render(dashboard: dict[str, Any], api: PrometheusApi, out_path: Path, *, minutes: float,
           end_s: float | None = None) -> None:
    """One PNG of the dashboard's panels over the last `minutes` before `end_s` (now)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    end_s = time.time() if end_s is None else end_s
    start_s = end_s - minutes * 60
    step_s = max(1.0, (end_s - start_s) / POINTS_MAX)
    rate_interval = f"{max(60, int(step_s * 4))}s"
    panels = dashboard["panels"]
    rows = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in panels)
    figure = pyplot.figure(figsize=(GRID_COLUMNS * INCHES_PER_COLUMN, rows * INCHES_PER_GRID_ROW + 0.8))
    figure.suptitle(f"{dashboard['title']}  ({minutes:g} minutes to {time.strftime('%H:%M:%S', time.localtime(end_s))})",
                    fontsize=14, x=0.01, ha="left")
    top = 1 - 0.8 / (rows * INCHES_PER_GRID_ROW + 0.8)
    for panel in panels:
        grid = panel["gridPos"]
        box = [grid["x"] / GRID_COLUMNS, top * (1 - (grid["y"] + grid["h"]) / rows), grid["w"] / GRID_COLUMNS,
               top * grid["h"] / rows]
        if panel["type"] == "row":
            figure.text(box[0] + 0.005, box[1] + box[3] / 2, panel["title"], fontsize=12, weight="bold", va="center")
            continue
        axes = figure.add_axes(_inset(box))
        targets = [expand(t["expr"], rate_interval) for t in panel.get("targets", [])]
        legends = [t.get("legendFormat", "") for t in panel.get("targets", [])]
        if panel["type"] == "stat":
            _stat(axes, panel, api.query(targets[0]))
        else:
            _lines(axes, panel, [(api.query_range(t, start_s, end_s, step_s), legend)
                                 for t, legend in zip(targets, legends)], start_s, end_s)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out_path, dpi=80)
    pyplot.close(figure)


def _inset(box: list[float]) -> list[float]:
    x, y, w, h = box
    return [x + 0.03, y + 0.018, w - 0.04, h * 0.7]


def _stat(axes: Any, panel: dict[str, Any], result: list[dict[str, Any]]) -> None:
    axes.set_axis_off()
    axes.set_title(panel["title"], fontsize=9, loc="left")
    value = float(result[0]["value"][1]) if result else math.nan
    colour = _threshold_colour(panel, value)
    axes.text(0.5, 0.4, "no data" if math.isnan(value) else _format(value, _unit(panel)), ha="center",
              va="center", fontsize=22, color=colour, weight="bold", transform=axes.transAxes)


def _lines(axes: Any, panel: dict[str, Any], queries: Sequence[tuple[list[dict[str, Any]], str]],
           start_s: float, end_s: float) -> None:
    axes.set_title(panel["title"], fontsize=9, loc="left")
    axes.tick_params(labelsize=6)
    unit = _unit(panel)
    drawn = 0
    entries: tuple[list[Any], list[str]] = ([], [])
    for result, legend in queries:
        for series in result:
            points = [(float(t) - end_s, float(v)) for t, v in series["values"] if v not in ("NaN", "+Inf", "-Inf")]
            if not points:
                continue
            xs, ys = zip(*points)
            (line,) = axes.plot([x / 60 for x in xs], ys, linewidth=1)
            if drawn < LEGEND_ENTRIES_MAX:
                # Named here rather than by plot(label=): matplotlib leaves out labels that begin with "_",
                # as the internal topics' do.
                entries[0].append(line)
                entries[1].append(_legend(legend, series["metric"]))
            drawn += 1
    axes.set_xlim((start_s - end_s) / 60, 0)
    axes.set_xlabel("minutes", fontsize=6)
    axes.yaxis.set_major_formatter(lambda value, _: _format(value, unit))
    if drawn:
        axes.legend(*entries, fontsize=5, loc="upper left", frameon=False)
    else:
        axes.text(0.5, 0.5, "no data", ha="center", va="center", transform=axes.transAxes, color="grey")


def _legend(template: str, labels: dict[str, str]) -> str:
    text = PLACEHOLDER.sub(lambda match: labels.get(match.group(1), ""), template).strip()
    return text or ", ".join(f"{k}={v}" for k, v in labels.items()) or "value"


def _unit(panel: dict[str, Any]) -> str:
    return str(panel.get("fieldConfig", {}).get("defaults", {}).get("unit", "short"))


def _threshold_colour(panel: dict[str, Any], value: float) -> str:
    steps = panel.get("fieldConfig", {}).get("defaults", {}).get("thresholds", {}).get("steps", [])
    colour = "black"
    for step in steps:
        if step.get("value") is None or (not math.isnan(value) and value >= step["value"]):
            colour = step["color"]
    return {"green": "tab:green", "red": "tab:red", "blue": "tab:blue"}.get(colour, colour)


def _format(value: float, unit: str) -> str:
    if unit in ("bytes", "Bps"):
        for suffix in ("B", "KiB", "MiB", "GiB", "TiB"):
            if abs(value) < 1024:
                return f"{value:.3g} {suffix}{'/s' if unit == 'Bps' else ''}"
            value /= 1024
        return f"{value:.3g} PiB"
    if unit == "percentunit":
        return f"{value * 100:.3g}%"
    if unit == "s":
        return f"{value * 1000:.3g} ms" if abs(value) < 1 else f"{value:.3g} s"
    return f"{value:.4g}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m replog.monitoring.preview", description=__doc__.split("\n")[0])
    parser.add_argument("--prometheus", metavar="HOST:PORT",
                        help="the Prometheus to query (default: the local cluster's, from its cluster.json)")
    parser.add_argument("--data-dir", help="the local cluster's directory (default: the nearest .replog/)")
    parser.add_argument("--out", default="build/dashboards-preview", help="where the PNGs go")
    parser.add_argument("--minutes", type=float, default=15, help="how far back the panels look (default 15)")
    parser.add_argument("--dashboard", action="append", help="only this file of helm/replog/dashboards (repeatable)")
    args = parser.parse_args(argv)
    try:
        api = PrometheusApi(args.prometheus or _local_prometheus(args.data_dir))
        for path in sorted(DASHBOARDS_DIR.glob("*.json")):
            if args.dashboard and path.name not in args.dashboard:
                continue
            out_path = Path(args.out) / f"{path.stem}.png"
            render(json.loads(path.read_text(encoding="utf-8")), api, out_path, minutes=args.minutes)
            print(f"wrote {out_path}")
    except (PrometheusError, LookupError) as error:
        print(f"dashboards preview: {error}", file=sys.stderr)
        return 1
    return 0


def _local_prometheus(data_dir: str | None) -> str:
    from replog.dev.cluster_file import Cluster, find_data_dir
    from replog.dev.processes import DevError

    try:
        cluster = Cluster.load(data_dir or find_data_dir())
    except DevError as error:
        raise LookupError(f"{error} Or give --prometheus HOST:PORT.") from None
    if cluster.prometheus is None or not cluster.prometheus_alive:
        raise LookupError(f"the local cluster in {cluster.data_dir} runs no Prometheus; start it with "
                          "`replog dev up --monitoring`, or give --prometheus HOST:PORT.")
    return str(cluster.prometheus["address"])


if __name__ == "__main__":
    raise SystemExit(main())
