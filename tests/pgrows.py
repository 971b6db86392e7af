"""Copies of a table's rows made in SQL, for tests that need a table of many rows fast: the
table's columns, and the select list that copies them with some computed afresh."""

from __future__ import annotations

from typing import Any

import psycopg


async def columns(conn: psycopg.AsyncConnection[Any], table: str) -> list[str]:
    """``table``'s columns that can be written (not generated), in order."""
    cur = await conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = %(t)s "
        "AND is_generated = 'NEVER' ORDER BY ordinal_position",
        {"t": table},
    )
    return [str(r[0]) for r in await cur.fetchall()]


def select_list(names: list[str], made: dict[str, str], alias: str) -> str:
    """The select list of a copy: each column as ``alias`` has it, but those in ``made``
    (name: SQL expression)."""
    return ", ".join(made.get(c, f"{alias}.{c}") for c in names)
