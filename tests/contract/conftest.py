"""The behaviour suite's fixtures: one skift per store, opened through the public API.

Every test in ``tests/contract`` runs once per implementation: ``memory``,
``pg``, and ``remote`` (a real ``skift serve`` process over a real unix
socket against a fresh PostgreSQL database, reached with
``skift_server.connect``). Tests talk to skift only through the object the
``sk`` fixture yields and the ``skift.*`` names, never through a store's
internals, so the same test proves the same rule on every implementation.

On ``remote`` the server runs with ``--test-hooks``: ``acting_as`` and
``store.set_clock_offset`` travel as metadata the server honours only with
that flag, and ``open_skift(limits=...)`` starts the server with those limits
(``--limit NAME=VALUE``). The server's lease sweeper is off (``--sweep-every
0``) so tests that sweep by hand see every expiry themselves. A server that
does not exit cleanly on SIGTERM fails the test.

- ``sk``: skift acting as the user ``ada``. ``sk.acting_as(skift.Agent("bot"))``
  is a handle on the same store acting as another principal.
- ``open_skift``: a factory for tests that need other limits or another
  principal. Call it at most once per test: on ``memory`` each call is a fresh,
  empty store.
- ``snap``: a snapshot of everything a user can see (nodes, ready set, events,
  projects), to assert that a refused request wrote nothing.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Protocol

import pytest

import skift

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


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
        pytest.param("remote", marks=[pytest.mark.pg, pytest.mark.remote]),
    ]
)
def store_url(request: pytest.FixtureRequest) -> str:
    """Where the store under test lives; ``pg_dsn`` (tests/conftest.py) is a fresh database.

    For ``remote`` it is ``remote+`` and the DSN the server will serve.
    """
    if request.param == "memory":
        return "memory:"
    dsn: str = request.getfixturevalue("pg_dsn")
    return f"remote+{dsn}" if request.param == "remote" else dsn


@pytest.fixture
async def open_skift(store_url: str) -> AsyncIterator[OpenSkift]:
    async with contextlib.AsyncExitStack() as stack:

        async def factory(
            *,
            limits: skift.Limits | None = None,
            principal: skift.PrincipalSpec | None = None,
        ) -> skift.LocalSkift:
            who = principal or skift.User("ada")
            if store_url.startswith("remote+"):
                return await _open_remote(stack, store_url.removeprefix("remote+"), limits, who)
            handle = skift.open(store_url, principal=who, limits=limits)
            return await stack.enter_async_context(handle)

        yield factory


async def _open_remote(
    stack: contextlib.AsyncExitStack,
    dsn: str,
    limits: skift.Limits | None,
    principal: skift.PrincipalSpec,
) -> Any:
    from serverproc import ServerProcess, limit_flags

    from skift_server import connect

    server = ServerProcess(
        "--dsn", dsn, "--test-hooks", "--sweep-every", "0", *limit_flags(limits), fork=True
    )
    stack.callback(server.cleanup)
    await server.start()

    async def stop() -> None:
        code = await server.stop()
        assert code == 0, f"skift serve exited with {code} on SIGTERM:\n{server.log()}"

    stack.push_async_callback(stop)
    return await stack.enter_async_context(connect(server.url, principal=principal))


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
