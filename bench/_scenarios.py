"""The scenarios of issue 9, each in scratch databases of its own."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import skift
from skift_pg import PgStore

from . import _graph, _naive, _trace
from ._env import Server, scratch
from ._stats import Result, summary, timed, timed_pair

if TYPE_CHECKING:
    from ._pooled import Pooler


@dataclass
class Config:
    """How much of each scenario to run."""

    full: bool
    sizes: tuple[int, ...]
    ready_iters: int
    claim_pool: int
    claimers: tuple[int, ...]
    wake_iters: int
    patch_reps: int
    patch_nodes: int
    pgbench_seconds: int
    grpc_iters: int
    explain_at: int  # the size whose plans are recorded (the largest)
    cli: bool = True
    grpc: bool = True
    projects: int = 1000
    claim_projects: int = 10
    pgqueuer_batches: tuple[int, ...] = (1, 10)
    pgqueuer_seconds: float = 5.0
    graph_claims: int = 10
    webhook_writes: int = 200
    webhook_deliveries: int = 30
    webhook_hold: float = 10.0  # seconds the slow receiver holds each POST

    @classmethod
    def quick(cls) -> Config:
        return cls(
            full=False,
            sizes=(10_000,),
            ready_iters=30,
            claim_pool=400,
            claimers=(1, 8, 32),
            wake_iters=10,
            patch_reps=2,
            patch_nodes=1000,
            pgbench_seconds=5,
            grpc_iters=60,
            explain_at=10_000,
        )

    @classmethod
    def smoke(cls) -> Config:
        """Every code path once, tiny: the CI test of the harness itself (no real numbers)."""
        return cls(
            full=False,
            sizes=(600,),
            ready_iters=2,
            claim_pool=12,
            claimers=(2,),
            wake_iters=1,
            patch_reps=1,
            patch_nodes=60,
            pgbench_seconds=1,
            grpc_iters=2,
            explain_at=600,
            cli=False,
            grpc=False,
            projects=30,
            claim_projects=3,
            pgqueuer_batches=(1,),
            pgqueuer_seconds=0.5,
            graph_claims=2,
            webhook_writes=4,
            webhook_deliveries=2,
            webhook_hold=0.5,
        )

    @classmethod
    def full_run(cls) -> Config:
        return cls(
            full=True,
            sizes=(10_000, 100_000, 1_000_000),
            ready_iters=100,
            claim_pool=2000,
            claimers=(1, 8, 32),
            wake_iters=30,
            patch_reps=3,
            patch_nodes=1000,
            pgbench_seconds=15,
            grpc_iters=100,
            explain_at=1_000_000,
            pgqueuer_seconds=10.0,
            graph_claims=30,
            webhook_writes=1000,
            webhook_deliveries=100,
        )


def _client(
    dsn: str, principal: skift.PrincipalSpec, *, max_size: int = 2, pooler_prepares: bool = False
) -> skift.LocalSkift:
    """A skift handle with a connection pool of its own, as a separate process would have
    (``pooler_prepares``: ``dsn`` is a PgBouncer that keeps prepared statements)."""
    store = PgStore(dsn, min_size=1, max_size=max_size, pooler_prepares=pooler_prepares)
    return skift.LocalSkift(store, principal=principal)


def _size_label(size: int) -> str:
    if size >= 1_000_000:
        return f"{size // 1_000_000}M"
    return f"{size // 1000}k" if size >= 1000 else str(size)


# ------------------------------------------------------------------------ ready


def ready_cases(g: _graph.Graph) -> dict[str, dict[str, Any]]:
    return {
        "unfiltered": {},
        "one project": {"projects": [g.projects[len(g.projects) // 2]]},
        "label backend": {"labels": ["backend"]},
        "kind bug, p0-p1": {"kinds": ["bug"], "min_priority": "p1"},
    }


async def graph_scenarios(
    srv: Server, cfg: Config, size: int
) -> tuple[list[Result], dict[str, Any]]:
    """Ready (library, gRPC, naive), ClaimNext on a large graph, an edge into it, Explain deep."""
    out: list[Result] = []
    extra: dict[str, Any] = {}
    label = _size_label(size)
    async with scratch(srv, f"graph_{label.lower()}") as dsn:
        g = await asyncio.to_thread(_graph.load, dsn, size=size, projects=cfg.projects)
        extra["graph"] = {
            "nodes": g.nodes,
            "open": g.open,
            "edges": g.edges,
            "live_leases": g.leases,
            "held_projects": g.held_projects,
            "held_nodes": g.held_nodes,
            "load_seconds": round(g.load_seconds, 1),
        }
        out.append(
            Result(
                "graph",
                f"load {label}",
                {"seconds": round(g.load_seconds, 1), "nodes": g.nodes, "open": g.open},
                "COPY into the migrated schema (bench-only loader)",
            )
        )
        agent = _client(dsn, skift.Agent(_graph.AGENT))
        user = _client(dsn, skift.User(_graph.USER))
        async with agent, user:
            lib_p50: float | None = None
            for case, flt in ready_cases(g).items():
                page = await agent.ready(limit=50, **flt)
                samples = await timed(lambda flt=flt: agent.ready(limit=50, **flt), cfg.ready_iters)
                s = summary(samples)
                s["rows"] = len(page.nodes)
                s["held_count"] = page.held_count
                if case == "unfiltered":
                    lib_p50 = s["p50_ms"]
                out.append(Result("ready", f"{label} {case}", s, "agent, page of 50, library"))

            # a walk's third page: what a page token costs (read after two pages of 50)
            p2 = await agent.ready(limit=50, page=(await agent.ready(limit=50)).next_page)
            samples = await timed(lambda: agent.ready(limit=50, page=p2.next_page), cfg.ready_iters)
            out.append(Result("ready", f"{label} page 3", summary(samples), "agent, from a token"))

            # where an unfiltered page's time goes, statement by statement (ms per page)
            reps = max(2, cfg.ready_iters // 5)
            with _trace.trace() as t:
                for _ in range(reps):
                    await agent.ready(limit=50)
            out.append(
                Result(
                    "ready",
                    f"{label} unfiltered, per statement",
                    {
                        k: round(v * 1000 / reps, 2)
                        for k, v in sorted(t.seconds.items(), key=lambda kv: -kv[1])
                    },
                    "ms per page spent in each query (client-side wall time)",
                )
            )

            # the naive baseline: every node into Python, readiness recomputed there
            fetch, compute, naive_page = await _naive.ready_page(dsn, limit=50)
            lib_page = await agent.ready(limit=50)
            same = [n.ref for n in lib_page.nodes] == naive_page
            out.append(
                Result(
                    "ready",
                    f"{label} naive in-process",
                    {
                        "fetch_ms": round(fetch * 1000, 1),
                        "compute_ms": round(compute * 1000, 1),
                        "total_ms": round((fetch + compute) * 1000, 1),
                        "sql_speedup": round((fetch + compute) * 1000 / lib_p50, 1)
                        if lib_p50
                        else None,
                        "same_page": same,
                    },
                    "load every row, recompute readiness and the turn order in Python",
                )
            )

            # ClaimNext + complete on the large graph, one claimer
            pairs: list[float] = []
            claims: list[float] = []
            for _ in range(cfg.graph_claims):
                t0 = time.perf_counter()
                c = await agent.claim_next()
                t1 = time.perf_counter()
                await agent.complete(c.node.ref, lease=c.lease.id)
                pairs.append(time.perf_counter() - t0)
                claims.append(t1 - t0)
            out.append(
                Result(
                    "claim",
                    f"{label} graph, 1 claimer",
                    {**summary(pairs), "claim_p50_ms": summary(claims)["p50_ms"]},
                    "claim_next + complete, ms per pair",
                )
            )

            # a patch adding one edge from the tail of a 100-node chain (cycle check walks it)
            tail = f"{g.chain}#{g.chain_length}"
            targets = iter(g.edge_targets)

            async def add_edge() -> None:
                target = next(targets)
                await user.patch(target.split("#")[0], [skift.AddEdge(from_=tail, to=target)])

            samples = await timed(
                add_edge, min(max(2, cfg.ready_iters // 3), len(g.edge_targets) - 2), warmup=1
            )
            out.append(
                Result("patch", f"{label} add one edge", summary(samples), "from a node 100 deep")
            )

            samples = await timed(lambda: user.explain(tail), max(2, cfg.ready_iters // 3))
            out.append(Result("explain", f"{label} node 100 deep", summary(samples), ""))

            # the same page through gRPC, and one node read both ways
            if cfg.grpc:
                async with _server(dsn) as (remote, url), await _same_principal(dsn, remote) as me:
                    # like for like: in process as the principal the socket names (the
                    # server's owner), so both sides read as one principal, one cursor
                    # in process and through the server interleaved (timed_pair)
                    a, b = await timed_pair(
                        lambda: me.ready(limit=50), lambda: remote.ready(limit=50), cfg.grpc_iters
                    )
                    local, rem = summary(a), summary(b)
                    out.append(
                        Result(
                            "ready",
                            f"{label} unfiltered via gRPC",
                            {
                                **rem,
                                "in_process_p50_ms": local["p50_ms"],
                                "gap_ms": round(rem["p50_ms"] - local["p50_ms"], 3),
                            },
                            "the server's owner both ways, calls interleaved: unix socket,"
                            " server in another process",
                        )
                    )
                    if size == cfg.sizes[0] and cfg.cli:
                        out += await asyncio.to_thread(cli_startup, url)
                    if size == cfg.sizes[0]:
                        ref = "p0001#1"
                        a, b = await timed_pair(
                            lambda: me.get(ref), lambda: remote.get(ref), cfg.grpc_iters
                        )
                        lg, rg = summary(a), summary(b)
                        out.append(
                            Result(
                                "grpc",
                                "get one node",
                                {
                                    "in_process_p50_ms": lg["p50_ms"],
                                    "grpc_p50_ms": rg["p50_ms"],
                                    "grpc_p95_ms": rg["p95_ms"],
                                    "overhead_ms": round(rg["p50_ms"] - lg["p50_ms"], 3),
                                },
                                "round trip through skift-serve vs in-process, the server's owner"
                                " both ways, calls interleaved",
                            )
                        )

            if size == cfg.explain_at:
                extra["plans"] = await _plans(dsn, agent, ready_cases(g)["one project"])
    return out, extra


async def _same_principal(dsn: str, remote: Any) -> skift.LocalSkift:
    """An in-process handle acting as the principal ``remote``'s calls act as."""
    me = await remote.whoami()
    return _client(dsn, skift.PrincipalSpec(me.principal, skift.PrincipalKind(me.kind)))


async def _plans(
    dsn: str, agent: skift.LocalSkift, one: dict[str, Any]
) -> dict[str, dict[str, str]]:
    """EXPLAIN (ANALYZE, BUFFERS) of every read of a Ready page and of a ClaimNext + complete."""
    with _trace.trace() as t:
        await agent.ready(limit=50)
    ready = await _trace.explain(dsn, t)
    with _trace.trace() as t:
        await agent.ready(limit=50, **one)
    one = await _trace.explain(dsn, t, only=("ready", "held_count"))
    with _trace.trace() as t:
        c = await agent.claim_next()
        await agent.complete(c.node.ref, lease=c.lease.id)
    claim = await _trace.explain(dsn, t)
    return {"ready": ready, "ready one project": one, "claim_next + complete": claim}


def _spawn(argv: list[str], log: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)


@contextlib.asynccontextmanager
async def _server(dsn: str, *flags: str) -> AsyncGenerator[tuple[Any, str]]:
    """``skift-serve`` over the database in another process (with ``flags``), and a client
    on its unix socket."""
    import skift_server

    folder = Path(tempfile.mkdtemp(prefix="skift-bench-", dir="/tmp"))
    sock = folder / "s.sock"
    log = (folder / "serve.log").open("wb")
    proc = _spawn(
        [
            sys.executable,
            "-m",
            "skift_server",
            "serve",
            "--dsn",
            dsn,
            "--socket",
            str(sock),
            *flags,
        ],
        log,
    )
    remote: Any = None
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError((folder / "serve.log").read_text(errors="replace"))
            if sock.exists():
                remote = skift_server.connect(f"unix://{sock}")
                try:
                    await remote.list_projects(limit=1)
                    break
                except Exception:
                    await remote.close()
                    remote = None
            if time.monotonic() > deadline:
                raise RuntimeError("skift-serve did not start within 60 s")
            await asyncio.sleep(0.05)
        yield remote, f"unix://{sock}"
    finally:
        if remote is not None:
            await remote.close()
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


serve = _server


# ------------------------------------------------------------------------ claim


async def claim_throughput(
    srv: Server, cfg: Config, claimers: int, *, pooler: Pooler | None = None
) -> Result:
    """``claimers`` concurrent agents claim and complete, measured as pgqueuer's rows are
    (_baselines.pgqueuer): pairs completed per second over ``cfg.pgqueuer_seconds`` from
    the first completed pair, each claimer's pool opened before the clock starts. The
    pool of ready nodes is sized so it does not drain within the window; a pool that
    drains first ends the window at its last pair (the note says so).

    With ``pooler`` (bench._pooled) each claimer connects through that PgBouncer, which
    keeps prepared statements, its DSN saying ``pooler=transaction-prepared``, and the
    server connections are settled first (``_pooled.settle``): the row is
    ``claim_pooled``."""
    seconds = cfg.pgqueuer_seconds
    # enough ready nodes for the window at well over today's rate, and never fewer than asked
    pool = max(cfg.claim_pool, int(seconds * 1000))
    tag = "pooled" if pooler else "claim"
    async with scratch(srv, f"{tag}_c{claimers}") as dsn:
        await asyncio.to_thread(
            _graph.load, dsn, size=pool, projects=cfg.claim_projects, chain=0, pool=True
        )
        to = dsn if pooler is None else pooler.through(dsn)
        handles = [
            _client(to, skift.Agent(f"claimer-{i}"), pooler_prepares=pooler is not None)
            for i in range(claimers)
        ]
        claims: list[float] = []
        completes: list[float] = []
        stamps: list[float] = []
        async with contextlib.AsyncExitStack() as stack:
            for h in handles:
                await stack.enter_async_context(h)
            if pooler is not None:
                from . import _pooled

                await _pooled.settle(pooler, handles)
            start = asyncio.Event()
            stop = asyncio.Event()
            first = asyncio.Event()

            async def work(h: skift.LocalSkift) -> None:
                await start.wait()
                while not stop.is_set():
                    t0 = time.perf_counter()
                    try:
                        c = await h.claim_next()
                    except skift.NothingReady:
                        return
                    t1 = time.perf_counter()
                    await h.complete(c.node.ref, lease=c.lease.id)
                    t2 = time.perf_counter()
                    claims.append(t1 - t0)
                    completes.append(t2 - t1)
                    stamps.append(t2)
                    first.set()

            tasks = [asyncio.create_task(work(h)) for h in handles]
            await asyncio.sleep(0)
            start.set()
            # the clock starts at the first pair (or when every claimer found nothing ready)
            waiter = asyncio.create_task(first.wait())
            await asyncio.wait([waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            start_at = stamps[0] if stamps else time.perf_counter()
            rest = [t for t in tasks if not t.done()]
            if rest:
                await asyncio.wait(rest, timeout=seconds)
            drained = all(t.done() for t in tasks)  # every claimer found nothing ready
            stop.set()
            await asyncio.gather(*tasks)
            end_at = stamps[-1] if drained else start_at + seconds
            done = sum(1 for t in stamps if t <= end_at)
            # round trips of one claim + complete, on a quiet pool
            rt: dict[str, Any] = {}
            if claimers == 1 and pooler is None:
                await _graph_more(dsn)
                with _trace.trace() as t:
                    c = await handles[0].claim_next()
                    await handles[0].complete(c.node.ref, lease=c.lease.id)
                rt = {
                    "statements_per_pair": t.statements,
                    "round_trips_per_pair": await _round_trips_per_pair(dsn),
                    "by_query": dict(t.counts),
                }
        cs, ks = summary(claims), summary(completes)
        how = "" if pooler is None else f" through PgBouncer, {pooler.pool_size} server connections"
        return Result(
            "claim" if pooler is None else "claim_pooled",
            f"{claimers} claimer{'s' if claimers > 1 else ''}{how}",
            {
                "pairs": done,
                "pairs_per_s": round(done / max(end_at - start_at, 1e-9), 1),
                "claim_p50_ms": cs["p50_ms"],
                "claim_p95_ms": cs["p95_ms"],
                "complete_p50_ms": ks["p50_ms"],
                "complete_p95_ms": ks["p95_ms"],
                **rt,
            },
            f"{seconds:g} s from the first pair, as pgqueuer's rows; a pool of {pool} ready"
            f" nodes over {cfg.claim_projects} projects"
            + (" (drained before the window ended)" if drained else ""),
        )


async def _round_trips_per_pair(dsn: str) -> int:
    """Round trips of one claim + complete, counted on the wire (_trace.round_trips): a
    warm-up pair first (the handle's first call reads its principal), then one counted."""
    async with _trace.round_trips(dsn) as (counted, rt):
        handle = _client(counted, skift.Agent("claimer-0"), max_size=1)
        async with handle as h:
            for _ in range(2):
                rt.count, rt.counting = 0, True
                c = await h.claim_next()
                await h.complete(c.node.ref, lease=c.lease.id)
                rt.counting = False
    return rt.count


async def _graph_more(dsn: str) -> None:
    """Put a few more ready nodes in the pool, which may have drained (for the round-trip
    count)."""
    async with _client(dsn, skift.User(_graph.USER)) as u:
        slug = (await u.list_projects(limit=1))[0].slug
        await u.patch(slug, [skift.CreateNode(title=f"more {i}") for i in range(3)])


# ------------------------------------------------------------------------- wake


async def wake_latency(srv: Server, cfg: Config) -> Result:
    """ClaimNext with wait, from a blocker's completion in another connection to the claim."""
    async with scratch(srv, "wake") as dsn:
        person = _client(dsn, skift.User("person"))
        waiter = _client(dsn, skift.Agent("waiter"))
        after_commit: list[float] = []
        async with person, waiter:
            proj = await person.create_project("Wake")
            for i in range(cfg.wake_iters + 1):
                res = await person.patch(
                    proj.slug,
                    [
                        skift.CreateNode(alias="gate", title=f"gate {i}", assignee_kind="user"),
                        skift.CreateNode(alias="work", title=f"work {i}", blocked_by=("gate",)),
                    ],
                )
                task = asyncio.create_task(
                    waiter.claim_next(wait=timedelta(seconds=10), projects=[proj.slug])
                )
                await asyncio.sleep(0.3)  # the waiter is now parked on its wake-up
                await person.complete(res.created["gate"])
                t1 = time.perf_counter()
                claim = await task
                if i:  # the first one warms the listener up
                    after_commit.append(time.perf_counter() - t1)
                assert claim.node.ref == res.created["work"]
        return Result(
            "wake",
            "claim_next(wait) after a blocker completes",
            summary(after_commit),
            "ms from the completing commit to the claim returning (NOTIFY wake-up)",
        )


# ------------------------------------------------------------------------ patch


def decomposition(n: int) -> list[skift.CreateNode]:
    """n nodes: an epic every 10, nine children under it, each blocked by the one before."""
    ops: list[skift.CreateNode] = []
    for i in range(n):
        if i % 10 == 0:
            ops.append(skift.CreateNode(alias=f"n{i}", title=f"epic {i}"))
        else:
            ops.append(
                skift.CreateNode(
                    alias=f"n{i}",
                    title=f"step {i}",
                    parent=f"n{i - i % 10}",
                    blocked_by=(f"n{i - 1}",) if i % 10 > 1 else (),
                    labels=("bench",),
                )
            )
    return ops


async def big_patch(srv: Server, cfg: Config) -> Result:
    """One patch creating ``patch_nodes`` nodes with aliases, parents and edges."""
    async with scratch(srv, "patch") as dsn:
        user = _client(dsn, skift.User("planner"))
        samples: list[float] = []
        stmts = 0
        async with user:
            for rep in range(cfg.patch_reps + 1):
                proj = await user.create_project(f"Plan {rep}")
                ops = decomposition(cfg.patch_nodes)
                with _trace.trace() as t:
                    t0 = time.perf_counter()
                    await user.patch(proj.slug, ops)
                    elapsed = time.perf_counter() - t0
                if rep:
                    samples.append(elapsed)
                    stmts = t.statements
        edges = sum(len(o.blocked_by) for o in decomposition(cfg.patch_nodes))
        return Result(
            "patch",
            f"{cfg.patch_nodes}-node decomposition",
            {**summary(samples), "statements": stmts},
            f"one patch: {cfg.patch_nodes} creates, {cfg.patch_nodes // 10} epics, {edges} edges",
        )


# ----------------------------------------------------------------------- policy


async def policy_cost(cfg: Config) -> Result:
    """The default Rego policy's cost per patch operation, on the requests a real patch makes."""
    policy = skift.Policy.default()
    captured: list[dict[str, Any]] = []
    original = policy.deny

    def recording(request: dict[str, Any], tenant: object = None) -> list[dict[str, str]]:
        captured.append(request)
        return original(request, tenant)

    policy.deny = recording  # type: ignore[method-assign]
    async with skift.open("memory:", principal=skift.User("ada"), policy=policy) as sk:
        proj = await sk.create_project("Policy")
        await sk.patch(proj.slug, decomposition(100))
    big = max(captured, key=lambda r: len(r["intents"]))
    one = {**big, "intents": big["intents"][:1]}
    reps = 200 if cfg.full else 50
    t0 = time.perf_counter()
    for _ in range(reps):
        original(one)
    single = (time.perf_counter() - t0) / reps
    t0 = time.perf_counter()
    for _ in range(max(3, reps // 20)):
        original(big)
    many = (time.perf_counter() - t0) / max(3, reps // 20)
    return Result(
        "policy",
        "default policy per operation",
        {
            "one_op_us": round(single * 1e6, 1),
            "per_op_us_in_100": round(many / len(big["intents"]) * 1e6, 1),
            "ops": len(big["intents"]),
        },
        "regorus evaluation of the resolved request",
    )


# -------------------------------------------------------------------------- cli


def sweep_state_file(directory: Path, items: int) -> Path:
    """A ce-sweep state file of ``items`` Slack-like items (``skift sweep``, seed 002)."""
    from skift.sweep import emit_document

    records = {
        f"slack:C42:{1699990000 + i}.000100": {
            "source": "slack:C42",
            "id": f"{1699990000 + i}.000100",
            "status": ("ingested", "acknowledged", "analyzed", "fix_pending")[i % 4],
            "title": f"Feedback {i}: the export button does nothing",
            "url": f"https://example.slack.com/archives/C42/p{1699990000 + i}000100",
            "body": "The export button does nothing when the report is large. " * 3,
            "labels": ["export", "ux"],
            "reactions": {"eyes": 2, "thread": {"replies": i % 5}},
        }
        for i in range(items)
    }
    doc = {
        "schema_version": 1,
        "lease": {
            "writer": "sweep-cron",
            "timestamp": "2026-07-02T12:00:00+00:00",
            "ttl_minutes": 60,
        },
        "sources": {"slack:C42": {"cursor": f"{1699990000 + items}.000100"}},
        "items": records,
    }
    path = directory / "state.yml"
    path.write_text(emit_document(doc), encoding="utf-8")
    return path


def cli_startup(server_url: str | None) -> list[Result]:
    """``skift --help`` and ``skift ready`` as new processes (the CLI's own entry point)."""
    exe = Path(sys.executable).with_name("skift")
    if not exe.exists():
        return [Result("cli", "skift --help", {}, "skipped: no skift command in this environment")]
    probe = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        return [Result("cli", "skift --help", {}, "skipped: `skift --help` fails")]

    # As a user's shell runs it: Python may cache bytecode (an environment that
    # sets PYTHONDONTWRITEBYTECODE would recompile every module in every run,
    # which measures the compiler, not skift). The first run writes the caches.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def wall(argv: list[str]) -> dict[str, float]:
        """p50/p95 wall time of 6 runs after a warm one, and the p50 CPU time of the process
        (user + system: what the machine's load inflates least; a quiet machine's wall time)."""
        import resource

        runs: list[float] = []
        cpu: list[float] = []
        for _ in range(7):
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run(argv, capture_output=True, timeout=60, check=True, env=env)
            runs.append(time.perf_counter() - t0)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
        # the first run warms the OS file cache and writes bytecode
        return {**summary(runs[1:]), "cpu_p50_ms": summary(cpu[1:])["p50_ms"]}

    out = [
        Result(
            "cli",
            "python -c pass",
            wall([sys.executable, "-c", "pass"]),
            "the floor: the interpreter alone, as a new process (read the rows below against it)",
        ),
        Result("cli", "skift --help", wall([str(exe), "--help"]), "new process, into a pipe"),
    ]
    with tempfile.TemporaryDirectory() as d:
        state = sweep_state_file(Path(d), 5000)
        out.append(
            Result(
                "cli",
                "skift sweep read",
                wall([str(exe), "sweep", "read", "--state", str(state)]),
                f"new process, a 5,000-item state file ({state.stat().st_size // 1024} KiB)",
            )
        )
    if server_url is None:
        out.append(Result("cli", "skift ready", {}, "skipped: runs with the graph scenario"))
    else:
        argv = [str(exe), "ready", "--server", server_url, "--json", "--limit", "50"]
        out.append(
            Result(
                "cli",
                "skift ready",
                wall(argv),
                "new process, page of 50 from skift-serve over the unix socket (10k graph)",
            )
        )
        argv = [str(exe), "show", "p0001#1", "--server", server_url]
        out.append(
            Result(
                "cli",
                "skift show",
                wall(argv),
                "new process, one node from skift-serve over the unix socket (10k graph)",
            )
        )
    return out
