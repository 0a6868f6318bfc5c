"""Write the chart's dashboards and alert rules from the code that defines them.

`python -m replog.monitoring.generate` (or `make dashboards`) rewrites
helm/replog/dashboards/*.json and helm/replog/rules/replog.rules.yaml;
tests/monitoring checks that the committed files are what it writes.
"""

from __future__ import annotations

from pathlib import Path

from replog.monitoring import rules

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS_DIR = ROOT / "helm" / "replog" / "dashboards"
RULES_PATH = ROOT / "helm" / "replog" / "rules" / "replog.rules.yaml"


def files() -> dict[Path, str]:
    """Every generated file and its content."""
    from replog.monitoring import dashboards  # the grafana-foundation-sdk is a development dependency

    generated = {DASHBOARDS_DIR / name: text for name, text in dashboards.render().items()}
    generated[RULES_PATH] = rules.rule_file()
    return generated


def main() -> int:
    for path, text in files().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
