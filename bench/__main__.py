"""``python -m bench``: run the benchmarks, print a table, write JSON.

    python -m bench            # quick: 10k nodes, short runs (a few minutes)
    python -m bench --full     # 10k, 100k and 1M nodes, longer runs; plans at 1M
    python -m bench --only ready,claim --sizes 10000

Results go to bench/results/<quick|full>-latest.json with the machine's
description; --plans writes the EXPLAIN plans of the largest graph there too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import (
    _baselines,
    _beads,
    _board,
    _events,
    _mcp,
    _orgkeys,
    _readpolicy,
    _scenarios,
    _webhooks,
)
from ._env import ROOT, Server, machine, server
from ._stats import Result

SCENARIOS = (
    "graph",
    "claim",
    "pooled",
    "pgqueuer",
    "pgbench",
    "wake",
    "patch",
    "policy",
    "webhook",
    "cli",
    "mcp",
    "codec",
    "beads",
    "board",
    "events",
    "readpolicy",
    "adversary",
    "limits",
    "orgkeys",
)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench", description=(__doc__ or "").split("\n\n")[0]
    )
    p.add_argument("--full", action="store_true", help="10k, 100k and 1M nodes, longer runs")
    p.add_argument("--smoke", action="store_true", help="tiny sizes: tests the harness, not skift")
    p.add_argument("--dsn", help="PostgreSQL server (default: SKIFT_TEST_DSN, else embedded)")
    p.add_argument("--sizes", help="graph sizes, comma-separated (default: by mode)")
    p.add_argument("--only", help=f"scenarios, comma-separated, of {', '.join(SCENARIOS)}")
    p.add_argument(
        "--event-sizes",
        help="events loaded for the events scenario, comma-separated "
        "(default: 100000 quick, 1000000,10000000 full)",
    )
    p.add_argument(
        "--attacks",
        help="the adversary scenario's attacks, comma-separated words each matching an "
        "attack's name (case-insensitive: 'flood' is the long-poll flood, 'reset' the rapid "
        "reset); default: every attack",
    )
    p.add_argument(
        "--out", type=Path, help="JSON output (default: bench/results/<mode>-latest.json)"
    )
    return p.parse_args(argv)


def _fmt(metrics: dict[str, Any]) -> str:
    parts: list[str] = []
    for k, v in metrics.items():
        if isinstance(v, dict) or k == "n":
            continue
        parts.append(f"{k}={v}")
    return "  ".join(parts)


def _ratios(results: list[Result]) -> list[Result]:
    """skift against its baselines, measured in this same invocation."""
    by = {(r.scenario, r.case): r.metrics for r in results}
    out: list[Result] = []
    for r in results:
        if r.scenario != "claim" or "pairs_per_s" not in r.metrics:
            continue
        c = int(r.case.split()[0])
        ours = r.metrics["pairs_per_s"]
        row: dict[str, Any] = {"skift_pairs_per_s": ours}
        for batch in (1, 10):
            peer = by.get(("pgqueuer", f"{c} consumer{'s' if c > 1 else ''}, batch {batch}"), {})
            if peer.get("jobs_per_s"):
                row[f"vs_pgqueuer_batch{batch}"] = round(ours / peer["jobs_per_s"], 2)
        tps = by.get(("pgbench", f"-N -c {c}"), {}).get("tps")
        if tps:
            row["vs_pgbench_tps"] = round(ours / tps, 3)
        out.append(Result("ratio", f"claim+complete, {c} concurrent", row, "higher is better"))
    rate = {
        (r.scenario, int(r.case.split()[0])): r.metrics["pairs_per_s"]
        for r in results
        if r.scenario in ("claim", "claim_pooled") and r.metrics.get("pairs_per_s")
    }
    top = max((c for s, c in rate if s == "claim"), default=0)
    if top > 8 and ("claim", 8) in rate:
        row = {"direct": round(rate["claim", top] / rate["claim", 8], 2)}
        if ("claim_pooled", top) in rate and ("claim_pooled", 8) in rate:
            row["through_pgbouncer"] = round(rate["claim_pooled", top] / rate["claim_pooled", 8], 2)
            row["through_pgbouncer_vs_direct_8"] = round(
                rate["claim_pooled", top] / rate["claim", 8], 2
            )
        out.append(Result("ratio", f"claim+complete, {top} / 8 claimers", row, "1.0 holds up"))
    ready = [r for r in results if r.scenario == "ready" and r.case.endswith(" unfiltered")]
    if len(ready) > 1:
        first, last = ready[0], ready[-1]
        out.append(
            Result(
                "ratio",
                f"ready p50 {last.case.split()[0]} / {first.case.split()[0]}",
                {"growth": round(last.metrics["p50_ms"] / first.metrics["p50_ms"], 2)},
                "1.0 is flat",
            )
        )
    return out


def _print(results: list[Result]) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        for r in results:
            print(f"{r.scenario:9} {r.case:40} {_fmt(r.metrics)}  {r.note}")
        return
    table = Table(title="skift benchmarks", show_lines=False)
    for col in ("scenario", "case", "measured", "note"):
        table.add_column(col, overflow="fold")
    for r in results:
        table.add_row(r.scenario, r.case, _fmt(r.metrics), r.note)
    Console(width=200).print(table)


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


async def _run(args: argparse.Namespace, srv: Server) -> dict[str, Any]:
    if args.smoke:
        cfg = _scenarios.Config.smoke()
    else:
        cfg = _scenarios.Config.full_run() if args.full else _scenarios.Config.quick()
    if args.sizes:
        sizes = tuple(int(s) for s in args.sizes.split(","))
        cfg.sizes, cfg.explain_at = sizes, max(sizes)
    only = set(args.only.split(",")) if args.only else set(SCENARIOS)
    unknown = only - set(SCENARIOS)
    if unknown:
        raise SystemExit(f"unknown scenarios: {', '.join(sorted(unknown))}")
    cfg.cli = cfg.cli and "cli" in only
    results: list[Result] = []
    extra: dict[str, Any] = {}
    started = time.perf_counter()
    if "graph" in only:
        for size in cfg.sizes:
            _log(f"graph scenarios at {size} nodes")
            rs, ex = await _scenarios.graph_scenarios(srv, cfg, size)
            results += rs
            extra[f"graph_{size}"] = ex.get("graph")
            if "plans" in ex:
                extra["plans"] = {"size": size, **ex["plans"]}
    if "claim" in only:
        for c in cfg.claimers:
            _log(f"claim with {c} claimers")
            results.append(await _scenarios.claim_throughput(srv, cfg, c))
    if "pooled" in only:
        from . import _pooled

        with _pooled.pgbouncer(srv) as bouncer:
            if bouncer is None:
                _log("no PgBouncer 1.21+ (SKIFT_PGBOUNCER, or .ci/pgbouncer): no pooled rows")
            for c in cfg.claimers if bouncer is not None else ():
                _log(f"claim with {c} claimers through PgBouncer")
                results.append(await _scenarios.claim_throughput(srv, cfg, c, pooler=bouncer))
    if "pgqueuer" in only:
        for c in cfg.claimers:
            for batch in cfg.pgqueuer_batches:
                _log(f"pgqueuer with {c} consumers, batch {batch}")
                results.append(
                    await _baselines.pgqueuer(srv, cfg.claim_pool, c, batch, cfg.pgqueuer_seconds)
                )
    if "pgbench" in only:
        for c in cfg.claimers:
            _log(f"pgbench -c {c}")
            results.append(await _baselines.pgbench(srv, c, cfg.pgbench_seconds))
    if "wake" in only:
        _log("wake latency")
        results.append(await _scenarios.wake_latency(srv, cfg))
    if "patch" in only:
        _log("1,000-node patch")
        results.append(await _scenarios.big_patch(srv, cfg))
    if "policy" in only:
        _log("policy")
        results.append(await _scenarios.policy_cost(cfg))
    if "beads" in only:
        _log("beads import")
        results += await _beads.beads_import(srv, (200,) if args.smoke else (1_000, 100_000))
    if "webhook" in only:
        _log("webhook write latency (0 vs 10 endpoints) and delivery lag")
        results += await _webhooks.scenarios(
            srv, cfg.webhook_writes, cfg.webhook_deliveries, cfg.webhook_hold
        )
    if "board" in only:
        for size in cfg.sizes[:1]:
            _log(f"the board's pages at {size} nodes")
            results += await _board.board_pages(srv, size, cfg.ready_iters)
    if "events" in only:
        if args.event_sizes:
            ev_sizes = tuple(int(s) for s in args.event_sizes.split(","))
        else:
            ev_sizes = (
                (20_000,) if args.smoke else (1_000_000, 10_000_000) if cfg.full else (100_000,)
            )
        _log(f"events: append and a stream page, one table and partitioned, at {ev_sizes}")
        results += await _events.scenarios(
            srv,
            ev_sizes,
            5 if args.smoke else 200,
            native=() if args.smoke else ("1 month", "1 year"),
        )
    if "readpolicy" in only:
        for size in cfg.sizes:
            _log(f"ready with the read policy on, at {size} nodes")
            results += await _readpolicy.ready_read_policy(
                srv, size, cfg.ready_iters, rounds=2 if args.smoke else 10
            )
    if "adversary" in only:
        from . import _adversary

        _log("adversary: a bystander's reads, quiet and under each attack")
        picked = tuple(w for w in (args.attacks or "").split(",") if w.strip())
        results += await _adversary.scenario(srv, smoke=args.smoke, attacks=picked)
    if "limits" in only:
        from . import _limits

        _log("limits: claim + complete and Ready through skift serve, limits on and off")
        results += await _limits.scenario(srv, smoke=args.smoke)
    if "orgkeys" in only:
        for size in cfg.sizes:
            _log(f"migration 0025's keys, before and after, at {size} nodes")
            results += await _orgkeys.org_keys(srv, size, rounds=2 if args.smoke else 10)
    if "cli" in only and "graph" not in only:
        _log("cli")
        results += _scenarios.cli_startup(None)
    if "codec" in only:
        from . import _codec

        _log("the server's decode of a 4.1 MB Patch")
        results.append(_codec.decode_big_patch(2 if args.smoke else 5))
    if "mcp" in only:
        _log("skift-mcp start-up over stdio")
        results += await asyncio.to_thread(_mcp.mcp_startup, None, 2 if args.smoke else _mcp.RUNS)
    results += _ratios(results)
    return {
        "mode": "smoke" if args.smoke else "full" if cfg.full else "quick",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "wall_seconds": round(time.perf_counter() - started, 1),
        "machine": machine(srv),
        "results": [r.as_json() for r in results],
        **extra,
    }


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    with server(args.dsn) as srv:
        _log(f"PostgreSQL from {srv.source}")
        report = asyncio.run(_run(args, srv))
    results = [Result(r["scenario"], r["case"], r["metrics"], r["note"]) for r in report["results"]]
    _print(results)
    out = args.out or ROOT / "bench" / "results" / f"{report['mode']}-latest.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    _log(f"wrote {out} ({report['wall_seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
