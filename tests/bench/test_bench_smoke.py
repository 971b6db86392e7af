"""The benchmark harness runs end to end (``python -m bench --smoke``).

Tiny sizes, every scenario's code path once: this proves ``make bench`` works
from a clean clone, not how fast skift is. Speed is measured by the harness
and recorded in docs/benchmarks.md, never asserted in a test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pgbouncer import prepared_binary

ROOT = Path(__file__).resolve().parents[2]


def test_bench_smoke_writes_a_table_and_json(pg_server_dsn: str, tmp_path: Path) -> None:
    out = tmp_path / "smoke.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--dsn", pg_server_dsn, "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["mode"] == "smoke"
    assert {"cpu_count", "postgresql", "python", "git_commit"} <= report["machine"].keys()
    scenarios = {r["scenario"] for r in report["results"]}
    assert {
        "ready",
        "claim",
        "pgqueuer",
        "pgbench",
        "wake",
        "patch",
        "policy",
        "webhook",
        "ratio",
        "board",
        "codec",
    } <= (scenarios)
    if prepared_binary() is not None:  # the claim rows through PgBouncer (bench._pooled)
        assert "claim_pooled" in scenarios
    naive = next(r for r in report["results"] if r["case"].endswith("naive in-process"))
    assert naive["metrics"]["same_page"] is True  # the naive baseline computes the same page
    assert "skift benchmarks" in done.stdout
