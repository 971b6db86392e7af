"""PostgreSQL dies under a running server: clear, fast, retryable answers, and recovery
without a restart (issue 17 point 1).

Before: the identity lookup ran outside the store's error mapping, so every call
on the socket was INTERNAL during an outage; other calls waited 30 s for the pool;
``/readyz`` stayed 200 for about 5 s; the log said ``error=""``.

Now: every call answers UNAVAILABLE with a RetryInfo within the pool's wait cap,
``/readyz`` is 503 within a second of the kill and 200 within a second of the
database's return, the log names the error, and a ``complete`` sent during the
outage with a request id is retried by the client until it lands, once.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from faultload import Tally, audit, http_status, until_status, worker
from grpclib.client import Channel
from grpclib.const import Status
from grpclib.exceptions import GRPCError
from serverproc import ServerProcess, free_port

import skift
import skift_server
from skift_server._errors import ErrorDetailsCodec
from skift_server._proto.google.rpc import RetryInfo
from skift_server._proto.skift import v1

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from conftest import OwnedCluster

pytestmark = pytest.mark.pg


def unavailable_readies(url: str) -> float:
    """How many Ready calls the server answered UNAVAILABLE (from its /metrics)."""
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    line = 'skift_rpc_requests_total{code="UNAVAILABLE",method="Ready"} '
    return sum(float(x[len(line) :]) for x in text.splitlines() if x.startswith(line))


async def raw_call(server: ServerProcess) -> tuple[GRPCError, float]:
    """ListProjects on a bare gRPC channel (no skift client, no retries): the error and
    how long it took."""
    channel = Channel(path=str(server.socket), status_details_codec=ErrorDetailsCodec())
    try:
        started = time.monotonic()
        with pytest.raises(GRPCError) as ei:
            await v1.SkiftServiceStub(channel).list_projects(v1.ListProjectsRequest(), timeout=20)
        return ei.value, time.monotonic() - started
    finally:
        channel.close()


async def test_pg_outage_is_unavailable_and_recovers_without_a_restart(
    owned_pg: OwnedCluster,
    fault_dsn: str,
    servers: Callable[..., Awaitable[ServerProcess]],
) -> None:
    port = free_port()
    server = await servers("--dsn", fault_dsn, "--metrics", f"127.0.0.1:{port}")
    readyz = f"http://127.0.0.1:{port}/readyz"
    # As the server's owner, identified by uid on the socket: every call looks the
    # identity up in PostgreSQL first.
    async with skift_server.connect(server.url, attempts=1) as sk:
        project = await sk.create_project("Outage")
        await sk.patch(project.slug, [skift.CreateNode(title=f"n{k}") for k in range(3)])
        claim = await sk.claim_next()
    assert await asyncio.to_thread(http_status, readyz) == 200

    killed = await asyncio.to_thread(owned_pg.kill)
    down = await until_status(readyz, 503) - killed

    err, took = await raw_call(server)
    assert err.status is Status.UNAVAILABLE, (err.status, err.message)
    assert any(isinstance(d, RetryInfo) for d in err.details or ()), err.details
    assert "PostgreSQL is unavailable" in (err.message or "")
    assert took < 2.0, f"a call during the outage took {took:.1f}s"
    async with skift_server.connect(server.url, attempts=1) as sk:
        with pytest.raises(skift.Unavailable) as ei:
            await sk.ready()
        assert "Retry" in ei.value.next
    # The command line during the outage: `skift ready` meets Unavailable (INTERNAL
    # before, exit 1 at once) and retries it until PostgreSQL is back.
    cli = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "skift"),
        "ready",
        "--json",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "SKIFT_SERVER": server.url, "NO_COLOR": "1"},
    )
    cli_done = asyncio.create_task(cli.communicate())
    metrics = f"http://127.0.0.1:{port}/metrics"
    while await asyncio.to_thread(unavailable_readies, metrics) < 2:  # ours, then the CLI's
        assert not cli_done.done(), (await cli_done, cli.returncode)
        await asyncio.sleep(0.1)

    # A complete sent during the outage, with a request id: the client retries it
    # (Unavailable is retryable for an idempotent call) until PostgreSQL is back.
    async with skift_server.connect(server.url) as sk:
        completing = asyncio.create_task(
            sk.complete(claim.node.ref, lease=claim.lease.id, request_id="outage-complete")
        )
        await asyncio.sleep(1.0)
        assert not completing.done(), "the complete was answered while PostgreSQL was down"
        assert not cli_done.done(), (await cli_done, cli.returncode)
        restarted = await asyncio.to_thread(owned_pg.start)
        up = await until_status(readyz, 200) - restarted
        await asyncio.wait_for(completing, 30)
        out, errout = await asyncio.wait_for(cli_done, 60)
        said = (out + errout).decode()
        assert cli.returncode == 0, said
        assert "INTERNAL" not in said
        node = await sk.get(claim.node.ref)
        assert node.status is skift.Status.DONE
        # and the same request again is the same answer, not a second completion
        again = await sk.complete(
            claim.node.ref, lease=claim.lease.id, request_id="outage-complete"
        )
        assert again is not None

    log = server.log()
    assert "store unreachable" in log
    assert 'error=""' not in log
    assert "store reachable again" in log
    assert "Traceback" not in log, log
    print(f"/readyz 503 {down:.2f}s after the kill, 200 {up:.2f}s after PostgreSQL was back")
    assert down < 1.0, f"/readyz turned 503 only {down:.2f}s after PostgreSQL died"
    assert up < 1.0, f"/readyz turned 200 only {up:.2f}s after PostgreSQL came back"


async def test_kill_9_of_postgresql_under_load(
    owned_pg: OwnedCluster,
    fault_dsn: str,
    servers: Callable[..., Awaitable[ServerProcess]],
) -> None:
    """Claimers working through 200 nodes while PostgreSQL is killed and, 1.5 s later,
    started again: the server recovers without a restart, /readyz goes 503 and back,
    the claimers meet Unavailable and then finish; nothing lost, nothing done twice."""
    nodes = 200
    port = free_port()
    server = await servers(
        "--dsn", fault_dsn, "--http", f"127.0.0.1:{port}", "--test-hooks", "--sweep-every", "0.5"
    )
    readyz = f"http://127.0.0.1:{port}/readyz"
    async with skift_server.connect(server.url, principal=skift.User("ada")) as sk:
        await sk.create_project("Load")
        for start in range(0, nodes, 100):
            await sk.patch(
                "load", [skift.CreateNode(title=f"n{k}") for k in range(start, start + 100)]
            )
    tally = Tally()
    workers = [asyncio.create_task(worker(server.url, f"a{n}", tally)) for n in range(6)]
    while len(tally.acked) < nodes // 4:
        await asyncio.sleep(0.01)
        assert not any(w.done() for w in workers), [w.exception() for w in workers if w.done()]
    killed = await asyncio.to_thread(owned_pg.kill)
    down = await until_status(readyz, 503) - killed
    async with skift_server.connect(server.url, principal=skift.User("ada"), attempts=1) as sk:
        with pytest.raises(skift.Unavailable):
            await sk.ready()
    await asyncio.sleep(max(0.0, 1.5 - (time.monotonic() - killed)))
    restarted = await asyncio.to_thread(owned_pg.start)
    up = await until_status(readyz, 200) - restarted
    await asyncio.wait_for(asyncio.gather(*workers), 120)

    async with skift_server.connect(server.url, principal=skift.User("ada")) as sk:
        found = await audit(sk, "load", tally)
    assert server.returncode() is None, "the server died with its database"
    print(
        f"/readyz 503 {down:.2f}s after the kill, 200 {up:.2f}s after the restart; "
        f"{tally.unavailable} Unavailable, {tally.fenced} fenced; {found}"
    )
    assert found.lost == [], found
    assert found.doubled == [], found
    assert found.stuck == [], found
    assert found.doubled == [], found
    assert found.stuck == [], found
    assert found.done + found.claimable == nodes
    assert "Traceback" not in server.log(), server.log()
    assert down < 1.0, f"/readyz turned 503 only {down:.2f}s after PostgreSQL died"
    assert up < 1.0, f"/readyz turned 200 only {up:.2f}s after PostgreSQL came back"


async def test_the_library_answers_an_outage_unavailable(
    owned_pg: OwnedCluster, fault_dsn: str
) -> None:
    """In process, without a server: the identity lookup (what a transport asks first)
    and a read are Unavailable during the outage, quickly once a ping has failed, and
    work again once PostgreSQL is back."""
    from skift_pg import PgStore

    store = PgStore(fault_dsn, max_size=2)
    async with skift.LocalSkift(store, principal=skift.User("ada")) as sk:
        await sk.create_project("Library")
        await asyncio.to_thread(owned_pg.kill)
        with pytest.raises(skift.Unavailable, match="PostgreSQL is unavailable"):
            await store.ping(1.0)
        for call in (lambda: sk.authenticate("unix", "12345"), lambda: sk.list_projects()):
            started = time.monotonic()
            with pytest.raises(skift.Unavailable) as ei:
                await call()
            assert time.monotonic() - started < 2.0
            assert "Retry" in ei.value.next
        await asyncio.to_thread(owned_pg.start)
        await store.ping(5.0)  # back: the pool's broken connections are replaced
        assert [p.slug for p in await sk.list_projects()] == ["library"]
