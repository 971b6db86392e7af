"""What ``skift ready``'s table and ``skift show``'s panel say, as text and style names.

``_render`` makes rich's Text from these pieces and ``_plain`` writes them as text when
rich would draw nothing more (a pipe): one place decides what a node's row and panel
show. No rich here. A piece is ``(text, style, markup)``: ``markup`` where rich is given
a ``str`` (which it reads as markup) rather than a Text.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (skift show: a few ms)
if TYPE_CHECKING:
    from typing import Any

    import skift

Piece = tuple[str, str, bool]


def reltime(when: datetime | None, now: datetime | None = None) -> str:
    """``3m ago`` or ``in 5m``; empty for no time."""
    if when is None:
        return ""
    now = now or datetime.now(UTC)
    secs = (now - when).total_seconds()
    future = secs < 0
    secs = abs(secs)
    if secs < 45:
        text = f"{int(secs)}s"
    elif secs < 3600:
        text = f"{round(secs / 60)}m"
    elif secs < 86400:
        text = f"{round(secs / 3600)}h"
    else:
        text = f"{round(secs / 86400)}d"
    if secs < 1:
        return "just now"
    return f"in {text}" if future else f"{text} ago"


def enum_word(value: object) -> str:
    return str(getattr(value, "value", value))


def state(node: skift.NodeInfo) -> list[Piece]:
    """One word for where a node stands, from its status and derived flags."""
    status = enum_word(node.status)
    if status == "done":
        return [("done", "green", False)]
    if status == "dropped":
        return [("dropped", "dim strike", False)]
    if node.ready:
        word = ("ready", "bold green", False)
    elif node.claimed:
        word = ("claimed", "yellow", False)
    elif node.held:
        word = ("held", "magenta", False)
    elif node.blocked:
        word = ("blocked", "red", False)
    else:
        word = ("waiting", "cyan", False)  # open children, or an archived project
    if enum_word(node.assignee_kind) == "user":
        return [word, (" (gate)", "bold yellow", False)]
    return [word]


def title(node: skift.NodeInfo) -> list[Piece]:
    out: list[Piece] = [(node.title, "", False)]
    if node.labels:
        out.append(("  " + " ".join(f"[{lbl}]" for lbl in node.labels), "dim", False))
    return out


def prio(priority: object) -> Piece:
    p = enum_word(priority)
    style = {"p0": "bold red", "p1": "red", "p2": "", "p3": "dim", "p4": "dim"}.get(p, "")
    return (p, style, False)


class Column:
    """A table's column: its heading and how rich lays it out."""

    __slots__ = ("name", "no_wrap", "right", "style")

    def __init__(
        self, name: str, *, right: bool = False, style: str = "", no_wrap: bool = False
    ) -> None:
        self.name, self.right, self.style, self.no_wrap = name, right, style, no_wrap

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Column) and all(
            getattr(self, k) == getattr(other, k) for k in self.__slots__
        )

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, k) for k in self.__slots__))

    def __repr__(self) -> str:
        return f"Column({self.name!r}, right={self.right}, style={self.style!r})"


def node_rows(
    nodes: Sequence[skift.NodeInfo], *, turn: bool
) -> tuple[list[Column], list[list[list[Piece]]]]:
    """A wide table's columns and cells (``_render.node_table`` on a terminal of 80 or more)."""
    heads = [Column("turn", right=True, style="dim")] if turn else []
    heads += [
        Column("ref", style="bold cyan", no_wrap=True),
        Column("pri", no_wrap=True),
        Column("kind", style="dim", no_wrap=True),
        Column("state", no_wrap=True),
        Column("title"),
        Column("age", right=True, style="dim", no_wrap=True),
    ]
    now = datetime.now(UTC)
    rows: list[list[list[Piece]]] = []
    for i, n in enumerate(nodes, 1):
        row: list[list[Piece]] = [[(str(i), "", True)]] if turn else []
        row += [
            [(n.ref, "", True)],
            [prio(n.priority)],
            [(n.kind, "", True)],
            state(n),
            title(n),
            [(reltime(n.created_at, now), "", True)],
        ]
        rows.append(row)
    return heads, rows


def page_footer(page: skift.ReadyPage, *, what: str) -> str | None:
    """The line under a page (its text: rich is given it in ``[dim]`` markup); None: none."""
    notes: list[str] = []
    if page.held_count:
        more = "" if page.held_count_exact else "+"
        notes.append(f"{page.held_count}{more} held (not shown)")
    if page.next_page:
        notes.append(f"more: --page {page.next_page}")
    if not page.nodes:
        return f"no {what}" + (f" ({'; '.join(notes)})" if notes else "")
    return "; ".join(notes) if notes else None


def by(name: str, kind: str | None) -> str:
    """A principal as attribution reads: ``ada (user)``."""
    return f"{name} ({kind})" if kind else name


def part_line(p: Any) -> str:
    """One artifact part on a line; a blob names the command that fetches it."""
    kind = getattr(p, "type", "")
    if kind == "blob":
        return (
            f"blob {p.digest} ({p.media_type}, {p.size} bytes): skift blob get {p.digest} -o FILE"
        )
    if kind == "reference":
        commit = f" @ {p.commit}" if getattr(p, "commit", None) else ""
        return f"reference {p.uri}{commit}"
    text = str(getattr(p, "text", ""))
    return "text: " + (text if len(text) <= 60 else text[:57] + "…")


def node_facts(
    n: skift.NodeInfo,
    *,
    blockers: Sequence[str] = (),
    artifacts: Sequence[skift.ArtifactInfo] = (),
) -> tuple[str, list[tuple[str, list[Piece]]], list[list[Piece]]]:
    """A node panel's title, its grid (label, value) and the lines under it (each a Text)."""
    grid: list[tuple[str, list[Piece]]] = [
        ("ref", [(n.ref, "bold cyan", False)]),
        ("state", state(n)),
        ("priority", [prio(n.priority)]),
        ("kind", [(n.kind, "", True)]),
    ]
    if n.parent:
        grid.append(("parent", [(n.parent, "", True)]))
    if n.labels:
        grid.append(("labels", [(", ".join(n.labels), "", True)]))
    if blockers:
        grid.append(("blocked by", [(", ".join(blockers), "red", False)]))
    if n.assignee_kind or n.assignee:
        who = " ".join(
            x
            for x in (enum_word(n.assignee_kind) if n.assignee_kind else "", n.assignee or "")
            if x
        )
        grid.append(("assignee", [(who, "", True)]))
    grid.append(("created", [(reltime(n.created_at), "", True)]))
    grid.append(("context", [(n.context_id, "dim", False)]))
    if n.body and n.body_author:
        grid.append(("body by", [(by(n.body_author, n.body_author_kind), "", False)]))
    if n.result is not None and n.result_author:
        grid.append(("result by", [(by(n.result_author, n.result_author_kind), "", False)]))
    lines: list[list[Piece]] = []
    if n.body:
        lines += [[("", "", False)], [(n.body, "", False)]]
    if n.result:
        lines += [[("", "", False)], [("result", "bold green", False)], [(n.result, "", False)]]
    if artifacts:
        lines += [[("", "", False)], [("artifacts", "bold", False)]]
        for art in artifacts:
            lines.append([(art.name, "bold", False), (f"  by {art.author}", "dim", False)])
            for p in art.parts:
                lines.append([("  " + part_line(p), "", False)])
    return n.title, grid, lines


def node_notes(n: skift.NodeInfo, cs: Sequence[Any]) -> list[str]:
    """The lines after a node's panel, but for its lease (rich is given each in ``[dim]``)."""
    out: list[str] = []
    if cs:
        unresolved = sum(1 for c in cs if c.resolved_at is None)
        out.append(f"{len(cs)} comment(s), {unresolved} unresolved: 'skift comments {n.ref}'")
    if enum_word(n.status) == "open" and not n.ready:
        out.append(f"not ready: 'skift explain {n.ref}' says why")
    return out
