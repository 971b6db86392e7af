"""Named SQL queries, loaded once from the ``.sql`` files beside this module.

A file is a sequence of blocks, each opened by ``-- name: NAME`` and a
one-line comment saying what the query is for. Blocks named with a leading
underscore are fragments: they are spliced, at load time, wherever another
block says ``/*:_name*/``. No SQL is ever built from run-time values.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
_SPLICE = re.compile(r"/\*:(_\w+)\*/")
# A query spliced into another with its parameters renamed: /*:set_cursor@c_*/ is
# set_cursor's SQL with %(x)s as %(c_x)s (but %(org)s), so that several writes can go as
# one statement (TxBase's deferred writes) without their parameters colliding.
_SPLICE_AS = re.compile(r"/\*:(\w+)@(\w+)\*/")
_PARAM = re.compile(r"%\((\w+)\)s")
# An optional filter on a parameter: "cardinality(%(projects)s::uuid[]) = 0 OR ..." (no
# projects given, or project_id = ANY (...)) and "%(parent)s::uuid IS NULL OR ...".
_OPTIONAL = re.compile(r"cardinality\(%\(\w+\)s|%\(\w+\)s(?:::[\w\[\]]+)? IS NULL OR", re.I)


def parse(text: str) -> dict[str, str]:
    """Split a named-query file into ``{name: sql}``, fragments spliced in."""
    parts = _NAME.split(text)
    raw: dict[str, str] = {}
    for i in range(1, len(parts), 2):
        name, body = parts[i], parts[i + 1]
        # indentation and whole-line comments are dropped: what psycopg caches is the
        # text, and a query past 4,096 bytes is parsed again on every call
        stripped = (ln.strip() for ln in body.strip().splitlines())
        lines = [ln for ln in stripped if ln and not ln.startswith("-- ")]
        if name in raw:
            raise ValueError(f"query {name!r} is defined twice")
        raw[name] = "\n".join(lines).strip()

    def expand(sql: str, depth: int = 0) -> str:
        if depth > 10:
            raise ValueError("fragments nest too deeply")
        sql = _SPLICE_AS.sub(lambda m: renamed(raw[m.group(1)], m.group(2), depth), sql)
        return _SPLICE.sub(lambda m: expand(raw[m.group(1)], depth + 1), sql)

    def renamed(sql: str, prefix: str, depth: int) -> str:
        def rename(m: re.Match[str]) -> str:
            name = m.group(1)
            return m.group(0) if name == "org" else f"%({prefix}{name})s"

        return _PARAM.sub(rename, expand(sql, depth + 1))

    return {name: expand(sql) for name, sql in raw.items() if not name.startswith("_")}


@cache
def queries() -> dict[str, str]:
    """Every named query of the store. A fragment may be spliced into a query of
    another file (the change stream's horizon is used by the webhook claim)."""
    folder = resources.files("skift_pg") / "queries"
    texts = [
        entry.read_text(encoding="utf-8")
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".sql")
    ]
    return parse("\n".join(texts))


@cache
def q(name: str) -> bytes:
    """The SQL of one named query, encoded once (psycopg takes bytes as a trusted query)."""
    return queries()[name].encode()


@cache
def custom_planned() -> frozenset[bytes]:
    """The queries PostgreSQL must plan for each call's parameters: those with an optional
    filter ("no projects given, or project_id = ANY (...)"). A generic plan cannot see
    which half of such a condition applies and was measured 100x slower than a plan made
    for the actual values (Ready, ClaimNext). Every other statement is prepared and, once
    PostgreSQL finds its generic plan as good, planned once per connection: planning was
    about half of PostgreSQL's CPU per claim + complete (16.5 -> 8 ms a pair)."""
    return frozenset(sql.encode() for sql in queries().values() if _OPTIONAL.search(sql))


SEEK_PLANNED: tuple[str, ...] = (
    "take_next_ready_any",
    "take_next_ready_any_person",
    "claim_reads",
    "unreleased_lease_of_claimed",
    "claim_writes",
    "insert_lease",
    "set_cursor",
    "complete_reads",
    "derive_by_number",
    "complete_lease_writes",
    "complete_answer_writes",
    "update_node",
    "update_lease",
    "insert_event_announced",
    "set_fingerprint",
    "save_response_fingerprint",
)
"""The claim's and the complete's prepared statements, planned as index lookups whatever the
tables' sizes (skift_pg._tx.PgCursor): every read in them finds rows by key or walks an
index a few entries, so a plan without sequential scans is right for an empty table and for
a full one, and a connection plans them twice (its first call and its REPLAN_AT-th
transaction), not again at each doubling. Their lookups are written so that such a plan is a
probe by the outer row's key (``OFFSET 0`` keeps a live-lease test or a request's events a
subquery run per row, not a join over the whole table)."""


@cache
def seek_planned() -> frozenset[bytes]:
    """The texts of :data:`SEEK_PLANNED`, as :func:`q` encodes them."""
    return frozenset(q(name) for name in SEEK_PLANNED)
