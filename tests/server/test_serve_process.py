"""The server process: health and metrics, SIGTERM under load, several servers over one
database, and the zero-setup default that keeps its data across a restart."""

from __future__ import annotations

import asyncio
import random
import shutil
import tempfile
import urllib.request
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from grpclib.client import Channel
from serverproc import free_port

import skift
import skift_server
from skift_server._proto.grpc.health.v1 import (
    HealthCheckRequest,
    HealthCheckResponseServingStatus,
    HealthStub,
)

if TYPE_CHECKING:
    from conftest import Serve


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


async def test_health_and_metrics(serve: Serve) -> None:
    """gRPC health says SERVING; /healthz and /readyz answer 200; /metrics counts calls by
    method and outcome, leases taken, and the pool."""
    port = free_port()
    server = await serve("--memory", "--metrics", f"127.0.0.1:{port}", "--test-hooks", fork=False)
    channel = Channel(path=str(server.socket))
    try:
        health = HealthStub(channel)
        for service in ("", "skift.v1.SkiftService"):
            got = await health.check(HealthCheckRequest(service=service))
            assert got.status == HealthCheckResponseServingStatus.SERVING
    finally:
        channel.close()
    async with skift_server.connect(server.url, principal=skift.User("ada")) as sk:
        await sk.create_project("M")
        await sk.patch("m", [skift.CreateNode(title="x")])
        await sk.claim_next()
        with pytest.raises(skift.NotFound):
            await sk.get("m#9")
    base = f"http://127.0.0.1:{port}"
    assert await asyncio.to_thread(_get, f"{base}/healthz") == (200, "ok\n")
    assert await asyncio.to_thread(_get, f"{base}/readyz") == (200, "ready\n")
    status, text = await asyncio.to_thread(_get, f"{base}/metrics")
    assert status == 200
    assert 'skift_rpc_requests_total{code="OK",method="CreateProject"} 1.0' in text
    assert 'skift_rpc_requests_total{code="NOT_FOUND",method="GetNode"} 1.0' in text
    assert "skift_claims_total 1.0" in text
    assert "skift_live_leases 1.0" in text
    assert 'skift_rpc_request_seconds_count{method="Patch"} 1.0' in text
    assert "skift_up 1.0" in text


@pytest.mark.slow
async def test_sigterm_under_load_loses_nothing_committed(serve: Serve, pg_dsn: str) -> None:
    """SIGTERM while clients are patching: every acknowledged patch is there in full, every
    patch is either all there or not there at all, and the server exits 0 after draining."""
    server = await serve("--dsn", pg_dsn, "--test-hooks", "--drain-timeout", "20", fork=False)
    async with skift_server.connect(server.url, principal=skift.User("ada"), attempts=1) as sk:
        await sk.create_project("Load")
    acked: set[str] = set()
    sent: set[str] = set()
    stop_at = asyncio.Event()

    async def writer(n: int) -> None:
        async with skift_server.connect(server.url, principal=skift.User("ada"), attempts=1) as sk:
            i = 0
            while not stop_at.is_set():
                label = f"w{n}-{i}"
                i += 1
                sent.add(label)
                ops = [
                    skift.CreateNode(title=f"{label} part {k}", labels=(label,)) for k in range(5)
                ]
                try:
                    await sk.patch("load", ops, request_id=label)
                except skift.SkiftError:
                    return  # the server is draining or gone: this writer is done
                acked.add(label)

    writers = [asyncio.create_task(writer(n)) for n in range(8)]
    await asyncio.sleep(1.5)
    assert acked, "no patch went through before the signal"
    code = await server.stop()
    stop_at.set()
    await asyncio.gather(*writers)
    assert code == 0, server.log()

    async with skift.open(pg_dsn, principal=skift.User("ada")) as local:
        counts: Counter[str] = Counter()
        page: str | None = None
        while True:
            got = await local.list_nodes(projects=["load"], limit=500, page=page)
            for node in got.nodes:
                counts.update(node.labels)
            page = got.next_page
            if page is None:
                break
    assert set(counts.values()) <= {5}, "a patch was half applied"
    assert acked <= set(counts), "an acknowledged patch was lost"
    assert set(counts) <= sent


async def test_drain_refuses_new_calls_and_wakes_long_polls(serve: Serve) -> None:
    """A long poll waiting when SIGTERM arrives is woken with Unavailable (not held until the
    drain timeout); new calls are refused as Unavailable while the server drains."""
    server = await serve("--memory", "--test-hooks", fork=False)
    async with skift_server.connect(server.url, principal=skift.Agent("bot"), attempts=1) as bot:
        waiting = asyncio.create_task(bot.claim_next(wait=timedelta(seconds=1.5)))
        await asyncio.sleep(0.4)
        stopping = asyncio.create_task(server.stop())
        await asyncio.sleep(0.3)
        with pytest.raises(skift.Unavailable):
            await bot.ready()
        with pytest.raises(skift.Unavailable, match="shutting down"):
            await waiting
        assert await stopping == 0


@pytest.mark.slow
async def test_two_servers_one_database_no_double_claims(serve: Serve, pg_dsn: str) -> None:
    """Two `skift serve` processes over one database, twelve agents spread over both, racing
    for 120 nodes until none is left: every node claimed exactly once."""
    first = await serve("--dsn", pg_dsn, "--test-hooks", fork=False)
    second = await serve("--dsn", pg_dsn, "--test-hooks", fork=False)
    async with skift_server.connect(first.url, principal=skift.User("ada")) as sk:
        await sk.create_project("Race")
        for start in range(0, 120, 40):
            await sk.patch(
                "race", [skift.CreateNode(title=f"n{k}") for k in range(start, start + 40)]
            )
    claimed: list[str] = []

    async def agent(n: int) -> None:
        url = (first if n % 2 else second).url
        async with skift_server.connect(url, principal=skift.Agent(f"a{n}")) as bot:
            while True:
                try:
                    c = await bot.claim_next()
                except skift.NothingReady:
                    return
                claimed.append(c.node.ref)
                if random.random() < 0.5:
                    await bot.complete(c.node.ref, lease=c.lease.id)

    await asyncio.gather(*(agent(n) for n in range(12)))
    assert len(claimed) == 120
    assert len(set(claimed)) == 120, [r for r, k in Counter(claimed).items() if k > 1]


@pytest.mark.slow
async def test_embedded_default_keeps_data_across_restart(serve: Serve) -> None:
    """With no DSN the server starts its own PostgreSQL in the data directory (initialising
    it on a bare machine), serves within seconds, and a restart finds the same data."""
    # Directly under /tmp and searchable: as root the cluster runs as uid 65534.
    parent = Path(tempfile.mkdtemp(prefix="skift-embedded-", dir="/tmp"))
    parent.chmod(0o755)  # noqa: ASYNC240
    data_dir = parent / "pg"
    try:
        server = await serve("--data-dir", str(data_dir), "--test-hooks", fork=False)
        async with skift_server.connect(server.url, principal=skift.User("ada")) as sk:
            await sk.create_project("Kept")
        assert await server.stop() == 0
        again = await serve("--data-dir", str(data_dir), "--test-hooks", fork=False)
        async with skift_server.connect(again.url, principal=skift.User("ada")) as sk:
            assert [p.slug for p in await sk.list_projects()] == ["kept"]
        assert await again.stop() == 0
    finally:
        shutil.rmtree(parent, ignore_errors=True)


async def test_sigterm_ends_twenty_long_polls_at_once(serve: Serve) -> None:
    """Twenty long polls (ten ClaimNext and ten WatchEvents, each waiting up to a minute)
    are all answered Unavailable as soon as SIGTERM arrives, and the server exits 0: none is
    held for the 30-second drain timeout."""
    server = await serve("--memory", "--test-hooks", "--drain-timeout", "30", fork=False)
    async with skift_server.connect(server.url, principal=skift.User("ada"), attempts=1) as sk:
        await sk.create_project("Quiet")
        wait = timedelta(seconds=60)
        cursor = (await sk.watch_events()).cursor  # past everything: the watches wait
        polls = [
            asyncio.create_task(sk.acting_as(skift.Agent(f"a{n}")).claim_next(wait=wait))
            for n in range(10)
        ] + [asyncio.create_task(sk.watch_events(after=cursor, wait=wait)) for _ in range(10)]
        await asyncio.sleep(1.0)  # every poll is waiting in the server now
        loop = asyncio.get_running_loop()
        started = loop.time()
        stopping = asyncio.create_task(server.stop())  # SIGTERM, then wait for the exit
        results = await asyncio.gather(*polls, return_exceptions=True)
        answered = loop.time() - started
        code = await stopping
        exited = loop.time() - started
    assert code == 0, server.log()
    assert [type(r).__name__ for r in results] == ["Unavailable"] * 20
    assert exited < 30, f"the long polls held shutdown for {exited:.1f}s"
    print(f"20 long polls answered in {answered:.2f}s; the server exited in {exited:.2f}s")
