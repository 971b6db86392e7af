"""Where the benchmarks run: the server, scratch databases, and the machine's description."""

from __future__ import annotations

import contextlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncGenerator, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

ROOT = Path(__file__).resolve().parent.parent


def with_dbname(dsn: str, dbname: str) -> str:
    """The same server and credentials, another database (URLs stay URLs for skift.open)."""
    parts = urlsplit(dsn)
    if parts.scheme in ("postgresql", "postgres"):
        return urlunsplit(parts._replace(path="/" + dbname))
    return make_conninfo(dsn, dbname=dbname)


@dataclass
class Server:
    """A PostgreSQL server to benchmark against, and how we got it."""

    dsn: str  # a maintenance database: scratch databases are created through it
    source: str  # "SKIFT_TEST_DSN", "--dsn" or "embedded"

    def params(self) -> dict[str, Any]:
        return conninfo_to_dict(self.dsn)


@contextlib.contextmanager
def server(dsn: str | None) -> Generator[Server]:
    """The server named on the command line, else SKIFT_TEST_DSN, else a throwaway embedded cluster."""
    if dsn:
        yield Server(dsn, "--dsn")
        return
    env = os.environ.get("SKIFT_TEST_DSN")
    if env:
        yield Server(env, "SKIFT_TEST_DSN")
        return
    from skift_pg.embedded import EmbeddedCluster

    # Durable settings (fast=False), so commits cost what they cost in production.
    data_dir = Path(tempfile.mkdtemp(prefix="skift-bench-pg-", dir="/tmp"))
    data_dir.chmod(0o755)
    cluster = EmbeddedCluster(data_dir, fast=False)
    try:
        yield Server(cluster.start(), "embedded")
    finally:
        cluster.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


def _admin(dsn: str) -> psycopg.Connection[Any]:
    return psycopg.connect(dsn, autocommit=True, connect_timeout=10)


def drop_database(srv: Server, name: str) -> None:
    with _admin(srv.dsn) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@contextlib.asynccontextmanager
async def scratch(srv: Server, name: str, *, migrate: bool = True) -> AsyncGenerator[str]:
    """A fresh database ``bench_<name>_<pid>`` (migrated with skift's real migrations), dropped
    after; the pid keeps two runs on one server (a test and a benchmark) apart."""
    db = f"bench_{name}_{os.getpid()}"
    drop_database(srv, db)
    with _admin(srv.dsn) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(db)))
    dsn = with_dbname(srv.dsn, db)
    try:
        if migrate:
            import skift_pg

            await skift_pg.migrate(dsn)
        yield dsn
    finally:
        drop_database(srv, db)


def _git(*args: str) -> str:
    try:
        out = subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip()


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    with contextlib.suppress(OSError, ValueError):
        m = re.search(r"MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text())
        if m:
            return round(int(m.group(1)) / 1024 / 1024, 1)
    return None


def machine(srv: Server) -> dict[str, Any]:
    """What the numbers were measured on."""
    with _admin(srv.dsn) as conn:
        version = conn.execute("SELECT version()").fetchone()
        settings = dict(
            conn.execute(
                "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(%s)",
                [
                    [
                        "shared_buffers",
                        "work_mem",
                        "synchronous_commit",
                        "fsync",
                        "max_connections",
                        "jit",
                    ]
                ],
            ).fetchall()
        )
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "cpu_count": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory_gib": _memory_gib(),
        "load_average": list(os.getloadavg()),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "postgresql": version[0] if version else "?",
        "postgresql_settings": settings,
        "server": srv.source,
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(status),
    }


def pgbench_path() -> str | None:
    """pgbench from PATH, the machine's PostgreSQL, or the embedded wheel; None when absent."""
    found = shutil.which("pgbench")
    if found:
        return found
    for cand in sorted(Path("/usr/lib/postgresql").glob("*/bin/pgbench"), reverse=True):
        return str(cand)
    with contextlib.suppress(Exception):
        from skift_pg.embedded import postgres_bin_dir

        cand = postgres_bin_dir() / "pgbench"
        if cand.exists():
            return str(cand)
    return None
