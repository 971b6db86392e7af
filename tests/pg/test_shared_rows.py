"""Concurrent claimers of one organization do not take turns on a row they all share
(issue 31, migration 0029).

A foreign key's check locks the row it finds FOR KEY SHARE; while another transaction
holds such a lock PostgreSQL makes a MultiXact of all of them and rewrites the row's tuple.
Every claim and complete used to lock the organization's row in orgs (its lease, request,
events and rotation cursor pointed at it) and a project's row (the cursor): 32 claimers
made 4,500 MultiXacts in 2,000 pairs and fewer pairs a second than 8 (docs/benchmarks.md).
A row's ``xmax`` names its last locker or writer: claims and completes leave the
organization's and the projects' unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib

import psycopg

import skift
from skift_pg import PgStore

CLAIMERS = 6
PAIRS = 5  # each claimer's


def _lockers(dsn: str) -> dict[str, str]:
    """The xmax of the organization's row and of each project's row."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT 'org ' || name, xmax::text FROM orgs"
            " UNION ALL SELECT 'project ' || slug, xmax::text FROM projects"
        ).fetchall()
    return {name: xmax for name, xmax in rows}


async def test_claims_and_completes_lock_no_row_every_claimer_shares(pg_dsn: str) -> None:
    async with skift.LocalSkift(PgStore(pg_dsn), principal=skift.User("owner")) as owner:
        for p in range(3):
            slug = (await owner.create_project(f"Shared {p}")).slug
            await owner.patch(
                slug, [skift.CreateNode(title=f"w{i}") for i in range(CLAIMERS * PAIRS)]
            )
        async with contextlib.AsyncExitStack() as stack:
            claimers = [
                await stack.enter_async_context(
                    skift.LocalSkift(PgStore(pg_dsn, max_size=2), principal=skift.Agent(f"a{i}"))
                )
                for i in range(CLAIMERS)
            ]
            # each claimer's first call made its principal (a row that names the organization)
            await asyncio.gather(*(c.list_projects() for c in claimers))
            before = _lockers(pg_dsn)

            async def work(c: skift.LocalSkift) -> None:
                for _ in range(PAIRS):
                    claim = await c.claim_next()
                    await c.complete(claim.node.ref, lease=claim.lease.id)

            await asyncio.gather(*(work(c) for c in claimers))
        assert len(before) == 4  # the organization and its three projects
        assert _lockers(pg_dsn) == before
