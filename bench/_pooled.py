"""The claim rows through PgBouncer: each claimer a separate store (as a separate process
would have) connected through one PgBouncer 1.21+ in transaction mode that keeps prepared
statements, its DSN saying ``pooler=transaction-prepared`` (docs/operations.md, "Behind
PgBouncer"). PostgreSQL then has ``POOL_SIZE`` backends in flight whatever the number of
claimers; the direct rows (``claim``) have one per claimer.

The PgBouncer is the tests' (tests/pgbouncer.py): the one ``SKIFT_PGBOUNCER`` names, else
the distribution's if it is 1.21 or later, else the one ``.ci/pgbouncer`` builds. Without
one the rows are left out, and the run says so.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from typing import Protocol

import skift

from ._env import ROOT, Server

SETTLE_PAIRS = 6
"""Pairs each claimer makes before a pooled row's clock starts: 12 transactions, where a
direct connection plans its statements again (skift_pg._tx.REPLAN_AT)."""

POOL_SIZE = 8
"""Server connections per database: 4 to 8 made the same pairs a second for 32 claimers on
the 2-core machine, 12 fewer (docs/benchmarks.md, issue 31, session 16)."""


class Pooler(Protocol):
    """What the claim rows use of tests/pgbouncer.py's PgBouncer."""

    pool_size: int

    @property
    def pid(self) -> int | None: ...

    def through(self, dsn: str) -> str: ...

    def reconnect(self) -> None: ...


@contextlib.contextmanager
def pgbouncer(srv: Server, *, pool_size: int = POOL_SIZE) -> Iterator[Pooler | None]:
    """A PgBouncer that keeps prepared statements in front of ``srv``, or None."""
    tests = str(ROOT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from pgbouncer import PgBouncer, prepared_binary  # tests/pgbouncer.py

    if prepared_binary() is None:
        yield None
        return
    bouncer = PgBouncer(pool_size=pool_size, prepared=True)
    bouncer.start(srv.dsn)
    try:
        yield bouncer
    finally:
        bouncer.stop()


async def settle(bouncer: Pooler, handles: Sequence[skift.LocalSkift]) -> None:
    """What a direct connection does at its 12th transaction (plans its statements again
    with the tables as they are by then), done for PgBouncer's server connections: a claimer
    behind PgBouncer replans only the server connection its DEALLOCATE ALL lands on, and the
    rest keep the plans made on the scratch database's empty tables. Each claimer makes
    ``SETTLE_PAIRS`` pairs, then PgBouncer replaces every server connection (RECONNECT), as
    it would after ``server_lifetime`` in a deployment (docs/operations.md)."""
    import asyncio

    async def pairs(h: skift.LocalSkift) -> None:
        for _ in range(SETTLE_PAIRS):
            c = await h.claim_next()
            await h.complete(c.node.ref, lease=c.lease.id)

    await asyncio.gather(*(pairs(h) for h in handles))
    await asyncio.to_thread(bouncer.reconnect)
