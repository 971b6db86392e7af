"""The behaviour suite's fixtures: one skift per store, opened through the public API.

Every test in ``tests/contract`` runs once per implementation: ``memory``,
``pg``, ``pgbouncer`` (the PostgreSQL store through PgBouncer in transaction
mode, tests/pgbouncer.py), ``pgbouncer-prepared`` (through a PgBouncer 1.21+ that keeps
prepared statements, the store told so) and ``remote`` (a real ``skift serve`` process over a
real unix socket, reached with ``skift_server.connect``). Tests talk to skift only through the object the
``sk`` fixture yields and the ``skift.*`` names, never through a store's
internals, so the same test proves the same rule on every implementation.

On ``remote`` the server runs with ``--test-hooks``: ``acting_as``, the
organization and ``store.set_clock_offset`` travel as metadata the server
honours only with that flag. Starting a server per test cost more than the
tests themselves, so one server (on its own database) serves every test that
asks for the same limits, and each test works in an organization of its own —
tenancy by organization is itself a contract rule, so a test cannot see
another's rows. ``open_skift(limits=...)`` gets the server started with those
limits (``--limit NAME=VALUE``). The servers' lease sweeper is off
(``--sweep-every 0``) so tests that sweep by hand see every expiry themselves,
and so is their webhook delivery worker (``--webhook-workers 0``): the suite
proves the rules of deliveries, as memory and pg keep them, not their sending
(tests/server/test_webhook_delivery.py does that).
``pgbouncer`` shares one database the same way (an organization per test, so the
leg costs what its queries cost, not a database per test); a test marked
``own_server`` gets a fresh database through PgBouncer instead.
A test that needs a server to itself (one that attaches a unix identity, which
is unique across organizations) is marked ``own_server``. A server that does
not exit cleanly on SIGTERM fails the session.

- ``sk``: skift acting as the user ``ada``, an admin of its organization (its first
  person; on a server of its own the owner grants ada the role).
  ``sk.acting_as(skift.Agent("bot"))`` is a handle on the same store acting as another
  principal (a person added so is not an admin).
- ``open_skift``: a factory for tests that need other limits or another
  principal. Call it at most once per test: on ``memory`` each call is a fresh,
  empty store.
- ``snap``: a snapshot of everything a user can see (nodes, ready set, events,
  projects), to assert that a refused request wrote nothing.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import secrets
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol

import pytest

import skift

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator


class OpenSkift(Protocol):
    async def __call__(
        self,
        *,
        limits: skift.Limits | None = None,
        principal: skift.PrincipalSpec | None = None,
    ) -> skift.LocalSkift: ...


class Snap(Protocol):
    async def __call__(self, sk: skift.LocalSkift) -> dict[str, Any]: ...


@pytest.fixture(
    params=[
        "memory",
        pytest.param("pg", marks=pytest.mark.pg),
        pytest.param("pgbouncer", marks=[pytest.mark.pg, pytest.mark.pgbouncer]),
        pytest.param("pgbouncer-prepared", marks=[pytest.mark.pg, pytest.mark.pgbouncer]),
        pytest.param("remote", marks=[pytest.mark.pg, pytest.mark.remote]),
    ]
)
def store_url(request: pytest.FixtureRequest) -> str:
    """Where the store under test lives; ``pg_dsn`` (tests/conftest.py) is a fresh database.

    For ``remote`` it is ``remote+shared`` (a shared server, see above), or for a
    test marked ``own_server`` ``remote+`` and the DSN its own server serves. For
    ``pgbouncer`` it is a database reached through PgBouncer: the shared one
    (``shared+`` and its DSN: the test works in an organization of its own), or for a
    test marked ``own_server`` a fresh one. ``pgbouncer-prepared`` is the same through a
    PgBouncer that keeps prepared statements, the URL saying ``pooler=transaction-prepared``.
    """
    if request.param == "memory":
        return "memory:"
    own = request.node.get_closest_marker("own_server") is not None
    if request.param == "remote" and not own:
        return "remote+shared"
    if request.param.startswith("pgbouncer"):
        prepared = request.param == "pgbouncer-prepared"
        bouncer: Any = request.getfixturevalue("pgbouncer_keeping" if prepared else "pgbouncer")
        told = "?pooler=transaction-prepared" if prepared else ""
        if own:
            return bouncer.through(request.getfixturevalue("pg_dsn")) + told
        shared: str = request.getfixturevalue("pgbouncer_shared_db")
        return f"shared+{bouncer.through(shared)}{told}"
    dsn: str = request.getfixturevalue("pg_dsn")
    return f"remote+{dsn}" if request.param == "remote" else dsn


@pytest.fixture(scope="session")
def pgbouncer_shared_db(pg_session_databases: Any) -> str:
    """The database the ``pgbouncer`` leg's tests share (an organization each)."""
    return pg_session_databases.create()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out the ``remote`` parameter of tests marked ``in_process``.

    Such a test exercises a step that only exists in process (what a transport
    does before the API, say) or an API not on the wire; its marker says why.
    Leaving the parameter out, rather than skipping it, keeps CI's rule that a
    skipped PostgreSQL test is a failure.
    """
    keep: list[pytest.Item] = []
    gone: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        remote = callspec is not None and callspec.params.get("store_url") == "remote"
        if remote and item.get_closest_marker("in_process") is not None:
            gone.append(item)
        else:
            keep.append(item)
    if gone:
        config.hook.pytest_deselected(items=gone)
        items[:] = keep


class SharedServers:
    """``skift serve --test-hooks`` processes shared by the session, one per set of limits."""

    def __init__(self, databases: Any) -> None:
        self.databases = databases
        self.servers: dict[tuple[str, ...], Any] = {}

    def get(self, limits: skift.Limits | None) -> Any:
        from serverproc import limit_flags

        key = tuple(limit_flags(limits))
        server = self.servers.get(key)
        if server is None:
            server = self.servers[key] = _start_server(self.databases.create(), list(key))
        return server

    def stop_all(self) -> None:
        bad: list[str] = []
        for server in self.servers.values():
            code = _in_thread(server.stop())
            if code != 0:
                bad.append(f"skift serve exited with {code} on SIGTERM:\n{server.log()}")
            server.cleanup()
        assert not bad, "\n".join(bad)


def _in_thread(coro: Any) -> Any:
    """Run a coroutine to completion on a loop of its own (session fixtures are sync)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _start_server(dsn: str, flags: list[str]) -> Any:
    from serverproc import ServerProcess

    server = ServerProcess(
        "--dsn", dsn, "--test-hooks", "--sweep-every", "0", "--webhook-workers", "0", *flags,
        fork=True,
    )  # fmt: skip
    try:
        _in_thread(server.start())
    except BaseException:
        server.cleanup()
        raise
    return server


@pytest.fixture(scope="session")
def shared_servers(pg_session_databases: Any) -> Iterator[SharedServers]:
    servers = SharedServers(pg_session_databases)
    try:
        yield servers
    finally:
        servers.stop_all()


@pytest.fixture
async def open_skift(store_url: str, request: pytest.FixtureRequest) -> AsyncIterator[OpenSkift]:
    async with contextlib.AsyncExitStack() as stack:
        org = f"test-{secrets.token_hex(6)}"

        async def factory(
            *,
            limits: skift.Limits | None = None,
            principal: skift.PrincipalSpec | None = None,
        ) -> skift.LocalSkift:
            who = principal or skift.User("ada")
            if store_url.startswith("remote+"):
                return await _open_remote(stack, request, store_url, limits, who, org)
            if store_url.startswith("shared+"):
                url = store_url.removeprefix("shared+")
                handle = skift.open(url, principal=who, limits=limits, org=org)
                return await stack.enter_async_context(handle)
            handle = skift.open(store_url, principal=who, limits=limits)
            return await stack.enter_async_context(handle)

        yield factory


async def _open_remote(
    stack: contextlib.AsyncExitStack,
    request: pytest.FixtureRequest,
    store_url: str,
    limits: skift.Limits | None,
    principal: skift.PrincipalSpec,
    org: str,
) -> Any:
    from skift_server import connect

    if store_url != "remote+shared":
        from serverproc import ServerProcess, limit_flags

        dsn = store_url.removeprefix("remote+")
        server = ServerProcess(
            "--dsn",
            dsn,
            "--test-hooks",
            "--sweep-every",
            "0",
            "--webhook-workers",
            "0",
            *limit_flags(limits),
            fork=True,
        )
        stack.callback(server.cleanup)
        await server.start()

        async def stop() -> None:
            code = await server.stop()
            assert code == 0, f"skift serve exited with {code} on SIGTERM:\n{server.log()}"

        stack.push_async_callback(stop)
        handle = await stack.enter_async_context(connect(server.url, principal=principal))
        if principal.kind is skift.PrincipalKind.USER:
            await _admin_of_own_server(dsn, handle, principal.name)
        return handle
    shared: SharedServers = request.getfixturevalue("shared_servers")
    server = shared.get(limits)
    handle = connect(server.url, principal=principal, org=org)
    handle.store.set_clock_offset(timedelta(0))
    opened = await stack.enter_async_context(handle)
    await opened.list_projects()  # the principal exists first, as skift.open makes it on memory
    return opened


async def _admin_of_own_server(dsn: str, handle: Any, name: str) -> None:
    """On a server of its own the test's person is not the organization's first (the server's
    owner is, at start): the owner grants them the admin role, in process over the server's
    database, so ``sk`` is an admin of its organization on every store as on memory."""
    import getpass

    await handle.list_projects()  # the person exists
    async with skift.open(dsn, principal=skift.User(getpass.getuser())) as owner:
        if not next(p for p in await owner.list_principals() if p.name == name).admin:
            await owner.grant_admin(name, reason="the test's person")


@pytest.fixture
async def sk(open_skift: OpenSkift) -> skift.LocalSkift:
    return await open_skift()


async def _all_nodes(sk: skift.LocalSkift) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    page: str | None = None
    while True:
        got = await sk.list_nodes(page=page)
        out.extend(
            (
                n.ref,
                n.title,
                n.status,
                n.parent,
                n.kind,
                n.priority,
                n.labels,
                n.assignee_kind,
                n.held,
            )
            for n in got.nodes
        )
        page = got.next_page
        if page is None:
            return sorted(out)


async def _snapshot(sk: skift.LocalSkift) -> dict[str, Any]:
    ready = await sk.ready()
    projects = await sk.list_projects(archived=True)
    return {
        "nodes": await _all_nodes(sk),
        "ready": [n.ref for n in ready.nodes],
        "events": [(e.id, e.op) for e in await sk.events()],
        "projects": sorted((p.slug, p.title, p.archived, p.held, p.node_count) for p in projects),
    }


@pytest.fixture
def snap() -> Snap:
    return _snapshot
