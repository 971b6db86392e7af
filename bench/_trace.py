"""Count the statements skift sends and the round trips they cost, and capture them for
EXPLAIN plans.

The store's named queries are matched back to their names through
``skift_pg``'s query table; this is measurement code, so it reaches into
the store's private query loader rather than asking the store for a hook.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import AsyncGenerator, Generator
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from skift_pg._queries import queries  # pyright: ignore[reportPrivateUsage]


def _names() -> dict[bytes, str]:
    return {sql.encode(): name for name, sql in queries().items()}


@dataclass
class Trace:
    """Statements sent while a trace was active: counts by name, and the first call of each."""

    counts: collections.Counter[str] = field(default_factory=lambda: collections.Counter())
    seconds: dict[str, float] = field(default_factory=lambda: collections.defaultdict(float))
    calls: dict[str, tuple[bytes, Any]] = field(default_factory=lambda: {})

    @property
    def statements(self) -> int:
        return sum(self.counts.values())


@contextlib.contextmanager
def trace() -> Generator[Trace]:
    """Record every statement any psycopg async cursor executes (executemany counts once:
    psycopg pipelines it into one round trip)."""
    names = _names()
    t = Trace()
    orig_execute = psycopg.AsyncCursor.execute
    orig_many = psycopg.AsyncCursor.executemany

    def note(query: Any, params: Any) -> str:
        key = query if isinstance(query, bytes) else str(query).encode()
        name = names.get(key, key.decode(errors="replace").split()[0].lower())
        t.counts[name] += 1
        t.calls.setdefault(name, (key, params))
        return name

    async def execute(self: Any, query: Any, params: Any = None, **kw: Any) -> Any:
        name = note(query, params)
        t0 = time.perf_counter()
        try:
            return await orig_execute(self, query, params, **kw)
        finally:
            t.seconds[name] += time.perf_counter() - t0

    async def executemany(self: Any, query: Any, params_seq: Any, **kw: Any) -> Any:
        seq = list(params_seq)
        name = note(query, seq[0]) if seq else "executemany"
        t0 = time.perf_counter()
        try:
            return await orig_many(self, query, seq, **kw)
        finally:
            t.seconds[name] += time.perf_counter() - t0

    psycopg.AsyncCursor.execute = execute  # type: ignore[method-assign]
    psycopg.AsyncCursor.executemany = executemany  # type: ignore[method-assign]
    try:
        yield t
    finally:
        psycopg.AsyncCursor.execute = orig_execute  # type: ignore[method-assign]
        psycopg.AsyncCursor.executemany = orig_many  # type: ignore[method-assign]


_READ_ONLY = ("select", "with")


async def explain(dsn: str, t: Trace, *, only: tuple[str, ...] | None = None) -> dict[str, str]:
    """EXPLAIN (ANALYZE, BUFFERS) of each traced read, in a transaction rolled back after
    (ClaimNext's FOR UPDATE takes row locks), with the store's session settings."""
    plans: dict[str, str] = {}
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        # session settings first, outside any transaction (a rollback would undo them)
        await conn.execute("SET plan_cache_mode = force_custom_plan")
        await conn.execute("SET jit = off")
        for name, (query, params) in t.calls.items():
            if only is not None and name not in only:
                continue
            text = query.decode()
            if not text.lstrip().lower().startswith(_READ_ONLY) or "INSERT" in text:
                continue
            async with conn.transaction(force_rollback=True):
                cur = await conn.execute(b"EXPLAIN (ANALYZE, BUFFERS) " + query, params)
                plans[name] = "\n".join(r[0] for r in await cur.fetchall())
    return plans


@dataclass
class RoundTrips:
    """Round trips counted by :func:`round_trips` while ``counting`` is on."""

    count: int = 0
    counting: bool = False


@contextlib.asynccontextmanager
async def round_trips(dsn: str) -> AsyncGenerator[tuple[str, RoundTrips]]:
    """A TCP proxy in front of the server ``dsn`` names, and the DSN that goes through it.

    A round trip is counted each time the server answers after the client spoke: the
    client sending several statements before it waits (a pipeline) is one, a statement
    sent and waited for is one, whatever library or protocol detail is behind it. This
    is the honest count of waits on the network, not of statements.
    """
    params = conninfo_to_dict(dsn)
    host = str(params.get("host") or "127.0.0.1")
    port = int(str(params.get("port") or 5432))
    rt = RoundTrips()
    open_writers: set[asyncio.StreamWriter] = set()
    handlers: set[asyncio.Task[Any]] = set()

    async def serve(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        open_writers.add(client_w)
        server_r, server_w = await asyncio.open_connection(host, port)
        open_writers.add(server_w)
        spoke = [False]  # the client sent something the server has not answered yet

        async def pump(r: asyncio.StreamReader, w: asyncio.StreamWriter, up: bool) -> None:
            try:
                while data := await r.read(65536):
                    if up:
                        spoke[0] = True
                    elif spoke[0]:
                        spoke[0] = False
                        if rt.counting:
                            rt.count += 1
                    w.write(data)
                    await w.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                w.close()

        await asyncio.gather(pump(client_r, server_w, True), pump(server_r, client_w, False))

    proxy = await asyncio.start_server(serve, "127.0.0.1", 0)
    proxy_port = proxy.sockets[0].getsockname()[1]
    try:
        yield make_conninfo(dsn, host="127.0.0.1", port=str(proxy_port)), rt
    finally:
        proxy.close()
        for w in open_writers:
            w.close()
        await asyncio.gather(*handlers, return_exceptions=True)
