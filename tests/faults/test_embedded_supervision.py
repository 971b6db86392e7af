"""The embedded PostgreSQL is supervised (issue 29): kill -9 of the cluster ``skift serve``
started brings ``/readyz`` back within seconds, without restarting skift; a cluster the
server adopted from another process is left as it was found.

Before: ``/readyz`` answered 503 until the server was restarted by hand.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from faultload import until_status
from serverproc import ServerProcess, free_port

import skift
import skift_server


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A cluster directory uid 65534 reaches (as root the cluster runs as it)."""
    top = Path(tempfile.mkdtemp(prefix="skift-emb-", dir="/tmp"))
    top.chmod(0o755)
    yield top / "pg"
    shutil.rmtree(top, ignore_errors=True)


def _postmaster(data_dir: Path) -> int:
    return int((data_dir / "postmaster.pid").read_text().split()[0])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


async def test_kill_9_of_the_embedded_postgresql_is_restarted(
    servers: Callable[..., Awaitable[ServerProcess]], data_dir: Path
) -> None:
    port = free_port()
    server = await servers("--data-dir", str(data_dir), "--http", f"127.0.0.1:{port}")
    readyz = f"http://127.0.0.1:{port}/readyz"
    async with skift_server.connect(server.url) as sk:
        await sk.create_project("Survives")
    await until_status(readyz, 200)

    pid = _postmaster(data_dir)
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    await until_status(readyz, 503, timeout=10)
    back = await until_status(readyz, 200, timeout=30) - killed
    assert back < 10, f"/readyz took {back:.1f}s to come back"
    assert server.returncode() is None  # the same skift serve
    assert _postmaster(data_dir) != pid
    async with skift_server.connect(server.url) as sk:
        assert [p.slug for p in await sk.list_projects()] == ["survives"]
        await sk.create_project("After")
    log = server.log()
    assert "the embedded PostgreSQL died; restarting it" in log
    assert "the embedded PostgreSQL is back" in log
    print(f"/readyz back {back:.2f}s after kill -9 of the embedded postmaster")
    print("\n".join(line for line in log.splitlines() if "PostgreSQL" in line or "store" in line))

    new = _postmaster(data_dir)
    assert await server.stop() == 0
    for _ in range(200):
        if not _alive(new):
            break
        await asyncio.sleep(0.05)
    assert not _alive(new), "the cluster it started stops with it"


async def test_an_adopted_cluster_is_left_as_it_was_found(
    servers: Callable[..., Awaitable[ServerProcess]], data_dir: Path
) -> None:
    from skift_pg.embedded import EmbeddedCluster

    ours = EmbeddedCluster(data_dir, fast=True)
    await asyncio.to_thread(ours.start)
    try:
        pid = _postmaster(data_dir)
        server = await servers("--data-dir", str(data_dir))
        async with skift_server.connect(server.url) as sk:
            await sk.create_project("Adopted")
        assert await server.stop() == 0
        assert _alive(pid), "skift serve stopped a cluster it did not start"
        async with skift.open(ours.dsn) as sk:
            assert [p.slug for p in await sk.list_projects()] == ["adopted"]
    finally:
        await asyncio.to_thread(ours.stop)
