"""A transaction's statements wait in libpq's buffer until a read, a sync or a push sends
them (skift_pg._tx.PgCursor): in order, and an error in one is still raised."""

from __future__ import annotations

import hashlib
import inspect
import textwrap

import psycopg
import pytest
from psycopg.rows import dict_row

from skift_pg._tx import PgConn  # pyright: ignore[reportPrivateUsage]

pytestmark = pytest.mark.pg

EXECUTE_GEN = "1feed42bd4c7b9ad"
"""The digest of psycopg's BaseCursor._execute_gen, which PgCursor._execute_gen copies less
its flush and poll: a psycopg whose method changed fails here, to be looked at again."""


def test_psycopg_execute_gen_is_the_one_copied() -> None:
    source = textwrap.dedent(inspect.getsource(psycopg.AsyncCursor._execute_gen))  # pyright: ignore[reportPrivateUsage]
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    assert digest == EXECUTE_GEN, source


async def test_statements_go_out_in_order_at_a_read(pg_dsn: str) -> None:
    conn = await PgConn.connect(pg_dsn, row_factory=dict_row, prepare_threshold=0)
    async with conn, conn.pipeline():
        await conn.execute("BEGIN")
        await conn.execute("CREATE TEMP TABLE buffered (n int) ON COMMIT DROP")
        for n in range(5):
            await conn.execute("INSERT INTO buffered VALUES (%(n)s)", {"n": n})
        await conn.push()  # sent, not awaited
        await conn.execute("INSERT INTO buffered VALUES (%(n)s)", {"n": 5})
        cur = await conn.execute("SELECT array_agg(n ORDER BY n) AS ns FROM buffered")
        row = await cur.fetchone()
        assert row is not None
        assert row["ns"] == [0, 1, 2, 3, 4, 5]
        await conn.execute("COMMIT")


async def test_an_error_in_a_buffered_statement_is_raised_at_the_read(pg_dsn: str) -> None:
    conn = await PgConn.connect(pg_dsn, row_factory=dict_row, prepare_threshold=0)

    async def divide_then_read() -> None:
        async with conn.pipeline():
            await conn.execute("BEGIN")
            await conn.execute("SELECT 1 / %(z)s::int", {"z": 0})
            cur = await conn.execute("SELECT 1 AS one")
            await cur.fetchone()

    async with conn:
        with pytest.raises(psycopg.errors.DivisionByZero):
            await divide_then_read()
        await conn.rollback()
