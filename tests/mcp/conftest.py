"""One real ``skift serve`` per test module, over a unix socket, backed by PostgreSQL.

The server runs with ``--test-hooks`` so a test can act as an agent
(``connect(url, principal=skift.Agent(...))``) as well as the server's owner
(a plain connection: the test process's uid, bootstrapped as a user). Each
test makes a fresh project, which is all the isolation these tests need, so
one database and one server serve the whole module.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import secrets
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from serverproc import ServerProcess

import skift
import skift_server

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator


def _admin(dsn: str) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(dsn, autocommit=True, connect_timeout=10)


def _in_thread(coro: object) -> None:
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, coro).result()  # pyright: ignore[reportArgumentType]


@pytest.fixture(scope="module")
def mcp_server(pg_server_dsn: str, pg_template: str) -> Iterator[ServerProcess]:
    """A ``skift serve`` process over a fresh database copied from the migrated template."""
    name = f"skift_mcp_{secrets.token_hex(6)}"
    with _admin(pg_server_dsn) as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(pg_template)
            )
        )
    parts = urlsplit(pg_server_dsn)
    if parts.scheme in ("postgresql", "postgres"):
        dsn = urlunsplit(parts._replace(path="/" + name))
    else:
        dsn = make_conninfo(pg_server_dsn, dbname=name)
    server = ServerProcess("--dsn", dsn, "--test-hooks", "--sweep-every", "0", fork=True)
    try:
        _in_thread(server.start())
        yield server
        code: list[int] = []

        async def stop() -> None:
            code.append(await server.stop())

        _in_thread(stop())
        assert code == [0], f"skift serve exited with {code} on SIGTERM:\n{server.log()}"
    finally:
        server.cleanup()
        with _admin(pg_server_dsn) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture
async def owner(mcp_server: ServerProcess) -> AsyncIterator[skift_server.RemoteSkift]:
    """The server's owner (this process's uid over the socket): a user principal."""
    async with skift_server.connect(mcp_server.url) as sk:
        yield sk


@pytest.fixture
async def agent(mcp_server: ServerProcess) -> AsyncIterator[skift_server.RemoteSkift]:
    """An agent principal ``bot`` on the same server."""
    async with skift_server.connect(mcp_server.url, principal=skift.Agent("bot")) as sk:
        yield sk


@pytest.fixture
async def project(owner: skift_server.RemoteSkift) -> str:
    """A fresh project of this test's own."""
    info = await owner.create_project(f"mcp {secrets.token_hex(4)}")
    return info.slug
