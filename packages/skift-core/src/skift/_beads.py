"""The beads JSONL format: reading what ``bd export`` writes, the mapping to skift, writing it back.

Pure functions, no store: :func:`parse` reads lines into :class:`BeadsIssue`
(every error names its line), :func:`mapped` is the mapping of SURFACE.md's
"Import and export" (a beads issue to the fields of a skift node), and
:func:`issue_out` writes a node back as a beads issue. The mapping is a pure
function of the beads object, so an import keeps the object it last read
(``NodeOrigin.extra``) and compares mappings: what a newer export changed is
what changes (a three-way merge), and an export writes the kept object back
wherever skift's node still says what it said (a lossless round trip of
fields and dependency types skift has no place for).

Statuses: ``closed`` is done with ``close_reason`` as the result,
``tombstone`` is dropped, ``open`` and ``in_progress`` are open, ``deferred``
is a hold; every other status (``blocked``, ``pinned``, ``hooked``, a custom
one) is open and held with a reason naming it, so it stays visible and,
as in beads' own ``bd ready``, is not ready.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, cast

import attrs

from ._errors import Invalid
from ._models import Priority, Status

SOURCE = "beads"
"""The origin name of nodes imported from beads (``NodeOrigin.source``)."""

READY_STATUSES = ("open", "in_progress")
"""The beads statuses that become plain open nodes."""

DONE, DROPPED, DEFERRED = "closed", "tombstone", "deferred"

# the parts of a node's body, in order, as an import writes them
SECTIONS = (
    ("design", "Design"),
    ("acceptance_criteria", "Acceptance criteria"),
    ("notes", "Notes"),
)

_STRING_FIELDS = (
    "id",
    "title",
    "description",
    "design",
    "acceptance_criteria",
    "notes",
    "status",
    "issue_type",
    "assignee",
    "close_reason",
)
_TIME_FIELDS = ("created_at", "updated_at", "closed_at")


def _bad(line: int, what: str) -> Invalid:
    return Invalid(
        f"line {line}: {what}",
        next="Fix that line (each line is one issue as 'bd export' writes it) and import again.",
        line=line,
        field="data",
    )


def parse_time(value: Any, line: int, field: str) -> datetime | None:
    """A beads timestamp (RFC 3339), as an aware datetime; None for null or empty."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise _bad(line, f"{field} is {type(value).__name__}, not an RFC 3339 time")
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        raise _bad(line, f"{field} {value!r} is not an RFC 3339 time") from None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def format_time(at: datetime) -> str:
    """A time as beads writes it (RFC 3339, UTC, ``Z``)."""
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


@attrs.frozen(kw_only=True)
class BeadsDep:
    """One dependency of an issue: ``issue_id`` depends on ``depends_on_id`` by ``type``."""

    depends_on: str
    type: str
    raw: Mapping[str, Any]


@attrs.frozen(kw_only=True)
class BeadsComment:
    author: str
    text: str
    created_at: datetime


_IMPORTED = re.compile(
    r"\A\*Imported from beads: written by (?P<author>[^\n]+?)\.\*\n\n(?P<text>.*)\Z", re.S
)


def imported_body(author: str, text: str) -> str:
    """A beads comment's text as a skift comment's body: the author is kept as text on the
    first line (an importer's words, never a principal), so agent text never reads as a
    person's."""
    name = " ".join(author.split())[:100]
    return f"*Imported from beads: written by {name}.*\n\n{text}" if name else text


def split_imported(body: str) -> tuple[str, str] | None:
    """``(author, text)`` of a body :func:`imported_body` wrote; None for any other body."""
    m = _IMPORTED.match(body)
    return (m.group("author"), m.group("text")) if m else None


@attrs.frozen(kw_only=True)
class BeadsIssue:
    """One line of an export: the object as read, and the parts the mapping needs."""

    line: int
    id: str
    raw: Mapping[str, Any]
    deps: tuple[BeadsDep, ...]
    comments: tuple[BeadsComment, ...]
    created_at: datetime | None
    updated_at: datetime | None

    @property
    def blockers(self) -> list[str]:
        """The issues this one waits on (``blocks`` dependencies), in file order."""
        return [d.depends_on for d in self.deps if d.type == "blocks"]

    @property
    def parents(self) -> list[str]:
        """The issues this one is a child of (``parent-child`` dependencies)."""
        return [d.depends_on for d in self.deps if d.type == "parent-child"]


@attrs.frozen(kw_only=True)
class Mapped:
    """A beads issue as the fields of a skift node (parent and edges aside)."""

    title: str
    body: str
    kind: str
    priority: Priority
    status: Status
    hold: str | None  # the reason of the hold, when held
    result: str | None
    labels: tuple[str, ...]
    assignee: str | None


def objects(value: Any) -> list[dict[str, Any]]:
    """The JSON objects of a JSON list (anything else in it, and a non-list, left out)."""
    if not isinstance(value, list):
        return []
    return [cast(dict[str, Any], v) for v in cast(list[Any], value) if isinstance(v, dict)]


def strings(value: Any) -> list[str]:
    """The strings of a JSON list."""
    if not isinstance(value, list):
        return []
    return [v for v in cast(list[Any], value) if isinstance(v, str)]


def _text(raw: Mapping[str, Any], field: str) -> str:
    value = raw.get(field)
    return value if isinstance(value, str) else ""


def compose_body(raw: Mapping[str, Any]) -> str:
    """The node body of an issue: its description, then design, acceptance criteria and notes."""
    parts = [_text(raw, "description").rstrip()]
    for field, heading in SECTIONS:
        text = _text(raw, field).strip()
        if text:
            parts.append(f"## {heading}\n\n{text}")
    return "\n\n".join(p for p in parts if p)


def hold_reason(status: str) -> str | None:
    """Why an issue of this beads status is held in skift (None: not held)."""
    if status in READY_STATUSES or status in (DONE, DROPPED):
        return None
    if status == DEFERRED:
        return "deferred in beads"
    return f"beads status {status!r}"


def mapped(raw: Mapping[str, Any]) -> Mapped:
    """The mapping of SURFACE.md, for one issue as read (see the module docstring)."""
    status = _text(raw, "status") or "open"
    labels = strings(raw.get("labels"))
    priority = raw.get("priority")
    rank = priority if isinstance(priority, int) and 0 <= priority <= 4 else 2
    return Mapped(
        title=_text(raw, "title").strip(),
        body=compose_body(raw),
        kind=_text(raw, "issue_type").strip() or "task",
        priority=Priority(f"p{rank}"),
        status=Status.DONE
        if status == DONE
        else Status.DROPPED
        if status == DROPPED
        else Status.OPEN,
        hold=hold_reason(status),
        result=(_text(raw, "close_reason") or None) if status == DONE else None,
        labels=tuple(dict.fromkeys(label.strip() for label in labels if label.strip())),
        assignee=_text(raw, "assignee").strip() or None,
    )


def _issue(line: int, obj: dict[str, Any]) -> BeadsIssue:
    for field in _STRING_FIELDS:
        value = obj.get(field)
        if value is not None and not isinstance(value, str):
            raise _bad(line, f"{field} is {type(value).__name__}, not a string")
    ident = (obj.get("id") or "").strip()
    if not ident:
        raise _bad(line, "the issue has no id")
    if not (obj.get("title") or "").strip():
        raise _bad(line, f"{ident} has no title")
    priority = obj.get("priority", 2)
    if priority is not None and (
        isinstance(priority, bool) or not isinstance(priority, int) or not 0 <= priority <= 4
    ):
        raise _bad(line, f"{ident}: priority {priority!r} is not an integer from 0 to 4")
    labels = obj.get("labels")
    if labels is not None and (
        not isinstance(labels, list) or len(strings(labels)) != len(cast(list[Any], labels))
    ):
        raise _bad(line, f"{ident}: labels is not a list of strings")
    times = {f: parse_time(obj.get(f), line, f) for f in _TIME_FIELDS}
    deps: list[BeadsDep] = []
    raw_deps: Any = obj.get("dependencies") or []
    if not isinstance(raw_deps, list):
        raise _bad(line, f"{ident}: dependencies is not a list")
    if len(objects(raw_deps)) != len(cast(list[Any], raw_deps)):
        raise _bad(line, f"{ident}: a dependency is not an object")
    for d in objects(raw_deps):
        target, kind = d.get("depends_on_id"), d.get("type") or "blocks"
        if not isinstance(target, str) or not target.strip() or not isinstance(kind, str):
            raise _bad(line, f"{ident}: a dependency has no depends_on_id or type")
        source = d.get("issue_id")
        if source not in (None, "", ident):
            raise _bad(line, f"{ident}: a dependency names issue_id {source!r}, not {ident!r}")
        deps.append(BeadsDep(depends_on=target.strip(), type=kind, raw=d))
    comments: list[BeadsComment] = []
    raw_comments: Any = obj.get("comments") or []
    if not isinstance(raw_comments, list):
        raise _bad(line, f"{ident}: comments is not a list")
    if len(objects(raw_comments)) != len(cast(list[Any], raw_comments)):
        raise _bad(line, f"{ident}: a comment is not an object")
    for c in objects(raw_comments):
        text, author = c.get("text"), c.get("author") or ""
        if not isinstance(text, str) or not isinstance(author, str):
            raise _bad(line, f"{ident}: a comment's text and author must be strings")
        at = parse_time(c.get("created_at"), line, "comment created_at")
        comments.append(
            BeadsComment(author=author.strip(), text=text, created_at=at or datetime.now(UTC))
        )
    return BeadsIssue(
        line=line,
        id=ident,
        raw=obj,
        deps=tuple(deps),
        comments=tuple(comments),
        created_at=times["created_at"],
        updated_at=times["updated_at"],
    )


def parse(lines: Iterable[str]) -> list[BeadsIssue]:
    """Every issue of an export, in file order; :class:`~skift.Invalid` naming the first bad line.

    Blank lines are skipped. An id seen twice is an error (naming both lines).
    """
    out: list[BeadsIssue] = []
    seen: dict[str, int] = {}
    for n, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _bad(n, f"not JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise _bad(n, "not a JSON object")
        issue = _issue(n, obj)  # pyright: ignore[reportUnknownArgumentType]
        if issue.id in seen:
            raise _bad(n, f"{issue.id} appears twice (first on line {seen[issue.id]})")
        seen[issue.id] = n
        out.append(issue)
    return out


# ------------------------------------------------------------------- cycles


def find_cycles(arcs: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """The strongly connected components with a cycle (each as its members), by Tarjan.

    ``arcs`` maps a vertex to the vertices it waits on. Iterative, so a
    100,000-issue export does not meet Python's recursion limit.
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in arcs:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            succ = arcs.get(v, ())
            if i < len(succ):
                work.append((v, i + 1))
                w = succ[i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp: list[str] = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in arcs.get(v, ()):
                    out.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out


def one_cycle(arcs: Mapping[str, Sequence[str]], members: Sequence[str]) -> list[str]:
    """One cycle inside a strongly connected component, as its vertices in order."""
    inside = set(members)
    start = members[0]
    path = [start]
    where = {start: 0}
    v = start
    while True:
        nxt = next(w for w in arcs.get(v, ()) if w in inside)
        if nxt in where:
            return path[where[nxt] :]
        where[nxt] = len(path)
        path.append(nxt)
        v = nxt


def break_cycles(
    arcs: Mapping[str, Sequence[str]], breakable: set[tuple[str, str]]
) -> list[tuple[str, str]] | None:
    """Arcs to drop so no cycle is left: the fewest, found exactly for small knots.

    Only arcs in ``breakable`` may go. For each strongly connected component,
    every subset of its breakable arcs is tried by size (up to 4 arcs among at
    most 24); a larger knot is cut greedily, dropping the arc on the most
    cycles found first. None when a cycle has no breakable arc.
    """
    graph = {v: list(ws) for v, ws in arcs.items()}
    dropped: list[tuple[str, str]] = []
    for comp in find_cycles(graph):
        inside = set(comp)
        candidates = sorted(
            (v, w) for v in comp for w in graph.get(v, ()) if w in inside and (v, w) in breakable
        )
        sub = {v: [w for w in graph.get(v, ()) if w in inside] for v in comp}
        chosen = _exact_cut(sub, candidates) if len(candidates) <= 24 else None
        if chosen is None:
            chosen = _greedy_cut(sub, set(candidates))
        if chosen is None:
            return None
        for v, w in chosen:
            graph[v].remove(w)
        dropped.extend(chosen)
    return dropped


def _without(
    sub: Mapping[str, Sequence[str]], cut: Iterable[tuple[str, str]]
) -> dict[str, list[str]]:
    gone = set(cut)
    return {v: [w for w in ws if (v, w) not in gone] for v, ws in sub.items()}


def _exact_cut(
    sub: Mapping[str, Sequence[str]], candidates: Sequence[tuple[str, str]]
) -> list[tuple[str, str]] | None:
    from itertools import combinations

    for size in range(1, min(4, len(candidates)) + 1):
        for cut in combinations(candidates, size):
            if not find_cycles(_without(sub, cut)):
                return list(cut)
    return None


def _greedy_cut(
    sub: Mapping[str, Sequence[str]], candidates: set[tuple[str, str]]
) -> list[tuple[str, str]] | None:
    graph = {v: list(ws) for v, ws in sub.items()}
    cut: list[tuple[str, str]] = []
    while True:
        comps = find_cycles(graph)
        if not comps:
            return cut
        counts: dict[tuple[str, str], int] = {}
        for comp in comps:
            ring = one_cycle(graph, comp)
            for i, v in enumerate(ring):
                arc = (v, ring[(i + 1) % len(ring)])
                if arc in candidates:
                    counts[arc] = counts.get(arc, 0) + 1
        if not counts:
            return None
        arc = max(sorted(counts), key=lambda a: counts[a])
        graph[arc[0]].remove(arc[1])
        cut.append(arc)


# ---------------------------------------------------------------------- export


@attrs.frozen(kw_only=True)
class NodeOut:
    """What an export writes of a node, gathered by the caller (``skift._importer``)."""

    id: str
    title: str
    body: str
    kind: str
    priority: Priority
    status: Status
    hold: str | None
    result: str | None
    labels: tuple[str, ...]
    assignee: str | None
    created_at: datetime
    updated_at: datetime
    parent: str | None
    blockers: tuple[str, ...]
    comments: tuple[BeadsComment, ...]


def _status_out(node: NodeOut) -> str:
    if node.status is Status.DONE:
        return DONE
    if node.status is Status.DROPPED:
        return DROPPED
    return DEFERRED if node.hold is not None else "open"


def issue_out(node: NodeOut, raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """A node as one line of ``bd export``: the issue last imported where the node still agrees.

    Fields and dependency types skift has no place for come back from ``raw``
    (the issue as last imported); a field skift changed since is written from
    the node.
    """
    was = mapped(raw) if raw is not None else None
    out: dict[str, Any] = dict(raw) if raw is not None else {}
    out["id"] = node.id
    out["title"] = node.title if was is None or node.title != was.title else out["title"]
    if was is None or node.body != was.body:
        out["description"] = node.body
        for field, _ in SECTIONS:
            out.pop(field, None)
    same_state = was is not None and (node.status, node.hold) == (was.status, was.hold)
    out["status"] = (out.get("status") or "open") if same_state else _status_out(node)
    out["priority"] = node.priority.rank
    out["issue_type"] = node.kind
    if node.assignee:
        out["assignee"] = node.assignee
    else:
        out.pop("assignee", None)
    out["created_at"] = out.get("created_at") or format_time(node.created_at)
    out["updated_at"] = format_time(node.updated_at)
    if node.status is Status.DONE:
        kept = same_state and raw is not None and raw.get("closed_at")
        out["closed_at"] = kept or format_time(node.updated_at)
        if node.result:
            out["close_reason"] = node.result
        else:
            out.pop("close_reason", None)
    else:
        out.pop("closed_at", None)
        if not same_state:
            out.pop("close_reason", None)
    if node.labels:
        out["labels"] = list(node.labels)
    else:
        out.pop("labels", None)
    deps = _deps_out(node, raw)
    if deps:
        out["dependencies"] = deps
    else:
        out.pop("dependencies", None)
    if node.comments:
        out["comments"] = [
            {"author": c.author, "text": c.text, "created_at": format_time(c.created_at)}
            for c in node.comments
        ]
    else:
        out.pop("comments", None)
    return out


def _deps_out(node: NodeOut, raw: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    before = objects(raw.get("dependencies")) if raw is not None else []
    by_key = {(str(d.get("type") or "blocks"), str(d.get("depends_on_id"))): d for d in before}

    def dep(kind: str, target: str) -> dict[str, Any]:
        old = by_key.get((kind, target), {})
        return {**old, "issue_id": node.id, "depends_on_id": target, "type": kind}

    out: list[dict[str, Any]] = []
    old_parents = [str(d.get("depends_on_id")) for d in before if d.get("type") == "parent-child"]
    if node.parent is not None:
        out.append(dep("parent-child", node.parent))
        if old_parents and old_parents[0] == node.parent:
            out.extend(dep("parent-child", p) for p in old_parents[1:] if p != node.parent)
    out.extend(dep("blocks", b) for b in node.blockers)
    for d in before:
        kind = str(d.get("type") or "blocks")
        if kind not in ("blocks", "parent-child"):
            out.append({**d, "issue_id": node.id})
    return out
