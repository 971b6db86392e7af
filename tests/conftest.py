"""PostgreSQL fixtures shared by the whole test tree.

The server comes from ``SKIFT_TEST_DSN`` when set (CI points it at the
machine's PostgreSQL) and otherwise from a throwaway embedded cluster, so the
suite runs on a bare machine. The schema is migrated once per session into a
template database; each test gets its own ``CREATE DATABASE … TEMPLATE`` copy,
which is much faster than migrating per test and keeps tests independent.

When PostgreSQL cannot be had the PostgreSQL tests are skipped, except with
``SKIFT_REQUIRE_PG=1`` (CI): then the fixtures fail, and any skipped test
marked ``pg`` is reported as a failure, so CI never passes by skipping.

Fixtures:

- ``pg_server_dsn`` (session): DSN of a maintenance database on the server.
- ``pg_template`` (session): name of the migrated template database.
- ``pg_dsn`` (function): DSN of a fresh, migrated database for one test (made
  ahead and dropped behind on a thread of its own: ``pg_fresh_databases``).
- ``pg_session_databases`` (session): makes fresh migrated databases that live
  until the session ends (the shared servers of the remote contract suite).
- ``pgbouncer`` (session): the distribution's PgBouncer in transaction mode in front
  of the server (tests/pgbouncer.py); ``pgbouncer.through(dsn)`` reaches a database
  through it. Not installed: skipped, or with ``SKIFT_REQUIRE_PG=1`` a failure.
- ``pgbouncer_keeping`` (session) and ``pgbouncer_prepared`` (function, 8 server
  connections): a PgBouncer 1.21 or later that keeps prepared statements
  (``max_prepared_statements``): the one ``SKIFT_PGBOUNCER`` names, else the one
  .ci/run builds. None: as ``pgbouncer``.

Tests that request one of these are marked ``pg`` automatically.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import concurrent.futures
import contextlib
import os
import secrets
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

if TYPE_CHECKING:
    from collections.abc import Generator, Iterator

    from pgbouncer import PgBouncer
    from psycopg.rows import TupleRow

# Blob bytes of every PostgreSQL store and server the tests start go to one
# throwaway directory for the session, not the user's data directory. Set at
# import, before any server process is forked, so they inherit it; removed at exit.
if "SKIFT_BLOB_DIR" not in os.environ:
    os.environ["SKIFT_BLOB_DIR"] = _blobs = tempfile.mkdtemp(prefix="skift-test-blobs-")
    atexit.register(shutil.rmtree, _blobs, ignore_errors=True)

PG_FIXTURES = frozenset(
    {
        "pg_server_dsn",
        "pg_template",
        "pg_dsn",
        "pg_fresh_databases",
        "pg_session_databases",
        "pgbouncer",
        "pgbouncer_prepared",
        "pgbouncer_keeping",
    }
)

# `skift serve` records its socket under $XDG_STATE_HOME (skift_server._paths):
# the tests' servers record theirs in a directory of the session's own, never
# in the home directory of whoever runs the tests.
os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="skift-test-state-")
atexit.register(shutil.rmtree, os.environ["XDG_STATE_HOME"], True)


def _require_pg() -> bool:
    return os.environ.get("SKIFT_REQUIRE_PG") == "1"


def _unavailable(reason: str) -> NoReturn:
    if _require_pg():
        pytest.fail(f"SKIFT_REQUIRE_PG=1 but PostgreSQL is unavailable: {reason}", pytrace=False)
    pytest.skip(f"PostgreSQL unavailable: {reason}")


def _with_dbname(dsn: str, dbname: str) -> str:
    """The same server and credentials, another database.

    URLs stay URLs, because ``skift.open`` recognises PostgreSQL by the
    ``postgresql://`` scheme; key/value DSNs get ``dbname`` replaced.
    """
    parts = urlsplit(dsn)
    if parts.scheme in ("postgresql", "postgres"):
        return urlunsplit(parts._replace(path="/" + dbname))
    return make_conninfo(dsn, dbname=dbname)


def _admin(dsn: str) -> psycopg.Connection[TupleRow]:
    """An autocommit connection: CREATE/DROP DATABASE cannot run in a transaction."""
    return psycopg.connect(dsn, autocommit=True, connect_timeout=10)


def _create_database(server_dsn: str, name: str, template: str | None = None) -> None:
    query = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template is not None:
        query = sql.SQL("{} TEMPLATE {}").format(query, sql.Identifier(template))
    with _admin(server_dsn) as conn:
        conn.execute(query)
        # A commit does not wait for its WAL to reach the disk (the embedded cluster's
        # fast mode does the same): what a crash of the server could lose, no test here
        # asks of it (tests/faults kill a cluster of their own, which keeps waiting).
        # Everything else about a commit, what other sessions see and when, is unchanged.
        conn.execute(
            sql.SQL("ALTER DATABASE {} SET synchronous_commit = off").format(sql.Identifier(name))
        )


def _drop_database(server_dsn: str, name: str) -> None:
    # FORCE ends sessions a test left open (a pool it did not close, say).
    query = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
    with _admin(server_dsn) as conn:
        conn.execute(query)


@pytest.fixture(scope="session")
def pg_server_dsn() -> Iterator[str]:
    """DSN of a maintenance database; tests create and drop databases through it."""
    dsn = os.environ.get("SKIFT_TEST_DSN")
    if dsn:
        try:
            with _admin(dsn):
                pass
        except psycopg.Error as exc:
            _unavailable(f"SKIFT_TEST_DSN does not connect: {exc}")
        yield dsn
        return

    from skift_pg.embedded import EmbeddedCluster, EmbeddedPostgresError

    # A directory of our own directly under /tmp: as root the cluster runs as
    # uid 65534, which cannot enter pytest's 0700 tmp_path directories.
    data_dir = Path(tempfile.mkdtemp(prefix="skift-test-pg-"))
    cluster = EmbeddedCluster(data_dir, fast=True)
    try:
        try:
            dsn = cluster.start()
        except EmbeddedPostgresError as exc:
            _unavailable(f"the embedded cluster did not start: {exc}")
        try:
            yield dsn
        finally:
            cluster.stop()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_template(pg_server_dsn: str) -> Iterator[str]:
    """Name of a database holding the migrated schema, copied by every ``pg_dsn``."""
    from skift_pg import migrate

    name = f"skift_tpl_{secrets.token_hex(6)}"
    _create_database(pg_server_dsn, name)
    try:
        # A thread of its own, so asyncio.run works even if this fixture is
        # first requested while an event loop runs on the main thread.
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(asyncio.run, migrate(_with_dbname(pg_server_dsn, name))).result()
        yield name
    finally:
        _drop_database(pg_server_dsn, name)


class FreshDatabases:
    """Fresh copies of the template, made ahead of the tests and dropped behind them.

    Copying the template and dropping a used copy cost PostgreSQL a few hundred
    milliseconds each (seconds on a busy machine), mostly waiting on the disk, once
    per test that asks for ``pg_dsn``. A few threads of their own do both, several
    at once: they keep up to :data:`AHEAD` copies made before they are asked for
    (fewer while few were asked for: one test alone makes one more), and drop a
    copy once its test is done, while the next tests run. Each test still gets a
    database no other test touched; a copy is handed out once. A drop that failed
    fails the session.
    """

    AHEAD = 6
    WORKERS = 6

    def __init__(self, server_dsn: str, template: str) -> None:
        self.server_dsn = server_dsn
        self.template = template
        self.taken = 0
        self._worker = concurrent.futures.ThreadPoolExecutor(
            self.WORKERS, thread_name_prefix="pg-fresh"
        )
        self._ahead: collections.deque[concurrent.futures.Future[str]] = collections.deque()
        self._drops: list[concurrent.futures.Future[None]] = []

    def _make(self) -> str:
        name = f"skift_t_{secrets.token_hex(6)}"
        _create_database(self.server_dsn, name, template=self.template)
        return name

    def take(self) -> str:
        """The name of a fresh database, now this caller's alone."""
        self.taken += 1
        while len(self._ahead) < min(self.AHEAD, self.taken) + 1:
            self._ahead.append(self._worker.submit(self._make))
        return self._ahead.popleft().result()

    def give_back(self, name: str) -> None:
        """Drop ``name``, on the threads."""
        self._drops = [d for d in self._drops if not d.done() or d.exception() is not None]
        self._drops.append(self._worker.submit(_drop_database, self.server_dsn, name))

    def close(self) -> None:
        for made in self._ahead:
            with contextlib.suppress(Exception):
                self.give_back(made.result())
        self._worker.shutdown(wait=True)
        failed = [d.exception() for d in self._drops if d.exception() is not None]
        assert not failed, f"dropping a test's database failed: {failed}"


@pytest.fixture(scope="session")
def pg_fresh_databases(pg_server_dsn: str, pg_template: str) -> Iterator[FreshDatabases]:
    fresh = FreshDatabases(pg_server_dsn, pg_template)
    try:
        yield fresh
    finally:
        fresh.close()


@pytest.fixture
def pg_dsn(pg_server_dsn: str, pg_fresh_databases: FreshDatabases) -> Iterator[str]:
    """DSN of a fresh database with the schema applied, dropped after the test."""
    name = pg_fresh_databases.take()
    try:
        yield _with_dbname(pg_server_dsn, name)
    finally:
        pg_fresh_databases.give_back(name)


@pytest.fixture
def pg_empty_dsn(pg_server_dsn: str) -> Iterator[str]:
    """DSN of a fresh database with no migration applied (to test a migration), dropped after."""
    name = f"skift_e_{secrets.token_hex(6)}"
    _create_database(pg_server_dsn, name)
    try:
        yield _with_dbname(pg_server_dsn, name)
    finally:
        _drop_database(pg_server_dsn, name)


class SessionDatabases:
    """Migrated databases that live as long as the test session (for shared servers)."""

    def __init__(self, server_dsn: str, template: str) -> None:
        self.server_dsn = server_dsn
        self.template = template
        self.names: list[str] = []

    def create(self) -> str:
        name = f"skift_s_{secrets.token_hex(6)}"
        _create_database(self.server_dsn, name, template=self.template)
        self.names.append(name)
        return _with_dbname(self.server_dsn, name)

    def drop_all(self) -> None:
        for name in self.names:
            _drop_database(self.server_dsn, name)


@pytest.fixture(scope="session")
def pg_session_databases(pg_server_dsn: str, pg_template: str) -> Iterator[SessionDatabases]:
    """A factory of fresh migrated databases dropped at the end of the session."""
    dbs = SessionDatabases(pg_server_dsn, pg_template)
    try:
        yield dbs
    finally:
        dbs.drop_all()


def _bouncer(pg_server_dsn: str, *, pool_size: int, prepared: bool) -> Iterator[PgBouncer]:
    from pgbouncer import PgBouncer, binary, prepared_binary

    if prepared and prepared_binary() is None:
        _unavailable(
            "no PgBouncer 1.21+ (set SKIFT_PGBOUNCER to one; .ci/run builds one from Debian's"
            " source package)"
        )
    if not prepared and binary() is None:
        _unavailable("pgbouncer is not installed (apt-get install pgbouncer; .ci/run does)")
    bouncer = PgBouncer(pool_size=pool_size, prepared=prepared)
    try:
        bouncer.start(pg_server_dsn)
    except RuntimeError as exc:
        _unavailable(f"pgbouncer did not start: {exc}")
    try:
        yield bouncer
    finally:
        bouncer.stop()


@pytest.fixture(scope="session")
def pgbouncer(pg_server_dsn: str) -> Iterator[PgBouncer]:
    """PgBouncer in transaction mode in front of the test server, for the session."""
    yield from _bouncer(pg_server_dsn, pool_size=40, prepared=False)


@pytest.fixture(scope="session")
def pgbouncer_keeping(pg_server_dsn: str) -> Iterator[PgBouncer]:
    """A PgBouncer that keeps prepared statements, for the session (the contract suite's
    ``pgbouncer-prepared`` leg)."""
    yield from _bouncer(pg_server_dsn, pool_size=40, prepared=True)


@pytest.fixture
def pgbouncer_prepared(pg_server_dsn: str) -> Iterator[PgBouncer]:
    """A PgBouncer that keeps prepared statements, 8 server connections, for one test."""
    yield from _bouncer(pg_server_dsn, pool_size=8, prepared=True)


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark tests that use the PostgreSQL fixtures ``pg`` so ``-m "not pg"`` deselects them."""
    for item in items:
        if PG_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.pg)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """With SKIFT_REQUIRE_PG=1, a skipped ``pg`` test is reported as failed.

    The report itself is turned into a failure, so the test shows up as
    failed (or as an error, when the skip came from a fixture) and pytest
    exits non-zero. Expected failures (xfail) are left alone.
    """
    report: pytest.TestReport = yield
    if (
        _require_pg()
        and report.skipped
        and not hasattr(report, "wasxfail")
        and item.get_closest_marker("pg") is not None
    ):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"SKIFT_REQUIRE_PG=1: a pg test may not be skipped ({reason})"
    return report
