"""Render a results JSON as the Markdown of docs/benchmarks.md's results sections.

python -m bench.report bench/results/full-latest.json > /tmp/results.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _cell(metrics: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in metrics.items() if not isinstance(v, dict))


def render(report: dict[str, Any]) -> str:
    m = report["machine"]
    out: list[str] = []
    out.append(f"Run: `{report['mode']}` mode, {report['when']}, {report['wall_seconds']} s.\n")
    out.append("| Machine | |")
    out.append("|---|---|")
    settings = ", ".join(f"{k}={v}" for k, v in m["postgresql_settings"].items())
    rows = [
        ("CPU", f"{m['cpu_count']} × {m['cpu_model']}"),
        ("Memory", f"{m['memory_gib']} GiB"),
        ("Load average at the start", ", ".join(f"{x:.1f}" for x in m["load_average"])),
        ("OS", m["os"]),
        ("Python", m["python"]),
        ("PostgreSQL", m["postgresql"].split(" on ")[0]),
        ("PostgreSQL settings", settings),
        ("Server", m["server"]),
        (
            "Commit",
            f"{m['git_commit'][:12]}{' (with uncommitted changes)' if m['git_dirty'] else ''}",
        ),
    ]
    out += [f"| {k} | {v} |" for k, v in rows]
    out.append("")
    out.append("| Scenario | Case | Measured | Note |")
    out.append("|---|---|---|---|")
    for r in report["results"]:
        out.append(f"| {r['scenario']} | {r['case']} | {_cell(r['metrics'])} | {r['note']} |")
    out.append("")
    plans = report.get("plans")
    if plans:
        out.append(f"### Plans at {plans['size']:,} nodes\n")
        for group, by_name in plans.items():
            if group == "size":
                continue
            out.append(f"#### {group}\n")
            for name, plan in by_name.items():
                out.append(f"`{name}`:\n")
                out.append("```\n" + plan + "\n```\n")
    return "\n".join(out)


def main() -> int:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("bench/results/full-latest.json")
    print(render(json.loads(path.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
