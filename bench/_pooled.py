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
from collections.abc import Iterator
from typing import Protocol

from ._env import ROOT, Server

POOL_SIZE = 8
"""Server connections per database: 4 to 8 made the same pairs a second for 32 claimers on
the 2-core machine, 12 fewer (docs/benchmarks.md, issue 31, session 16)."""


class Pooler(Protocol):
    """What the claim rows use of tests/pgbouncer.py's PgBouncer."""

    pool_size: int

    def through(self, dsn: str) -> str: ...


@contextlib.contextmanager
def pgbouncer(srv: Server) -> Iterator[Pooler | None]:
    """A PgBouncer that keeps prepared statements in front of ``srv``, or None."""
    tests = str(ROOT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from pgbouncer import PgBouncer, prepared_binary  # tests/pgbouncer.py

    if prepared_binary() is None:
        yield None
        return
    bouncer = PgBouncer(pool_size=POOL_SIZE, prepared=True)
    bouncer.start(srv.dsn)
    try:
        yield bouncer
    finally:
        bouncer.stop()
