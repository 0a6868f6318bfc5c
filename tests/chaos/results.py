"""The results table of a full chaos run, written into docs/RELIABILITY.md between two markers."""

from __future__ import annotations

import datetime
import os
import subprocess
from collections.abc import Sequence

from tests.chaos.checker import Report

BEGIN = "<!-- chaos results: written by tests/chaos (make chaos); edits between these markers are replaced -->"
END = "<!-- end of chaos results -->"
DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "RELIABILITY.md")


def table(rows: Sequence[tuple[Report, int, str]]) -> str:
    """rows: (report, min.insync.replicas, outcome) in the order the scenarios ran."""
    lines = [
        "| scenario | min.insync.replicas | runs | acknowledged | lost | duplicates | divergence "
        "| unacked present | truncations seen | result |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for report, min_isr, outcome in rows:
        lost = str(report.lost_all)
        if len(report.lost) != report.lost_all:
            lost += f" (+{len(report.lost) - report.lost_all} acks=1)"
        lines.append(
            f"| {report.scenario} | {min_isr} | {report.runs} | {report.acknowledged:,} | {lost} "
            f"| {report.duplicates} | {len(report.divergence)} | {report.unacknowledged_present} "
            f"| {report.truncations_detected} | {outcome} |")
    return "\n".join(lines)


def totals(rows: Sequence[tuple[Report, int, str]]) -> str:
    strict = [r for r, min_isr, _ in rows if min_isr >= 2]
    return (f"Fault runs with min.insync.replicas=2: {sum(r.runs for r in strict)} in {len(strict)} scenarios; "
            f"acks=all writes acknowledged {sum(r.acknowledged_all for r in strict):,}, lost "
            f"{sum(r.lost_all for r in strict)}; replicas differing below the HW: "
            f"{sum(len(r.divergence) for r in strict)}.")


def write(rows: Sequence[tuple[Report, int, str]], elapsed_s: float, base_seed: int) -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=os.path.dirname(__file__)).stdout.strip() or "unknown"
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    section = "\n".join([
        BEGIN,
        "",
        f"`make chaos` on {when}, commit {commit}, {elapsed_s / 60:.1f} minutes, "
        f"`REPLOG_CHAOS_SEED={base_seed}`.",
        "",
        table(rows),
        "",
        totals(rows),
        "",
        END,
    ])
    with open(DOC, encoding="utf-8") as handle:
        text = handle.read()
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + section + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    with open(DOC, "w", encoding="utf-8") as handle:
        handle.write(text)
