"""The claim's and the complete's statements (skift_pg._queries.SEEK_PLANNED) are planned
without sequential scans and kept past the doubling re-plans; the rest are planned again."""

from __future__ import annotations

import pytest

import skift
from skift_pg import PgStore
from skift_pg._queries import SEEK_PLANNED, queries  # pyright: ignore[reportPrivateUsage]

pytestmark = pytest.mark.pg


async def _transactions(store: PgStore) -> int:
    async with store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
        return conn._transactions  # pyright: ignore[reportPrivateUsage]


async def _prepared(store: PgStore) -> dict[str, str]:
    """The connection's prepared statements: their first words (as psycopg sent them, with
    $n for the parameters) by name."""
    async with store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
        cur = await conn.execute("SELECT name, statement FROM pg_prepared_statements")
        rows = await cur.fetchall()
        seqscan = await (await conn.execute("SHOW enable_seqscan")).fetchone()
    assert seqscan is not None
    assert seqscan["enable_seqscan"] == "on"  # set back after planning
    return {str(r["name"]): " ".join(str(r["statement"]).split())[:60] for r in rows}


def _head(name: str) -> str:
    """A named query's first words, as pg_prepared_statements shows them (up to a parameter)."""
    text = " ".join(queries()[name].split())
    return text.split("%(")[0][:40]


async def test_the_claims_statements_keep_their_plans_past_the_doublings(pg_dsn: str) -> None:
    async with skift.LocalSkift(PgStore(pg_dsn), principal=skift.User("person")) as person:
        proj = await person.create_project("Seek plans")
        await person.patch(proj.slug, [skift.CreateNode(title=f"n{i}") for i in range(40)])
    store = PgStore(pg_dsn, min_size=1, max_size=1, listen=False)
    async with skift.LocalSkift(store, principal=skift.Agent("seeker")) as agent:

        async def pairs_until(transaction: int) -> None:
            while await _transactions(store) < transaction:
                c = await agent.claim_next()
                await agent.complete(c.node.ref, lease=c.lease.id)

        await pairs_until(14)  # past the 12th, where every statement is planned again
        before = await _prepared(store)
        await pairs_until(50)  # past the 24th and the 48th
        after = await _prepared(store)

    seek = {_head(name) for name in SEEK_PLANNED}
    kept = {name for name, text in before.items() if any(text.startswith(h) for h in seek)}
    others = set(before) - kept
    assert len(kept) >= 5, before  # the take, the claim's reads and writes, the complete's
    assert kept <= set(after), "a statement planned without sequential scans was planned again"
    assert others, before  # the wake-up at least
    assert not others & set(after), "a statement with sequential scans allowed was kept"
