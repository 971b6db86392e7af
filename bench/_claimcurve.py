"""Claim + complete throughput by the number of claimers and of connections in flight, with
where the time goes: the client process's CPU a pair and its wait for a core, and
PostgreSQL's CPU a pair, over a steady window (the claimers' first pairs, and their
connections' first plans, are before it).

    uv run python -m bench._claimcurve --claimers 4,8,16,32
    uv run python -m bench._claimcurve --claimers 32 --shared 4,8,16
    uv run python -m bench._claimcurve --claimers 32 --processes 2,4
    uv run python -m bench._claimcurve --claimers 8,32 --pgbouncer 4,8
    uv run python -m bench._claimcurve --claimers 8,32 --served

Each claimer is a handle with a pool of its own (as ``python -m bench``'s claim rows), in
this process; ``--shared K``: the claimers are handles on one store whose pool has K
connections (``LocalSkift.acting_as``), so at most K transactions are in flight;
``--processes P``: the claimers are split over P client processes (their CPU is not
counted, PostgreSQL's is); ``--pgbouncer K``: each claimer a pool of its own, connected
through a PgBouncer that keeps prepared statements (bench._pooled) with K server
connections, whose own CPU a pair is counted too; ``--served``: each claimer a remote
client of its own (a connection each, acting as its own agent: ``--test-hooks``) of one
``skift serve`` over the database, as agents that reach skift through its server, whose
CPU a pair is counted too. docs/benchmarks.md, issue 31 (sessions 15 to 17), has what it
showed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict

import skift
from skift_pg import PgStore

from . import _graph, _pooled
from ._claimprof import backend_cpu
from ._env import ROOT, Server, scratch, server
from ._scenarios import _client, serve  # pyright: ignore[reportPrivateUsage]


def _runq() -> tuple[float, float]:
    """This process's time on a core and waiting for one (seconds, all its threads)."""
    on = wait = 0.0
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/self/task/{tid}/schedstat").read_text().split()
            on, wait = on + int(fields[0]) / 1e9, wait + int(fields[1]) / 1e9
    return on, wait


async def _claimers(
    dsn: str, n: int, shared: int, tag: str, *, pooler_prepares: bool = False
) -> tuple[list[skift.LocalSkift], contextlib.AsyncExitStack]:
    stack = contextlib.AsyncExitStack()
    if shared:
        base = skift.LocalSkift(
            PgStore(dsn, min_size=shared, max_size=shared), principal=skift.Agent(f"{tag}0")
        )
        await stack.enter_async_context(base)
        return [base, *(base.acting_as(skift.Agent(f"{tag}{i}")) for i in range(1, n))], stack
    handles = [
        _client(dsn, skift.Agent(f"{tag}{i}"), pooler_prepares=pooler_prepares) for i in range(n)
    ]
    for h in handles:
        await stack.enter_async_context(h)
    return handles, stack


async def _work(
    handles: list[skift.LocalSkift],
    stamps: list[float],
    stop: asyncio.Event,
    first: asyncio.Event | None = None,
) -> None:
    async def one(h: skift.LocalSkift) -> None:
        while not stop.is_set():
            c = await h.claim_next()
            await h.complete(c.node.ref, lease=c.lease.id)
            stamps.append(time.time())
            if first is not None:
                first.set()

    await asyncio.gather(*(one(h) for h in handles))


async def child(dsn: str, n: int, start_at: float, end_at: float, tag: str) -> None:
    """One client process of ``--processes``: its pairs, as JSON, when the window ends."""
    handles, stack = await _claimers(dsn, n, 0, tag)
    async with stack:
        stamps: list[float] = []
        stop = asyncio.Event()
        await asyncio.sleep(max(0.0, start_at - time.time()))
        task = asyncio.create_task(_work(handles, stamps, stop))
        await asyncio.sleep(max(0.0, end_at - time.time()))
        stop.set()
        await task
    print(json.dumps({"stamps": stamps}), flush=True)


def _proc_cpu(pid: int | None) -> float:
    """Seconds of CPU process ``pid`` has had (0 without one)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def row(
    srv: Server, n: int, *, shared: int = 0, processes: int = 0, pgbouncer: int = 0
) -> str:
    warm, window = 1.5, 4.0
    async with scratch(srv, f"curve{n}") as dsn:
        # enough ready nodes for the window at three times today's rate
        await asyncio.to_thread(
            _graph.load, dsn, size=int(3000 * (warm + window + 3)), projects=10, chain=0, pool=True
        )
        db = str(conninfo_to_dict(dsn)["dbname"])
        if processes:
            start_at = time.time() + 3.0
            t0, t1 = start_at + warm, start_at + warm + window
            # the children stop a second after the window: their backends are there at its end
            args = [dsn, str(n // processes), str(start_at), str(t1 + 1.0)]
            kids = [
                await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "bench._claimcurve",
                    "--child",
                    *args,
                    f"p{i}c",
                    stdout=asyncio.subprocess.PIPE,
                    cwd=ROOT,
                )
                for i in range(processes)
            ]
            await asyncio.sleep(t0 - time.time())
            pg0 = await backend_cpu(dsn, db)
            await asyncio.sleep(t1 - time.time())
            pg1 = await backend_cpu(dsn, db)
            outs = [(await k.communicate())[0].decode().splitlines()[-1] for k in kids]
            got = [float(t) for out in outs for t in json.loads(out)["stamps"]]
            pairs = sum(1 for t in got if t0 <= t < t1)
            return (
                f"{n:3d} claimers over {processes} client processes: "
                f"{pairs / window:6.1f} pairs/s, PostgreSQL {(pg1 - pg0) * 1000 / pairs:.2f} ms/pair"
            )
        with contextlib.ExitStack() as outer:
            bouncer = None
            if pgbouncer:
                bouncer = outer.enter_context(_pooled.pgbouncer(srv, pool_size=pgbouncer))
                if bouncer is None:
                    raise SystemExit("--pgbouncer: no PgBouncer 1.21+ (SKIFT_PGBOUNCER)")
            to = bouncer.through(dsn) if bouncer else dsn
            pid = bouncer.pid if bouncer else None
            handles, stack = await _claimers(to, n, shared, "c", pooler_prepares=bool(bouncer))
            async with stack:
                if bouncer is not None:
                    await _pooled.settle(bouncer, handles)
                stamps: list[float] = []
                stop, first = asyncio.Event(), asyncio.Event()
                task = asyncio.create_task(_work(handles, stamps, stop, first))
                await first.wait()
                await asyncio.sleep(warm)
                a = (len(stamps), time.process_time(), *_runq(), await backend_cpu(dsn, db))
                a += (_proc_cpu(pid), os.times().system)
                await asyncio.sleep(window)
                b = (len(stamps), time.process_time(), *_runq(), await backend_cpu(dsn, db))
                b += (_proc_cpu(pid), os.times().system)
                stop.set()
                await task
        pairs = b[0] - a[0]
        how = f"over one pool of {shared}" if shared else "a pool each"
        if pgbouncer:
            how += f", through PgBouncer ({pgbouncer} server connections)"
        return (
            f"{n:3d} claimers, {how}: {pairs / window:6.1f} pairs/s; client CPU "
            f"{(b[1] - a[1]) * 1000 / pairs:.2f} ms/pair ({(b[6] - a[6]) * 1000 / pairs:.2f} in the"
            f" kernel; on a core {(b[2] - a[2]) / window:.2f},"
            f" waiting for one {(b[3] - a[3]) / window:.2f} of the time); PostgreSQL "
            f"{(b[4] - a[4]) * 1000 / pairs:.2f} ms/pair ({(b[4] - a[4]) / window:.2f} cores)"
            + (f"; PgBouncer {(b[5] - a[5]) * 1000 / pairs:.2f} ms/pair" if pgbouncer else "")
        )


def _serving(url: str) -> int:
    """The pid of the ``skift serve`` listening at ``url`` (its socket is in its command line)."""
    sock = url.removeprefix("unix://").encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            if sock in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                return int(pid)
    raise RuntimeError(f"no process serves {url}")


async def served_row(srv: Server, n: int) -> str:
    """``n`` claimers through one ``skift serve``: a remote client (a connection) each."""
    import skift_server

    warm, window = 1.5, 4.0
    async with scratch(srv, f"served{n}") as dsn:
        await asyncio.to_thread(
            _graph.load, dsn, size=int(3000 * (warm + window + 3)), projects=10, chain=0, pool=True
        )
        db = str(conninfo_to_dict(dsn)["dbname"])
        async with serve(dsn, "--test-hooks") as (_, url):
            pid = _serving(url)
            conns = [skift_server.connect(url) for _ in range(n)]
            try:
                handles = [c.acting_as(skift.Agent(f"c{i}")) for i, c in enumerate(conns)]
                stamps: list[float] = []
                stop, first = asyncio.Event(), asyncio.Event()
                task = asyncio.create_task(_work(handles, stamps, stop, first))  # pyright: ignore[reportArgumentType]
                await first.wait()
                await asyncio.sleep(warm)
                a = (len(stamps), time.process_time(), _proc_cpu(pid), await backend_cpu(dsn, db))
                await asyncio.sleep(window)
                b = (len(stamps), time.process_time(), _proc_cpu(pid), await backend_cpu(dsn, db))
                stop.set()
                await task
            finally:
                for c in conns:
                    await c.close()
    pairs = b[0] - a[0]
    return (
        f"{n:3d} claimers through skift serve, a connection each: {pairs / window:6.1f} pairs/s;"
        f" client CPU {(b[1] - a[1]) * 1000 / pairs:.2f} ms/pair; the server"
        f" {(b[2] - a[2]) * 1000 / pairs:.2f} ms/pair ({(b[2] - a[2]) / window:.2f} cores);"
        f" PostgreSQL {(b[3] - a[3]) * 1000 / pairs:.2f} ms/pair ({(b[3] - a[3]) / window:.2f}"
        " cores)"
    )


def _ints(s: str) -> list[int]:
    return [int(x) for x in s.split(",") if x]


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        dsn, n, start_at, end_at, tag = sys.argv[2:7]
        asyncio.run(child(dsn, int(n), float(start_at), float(end_at), tag))
        return
    ap = argparse.ArgumentParser(prog="python -m bench._claimcurve", description=__doc__)
    ap.add_argument("--claimers", default="4,8,16,32", help="claimer counts, comma-separated")
    ap.add_argument("--shared", default="", help="pool sizes for one shared store, e.g. 4,8,16")
    ap.add_argument("--processes", default="", help="client process counts, e.g. 2,4")
    ap.add_argument(
        "--pgbouncer", default="", help="PgBouncer server connections, e.g. 4,8 (1.21+ needed)"
    )
    ap.add_argument(
        "--served", action="store_true", help="also through one skift serve (a client each)"
    )
    ap.add_argument("--dsn", default=os.environ.get("SKIFT_TEST_DSN"))
    a = ap.parse_args()

    async def go(srv: Server) -> None:
        for n in _ints(a.claimers):
            print(await row(srv, n), flush=True)
            for k in _ints(a.shared):
                print(await row(srv, n, shared=k), flush=True)
            for p in (p for p in _ints(a.processes) if p <= n):
                print(await row(srv, n, processes=p), flush=True)
            for k in _ints(a.pgbouncer):
                print(await row(srv, n, pgbouncer=k), flush=True)
            if a.served:
                print(await served_row(srv, n), flush=True)

    with server(a.dsn) as srv:
        asyncio.run(go(srv))


if __name__ == "__main__":
    main()
