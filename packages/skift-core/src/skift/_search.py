"""Search: lexical matching over titles, bodies, results and comments.

One tokenizer for both stores: a word is a run of letters and digits,
lowercased; everything else separates words; nothing is stemmed and no word
is a stop word. PostgreSQL indexes the same words (its ``simple`` text search
configuration over text whose non-alphanumerics are replaced by spaces, see
migration 0003), so the in-memory store and PostgreSQL agree on which nodes
match. A node matches when every word of the query occurs somewhere in it:
its title, body, result, or the body of one of its comments.

Ranking is the store's (``ts_rank`` in PostgreSQL, :func:`rank` here); both
weigh a title above a body, a body above a result and a result above a
comment. ``matched`` and ``snippet`` of a hit are worked out here, once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING
from uuid import UUID

from ._errors import Invalid, LimitExceeded
from ._models import Comment, Node
from ._origins import looks_external
from ._pages import Page, read_position
from ._pages import cut as cut_page
from ._store import SearchQuery, Tx
from ._views import SearchHit

if TYPE_CHECKING:  # the in-memory store imports this module, and the engine's module imports it
    from ._context import Actor, Context

_WORD = re.compile(r"[^\W_]+")

FIELDS = ("beads_id", "title", "body", "result", "comment")
"""The fields a search looks in, in the order ``SearchHit.matched`` lists them."""

WEIGHTS = {"beads_id": 1.0, "title": 1.0, "body": 0.4, "result": 0.2, "comment": 0.1}
"""How much one field counts in a rank: PostgreSQL's ``ts_rank`` weights A, B, C, D."""

SNIPPET_CHARS = 160


def words(text: str) -> list[str]:
    """The words of ``text`` as search sees them: letters and digits, lowercased."""
    return [w.lower() for w in _WORD.findall(text)]


def rank(fields: Sequence[tuple[str, str]], terms: Sequence[str]) -> float | None:
    """The in-memory store's rank of a node's fields for ``terms``; None when a term is missing.

    Each occurrence of a term counts its field's weight, halving with every
    further occurrence in that field, so a title hit outranks any number of
    body hits.
    """
    counts: dict[str, dict[str, int]] = {}
    for name, text in fields:
        per = counts.setdefault(name, {})
        for w in words(text):
            per[w] = per.get(w, 0) + 1
    if not all(any(t in per for per in counts.values()) for t in terms):
        return None
    score = 0.0
    for t in terms:
        for name, per in counts.items():
            n = per.get(t, 0)
            score += WEIGHTS[name] * 2 * (1 - 0.5**n)
    return score / len(terms)


def matched(fields: Iterable[tuple[str, str]], terms: Sequence[str]) -> tuple[str, ...]:
    """Which fields hold at least one of ``terms``, in :data:`FIELDS` order."""
    wanted = set(terms)
    hit = {name for name, text in fields if wanted.intersection(words(text))}
    return tuple(f for f in FIELDS if f in hit)


def snippet(fields: Sequence[tuple[str, str]], terms: Sequence[str]) -> str:
    """Short plain text around the first match, preferring body, result and comments to the title.

    Whitespace is collapsed; an ellipsis marks text cut off at either end.
    """
    wanted = set(terms)
    order = [f for f in fields if f[0] != "title"] + [f for f in fields if f[0] == "title"]
    for _, text in order:
        for m in _WORD.finditer(text):
            if m.group().lower() in wanted:
                return _window(text, m.start())
    body = next((text for name, text in fields if name == "body" and text.strip()), "")
    return _window(body, 0) if body else ""


def _window(text: str, at: int) -> str:
    start = max(0, at - SNIPPET_CHARS // 3)
    end = min(len(text), start + SNIPPET_CHARS)
    piece = " ".join(text[start:end].split())
    return ("…" if start > 0 else "") + piece + ("…" if end < len(text) else "")


def node_fields(
    title: str, body: str, result: str | None, comments: Iterable[Comment]
) -> list[tuple[str, str]]:
    """A node's searchable text, field by field (one ``comment`` entry per comment)."""
    out = [("title", title), ("body", body), ("result", result or "")]
    out.extend(("comment", c.body) for c in comments)
    return out


async def search(
    e: Context,
    tx: Tx,
    actor: Actor,
    query: str,
    *,
    projects: Sequence[str] | None,
    limit: int | None,
    include_archived: bool,
    page: str | None = None,
) -> Page[SearchHit]:
    """Nodes of the caller's organization whose content holds every word of ``query``, best
    first (rank descending, then project id and number): ``limit`` of them, after ``page``.

    Pages follow the key (rank, project, number) of the last hit sent. A rank is the
    node's own text's (its title, body, result and comments), not relative to other
    nodes, so nodes added, removed or edited meanwhile move no other hit: a node whose
    text is unchanged throughout the walk is sent once. A node whose text changes
    between pages is ranked by its new text: the walk may send it again or not at all."""
    if len(query) > e.limits.query_chars:
        raise LimitExceeded(
            f"the query is {len(query)} characters; the limit is {e.limits.query_chars}",
            next="Search for fewer, more telling words.",
            limit="query",
            bound=e.limits.query_chars,
        )
    terms = tuple(dict.fromkeys(words(query)))
    if not terms:
        raise Invalid(
            "the search has no words to look for",
            next="Search for one or more words (letters and digits), e.g. 'oauth token'.",
            field="query",
        )
    size = e.page_size(limit)
    after = read_position("search", page, (float, UUID, int))
    ids: list[UUID] = []
    for ref in projects or ():
        pid = (await e.resolve_project(tx, ref)).id
        if pid not in ids:
            ids.append(pid)
    first = await _imported(e, tx, query, ids, include_archived)
    skip = {n.id for n, _ in first}
    rows = await tx.search(
        SearchQuery(
            terms=terms,
            projects=tuple(ids),
            include_archived=include_archived,
            limit=size + 1 + len(skip),
            hidden=tuple(await e.hidden(tx)),
            after=after,
        )
    )
    ranked = [h for h in first if after is None or past(h, after)]
    ranked += [(n, r) for n, r in rows if n.id not in skip]
    rows, ends, more = cut_page(
        "search", ranked, size, lambda h: (h[1], h[0].project_id, h[0].number)
    )
    nodes = [n for n, _ in rows]
    infos = await e.infos(tx, nodes)
    by_node: dict[UUID, list[Comment]] = {}
    for c in await tx.comments_of([n.id for n in nodes]):
        by_node.setdefault(c.node_id, []).append(c)
    hits: list[SearchHit] = []
    for (n, score), info in zip(rows, infos, strict=True):
        fields = node_fields(n.title, n.body, n.result, by_node.get(n.id, ()))
        if n.id in skip:
            fields.append(("beads_id", query.strip()))
        hits.append(
            SearchHit(
                node=info,
                rank=float(score),
                matched=matched(fields, terms),
                snippet=snippet(fields, terms),
            )
        )
    return Page(hits, ends=ends, more=more)


def past(hit: tuple[Node, float], after: tuple[float, UUID, int]) -> bool:
    """Whether ``hit`` comes after the key ``after`` (rank descending, project, number)."""
    node, score = hit
    return score < after[0] or (
        score == after[0] and (node.project_id, node.number) > (after[1], after[2])
    )


IMPORTED_RANK = 1000.0
"""The rank of a node found by the id it was imported with: above every word match."""


async def _imported(
    e: Context,
    tx: Tx,
    query: str,
    projects: Sequence[UUID],
    include_archived: bool,
) -> list[tuple[Node, float]]:
    """A query that is a beads id (``bd-a1b2``) finds its node first (``skift._origins``),
    at :data:`IMPORTED_RANK`; its word matches leave it out."""
    if not looks_external(query):
        return []
    hidden = await e.hidden(tx)
    found = [
        o
        for o in await tx.origins_by_external_id(query.strip())
        if (not projects or o.project_id in projects) and o.project_id not in hidden
    ]
    if not found:
        return []
    nodes = await tx.nodes_by_id([o.node_id for o in found])
    scope = await tx.projects_by_id({n.project_id for n in nodes.values()})
    first = [
        (n, IMPORTED_RANK)
        for n in nodes.values()
        if include_archived or scope[n.project_id].archived_at is None
    ]
    return sorted(first, key=lambda h: (h[0].project_id, h[0].number))
