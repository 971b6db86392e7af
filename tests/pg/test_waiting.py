"""A connection waits for PostgreSQL without a timer per wait (skift_pg._waiting): its
answers are psycopg's, an interrupted statement is cancelled on the server as psycopg does
it, and the loop's heap holds no timer of a wait."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import textwrap
from typing import Any

import psycopg
import pytest
from psycopg import waiting
from psycopg.rows import dict_row

from skift_pg._tx import PgConn  # pyright: ignore[reportPrivateUsage]

pytestmark = pytest.mark.pg

PSYCOPG_CODE = {
    # _waiting.wait_untimed is wait_async less its timer, and PgConn.wait hands an
    # interrupted wait to AsyncConnection.wait: a psycopg whose code changed fails here, to be
    # looked at again (and these digests renewed)
    "wait_async": "8e8b5568885cbd68",
    "AsyncConnection.wait": "c2bd56fac485af0a",
}


def test_the_psycopg_code_waited_around_is_the_one_checked() -> None:
    def digest(fn: Any) -> str:
        return hashlib.sha256(textwrap.dedent(inspect.getsource(fn)).encode()).hexdigest()[:16]

    got = {
        "wait_async": digest(waiting.wait_async),
        "AsyncConnection.wait": digest(psycopg.AsyncConnection.wait),
    }
    assert got == PSYCOPG_CODE


async def test_answers_come_without_a_timer_on_the_loop(pg_dsn: str) -> None:
    conn = await PgConn.connect(pg_dsn, row_factory=dict_row, autocommit=True)
    loop: Any = asyncio.get_running_loop()
    timers: list[Any] = []
    call_later = loop.call_later

    def counted(delay: float, callback: Any, *args: Any, **kwargs: Any) -> Any:
        timers.append(callback)
        return call_later(delay, callback, *args, **kwargs)

    loop.call_later = counted
    try:
        for i in range(50):
            cur = await conn.execute("SELECT %s::int AS n", (i,))
            assert await cur.fetchone() == {"n": i}
        async with conn.pipeline():
            curs = [await conn.execute("SELECT %s::int AS n", (i,)) for i in range(5)]
        assert [(await c.fetchone() or {})["n"] for c in curs] == list(range(5))
        assert timers == []
    finally:
        del loop.call_later
        await conn.close()


async def test_an_interrupted_statement_is_cancelled_on_the_server(pg_dsn: str) -> None:
    """As psycopg: the task's cancellation cancels the query in PostgreSQL (not left to run
    its 30 s) and the connection is ready for the next statement."""
    conn = await PgConn.connect(pg_dsn, row_factory=dict_row, autocommit=True)
    try:
        task = asyncio.create_task(conn.execute("SELECT pg_sleep(30)"))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 10)
        assert conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE
        cur = await conn.execute("SELECT 1 AS one")
        assert await cur.fetchone() == {"one": 1}
    finally:
        await conn.close()
