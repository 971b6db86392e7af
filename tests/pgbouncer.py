"""Run the distribution's PgBouncer, in transaction pooling mode, in front of the test
PostgreSQL server: a real process on a free loopback port (issue 33).

``PgBouncer.start(server_dsn)`` writes a configuration that routes every database name
to the server behind ``server_dsn`` (``* = host=… port=…``), starts ``pgbouncer`` and
waits until it answers; ``through(dsn)`` is the same DSN reached through it. PgBouncer
refuses to run as root: as root it is started as uid 65534, so its directory is
readable by everyone. ``stop`` ends the process it started, by its id; if the test
process dies first, the kernel ends it (``PR_SET_PDEATHSIG``).

The settings are the distribution's defaults that matter to skift: ``pool_mode =
transaction``, no ``ignore_startup_parameters`` beyond what psycopg sends, and
PgBouncer 1.18's lack of protocol-level prepared statements (Debian 12's version).
``PgBouncer(prepared=True)`` runs a PgBouncer that keeps them (1.21 or later, with
``max_prepared_statements``; ``prepared_binary``): the one ``SKIFT_PGBOUNCER`` names,
else the distribution's if it is new enough, else the one .ci/run builds from Debian
13's source package (``BUILT``). A
server connection is handed to another client after each transaction, so anything a
session keeps (a prepared statement, LISTEN, a session advisory lock, a ``SET``) is not
there on the next one: what docs/operations.md ("Behind PgBouncer") tells operators.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

START_TIMEOUT = 15.0

BUILT = Path("/opt/skift-ci/pgbouncer/bin/pgbouncer")
"""Where .ci/run builds a PgBouncer that keeps prepared statements when the distribution's
does not (Debian 12's is 1.18)."""

PREPARED_SINCE = (1, 21)
"""The first PgBouncer that keeps protocol-level prepared statements across transactions."""


def binary() -> str | None:
    """The pgbouncer executable (Debian puts it in /usr/sbin, often not on PATH)."""
    return shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin:/usr/bin")


def version(exe: str) -> tuple[int, int]:
    """(major, minor) of a pgbouncer executable; (0, 0) when it does not say."""
    try:
        out = subprocess.run(
            [exe, "--version"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return (0, 0)
    match = re.search(r"PgBouncer (\d+)\.(\d+)", out)
    return (int(match[1]), int(match[2])) if match else (0, 0)


def prepared_binary() -> str | None:
    """A pgbouncer that keeps prepared statements (1.21+), or None."""
    named = os.environ.get("SKIFT_PGBOUNCER")
    for exe in (named, binary(), str(BUILT) if BUILT.exists() else None):
        if exe and version(exe) >= PREPARED_SINCE:
            return exe
    return None


def _as_child() -> None:
    """In the child before exec: as root, become uid 65534 (PgBouncer refuses root),
    then ask for SIGTERM when the test process dies, so a test run killed before its
    teardown leaves no PgBouncer behind (after the uid change, which would clear it)."""
    if os.geteuid() == 0:
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgBouncer:
    """One PgBouncer process in transaction mode in front of one PostgreSQL server."""

    def __init__(self, *, pool_size: int = 40, prepared: bool = False) -> None:
        self.pool_size = pool_size
        self.prepared = prepared
        self.port = 0
        self.user = "postgres"  # the server's user, PgBouncer's client and admin user
        self.dir: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, server_dsn: str) -> None:
        exe = prepared_binary() if self.prepared else binary()
        if exe is None:
            raise RuntimeError(
                "no pgbouncer 1.21+ (SKIFT_PGBOUNCER, or .ci/run builds one)"
                if self.prepared
                else "pgbouncer is not installed (apt-get install pgbouncer)"
            )
        parts = urlsplit(server_dsn)
        host, port = parts.hostname or "127.0.0.1", parts.port or 5432
        user = self.user = parts.username or "postgres"
        self.dir = Path(tempfile.mkdtemp(prefix="skift-pgbouncer-"))
        self.dir.chmod(0o755)
        (self.dir / "users.txt").write_text(f'"{user}" ""\n')
        self.port = _free_port()
        config = self.dir / "pgbouncer.ini"
        config.write_text(
            "[databases]\n"
            f"* = host={host} port={port}\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {self.port}\n"
            "unix_socket_dir =\n"
            "auth_type = trust\n"
            f"auth_file = {self.dir / 'users.txt'}\n"
            "pool_mode = transaction\n"
            "max_client_conn = 2000\n"
            f"default_pool_size = {self.pool_size}\n"
            "server_reset_query =\n"
            # what psycopg sends and PgBouncer does not track; `options` is NOT here:
            # skift sends none behind a pooler, and a pooler that drops it silently
            # would lose the settings the direct connection carries
            "ignore_startup_parameters = extra_float_digits\n"
            "log_connections = 0\n"
            "log_disconnections = 0\n"
            # the admin console (SHOW SERVERS: each server connection's prepared statements)
            f"admin_users = {user}\n" + ("max_prepared_statements = 200\n" if self.prepared else "")
        )
        for f in self.dir.iterdir():
            f.chmod(0o644)
        log = (self.dir / "log.txt").open("wb")
        self.proc = subprocess.Popen(
            [exe, str(config)], stdout=log, stderr=subprocess.STDOUT, preexec_fn=_as_child
        )
        log.close()
        self._wait(user)

    def _wait(self, user: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        last: Exception | None = None
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"pgbouncer exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with psycopg.connect(
                    host="127.0.0.1", port=self.port, user=user, dbname="postgres",
                    connect_timeout=2, prepare_threshold=None,
                ) as conn:  # fmt: skip
                    conn.execute("SELECT 1")
                return
            except psycopg.Error as exc:
                last = exc
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"pgbouncer did not answer in {START_TIMEOUT}s: {last}\n{self.log()}")

    @property
    def pid(self) -> int | None:
        """The PgBouncer process's id while it runs."""
        return None if self.proc is None else self.proc.pid

    def through(self, dsn: str) -> str:
        """``dsn`` (a postgresql:// URL) reached through this PgBouncer."""
        parts = urlsplit(dsn)
        user = parts.username or "postgres"
        auth = f"{user}:{parts.password}@" if parts.password else f"{user}@"
        return urlunsplit(parts._replace(netloc=f"{auth}127.0.0.1:{self.port}"))

    def _admin(self) -> psycopg.Connection[tuple[object, ...]]:
        """A connection to the admin console (simple queries only: a client-side cursor)."""
        return psycopg.connect(
            host="127.0.0.1", port=self.port, user=self.user, dbname="pgbouncer",
            connect_timeout=2, autocommit=True, cursor_factory=psycopg.ClientCursor,
        )  # fmt: skip

    def reconnect(self) -> None:
        """The admin console's RECONNECT: each server connection is closed once released and
        a new one opened in its place (their prepared statements, and plans, made anew)."""
        with self._admin() as conn:
            conn.execute("RECONNECT")

    def servers(self) -> list[dict[str, object]]:
        """The admin console's SHOW SERVERS: one row per server connection (PgBouncer
        1.21+ counts each one's ``prepared_statements``)."""
        with self._admin() as conn:
            cur = conn.execute("SHOW SERVERS")
            names = [d.name for d in cur.description or ()]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def log(self) -> str:
        if self.dir is None:
            return ""
        with contextlib.suppress(OSError):
            return (self.dir / "log.txt").read_text(errors="replace")
        return ""

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
