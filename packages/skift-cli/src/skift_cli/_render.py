"""Human output: rich tables, trees and panels; colour follows ``NO_COLOR``.

Nothing here decides anything about the graph: it draws the views the API
returned (state comes from the node's derived flags, reasons from Explain).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Generator, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from rich.console import Console, Group
from rich.markup import escape
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

import skift

from . import _facts

_out: Console | None = None
_err: Console | None = None


def _soft_wrap(stream: Any) -> bool:
    """Leave long lines to the reader when the width is unknown (piped, no COLUMNS); at a
    terminal (or with COLUMNS) wrap them at word boundaries instead of mid-word."""
    import os

    try:
        tty = bool(stream.isatty())
    except (AttributeError, ValueError):
        tty = False
    return not (tty or os.environ.get("COLUMNS", "").strip())


def out() -> Console:
    global _out
    if _out is None:
        _out = Console(highlight=False, soft_wrap=_soft_wrap(sys.stdout))
    return _out


@contextlib.contextmanager
def quiet() -> Generator[None]:
    """While it lasts, what :func:`out` prints goes nowhere (``skift demo --json`` prints one
    document); then the console is back."""
    global _out
    import io

    before = _out
    _out = Console(file=io.StringIO(), highlight=False)
    try:
        yield
    finally:
        _out = before


def err() -> Console:
    global _err
    if _err is None:
        _err = Console(stderr=True, highlight=False, soft_wrap=_soft_wrap(sys.stderr))
    return _err


# ------------------------------------------------------------------ small parts


reltime = _facts.reltime
_enum = _facts.enum_word
_by = _facts.by
_part = _facts.part_line


def _text(pieces: Sequence[_facts.Piece]) -> Text:
    """Rich's Text of pieces (a markup piece, which rich is given as a str, is read as markup)."""
    t = Text()
    for text, style, markup in pieces:
        if markup:
            t.append_text(Text.from_markup(text, style=style))
        else:
            t.append(text, style=style)
    return t


def state(node: skift.NodeInfo) -> Text:
    """One word for where a node stands, from its status and derived flags."""
    return _text(_facts.state(node))


def _title(node: skift.NodeInfo) -> Text:
    return _text(_facts.title(node))


# ------------------------------------------------------------------- listings


NARROW = 80  # below this many columns, listings are records, not tables
MIN_TITLE = 20  # a node row narrower than this leaves its title too little: records instead


def is_narrow() -> bool:
    """A terminal (or COLUMNS) narrower than :data:`NARROW`. Piped output (width unknown)
    stays a table: one line a row, never cropped."""
    c = out()
    return not c.soft_wrap and c.width < NARROW


def records(items: Sequence[tuple[Text, Sequence[Text | str]]]) -> Group:
    """Listings for a narrow terminal: each item a heading line, then its details indented
    on lines of their own, wrapped at word boundaries (a table would crop or drop columns)."""
    parts: list[Any] = []
    for head, details in items:
        head.overflow = "fold"
        parts.append(head)
        for d in details:
            text = d if isinstance(d, Text) else Text(d)
            if text.plain:
                parts.append(Padding(text, (0, 0, 0, 2), expand=False))
    return Group(*parts)


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 comment``, ``2 comments`` (``many`` when adding an s is wrong)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def _line(*cells: Text | str, sep: str = "  ") -> Text:
    t = Text()
    for i, c in enumerate(cells):
        if i:
            t.append(sep)
        t.append_text(c if isinstance(c, Text) else Text(c))
    return t


def _node_records(
    nodes: Sequence[skift.NodeInfo], *, turn: bool, aliases: Mapping[str, str] | None
) -> Group:
    """Nodes as records: for a narrow terminal where a one-line row leaves the title no room."""
    now = datetime.now(UTC)
    items: list[tuple[Text, Sequence[Text | str]]] = []
    for i, n in enumerate(nodes, 1):
        head = _line(
            *([Text(f"{i}.", style="dim")] if turn else []),
            Text(n.ref, style="bold cyan"),
            state(n),
            _prio(n.priority),
        )
        alias = (aliases or {}).get(n.ref, "")
        extra = Text(f"{n.kind} · {reltime(n.created_at, now)}", style="dim")
        if alias:
            extra = Text(f"alias {alias} · ", style="dim").append_text(extra)
        items.append((head, [_title(n), extra]))
    return records(items)


def node_table(
    nodes: Sequence[skift.NodeInfo], *, turn: bool = False, aliases: Mapping[str, str] | None = None
) -> Table | Group:
    # Narrow terminals keep ref, state and a title that ends in … rather than wrapping a
    # word per line: the turn, kind and age columns go first.
    narrow = out().width < 80
    table = Table(box=None, pad_edge=False, header_style="bold")
    if turn and not narrow:
        table.add_column("turn", justify="right", style="dim")
    if aliases:
        table.add_column("alias", style="dim", no_wrap=True)
    table.add_column("ref", style="bold cyan", no_wrap=True)
    table.add_column("pri", no_wrap=True)
    if not narrow:
        table.add_column("kind", style="dim", no_wrap=True)
    table.add_column("state", no_wrap=True)
    table.add_column("title")
    if not narrow:
        table.add_column("age", style="dim", justify="right", no_wrap=True)
    now = datetime.now(UTC)
    rows: list[list[Any]] = []
    for i, n in enumerate(nodes, 1):
        row: list[Any] = [str(i)] if turn and not narrow else []
        if aliases:
            row.append(aliases.get(n.ref, ""))
        row += [n.ref, _prio(n.priority)]
        if not narrow:
            row.append(n.kind)
        row += [state(n), _title(n)]
        if not narrow:
            row.append(reltime(n.created_at, now))
        rows.append(row)
    if narrow and rows:
        # rich would rather drop whole columns than squeeze unbreakable ones: cut the
        # titles to what the other columns leave (two spaces between columns)
        at = len(rows[0]) - 1
        others = sum(
            max(len(str(r[k])) for r in [[c.header for c in table.columns], *rows])
            for k in range(len(rows[0]))
            if k != at
        )
        room = out().width - others - 2 * (len(rows[0]) - 1)
        if room < MIN_TITLE and is_narrow():  # long refs: a record each, the title whole
            return _node_records(nodes, turn=turn, aliases=aliases)
        room = max(8, room)
        for r in rows:
            title: Text = r[at]
            title.truncate(room, overflow="ellipsis")
    for r in rows:
        table.add_row(*r)
    return table


def short_ref(ref: str, project: str) -> str:
    """``#N`` for a node of ``project``, else the full ref."""
    return "#" + ref.split("#", 1)[1] if ref.startswith(f"{project}#") else ref


def _prio(priority: object) -> Text:
    return _text([_facts.prio(priority)])


def page_footer(page: skift.ReadyPage, *, what: str) -> None:
    line = _facts.page_footer(page, what=what)
    if line is not None:
        out().print(f"[dim]{line}[/dim]")


def node_tree(nodes: Sequence[skift.NodeInfo], blockers: Mapping[str, Sequence[str]]) -> Group:
    """Each project's containment: children under parents, with state and blockers."""
    by_ref = {n.ref: n for n in nodes}
    kids: dict[str | None, list[skift.NodeInfo]] = {}
    projects: list[str] = []
    for n in nodes:
        if n.project not in projects:
            projects.append(n.project)
        parent = n.parent if n.parent in by_ref else None
        kids.setdefault(parent, []).append(n)

    def label(n: skift.NodeInfo) -> Text:
        t = Text()
        t.append(f"#{n.number} ", style="bold cyan")
        t.append_text(state(n))
        t.append(" ")
        t.append(n.title, style="dim" if _enum(n.status) != "open" else "")
        if n.parent and n.parent not in by_ref:
            t.append(f"  (under {n.parent})", style="dim")
        bl = blockers.get(n.ref)
        if bl:
            t.append("  ← " + ", ".join(bl), style="red")
        return t

    def grow(tree: Tree, n: skift.NodeInfo, seen: set[str]) -> None:
        branch = tree.add(label(n))
        seen.add(n.ref)
        for k in kids.get(n.ref, []):
            if k.ref not in seen:
                grow(branch, k, seen)

    trees: list[Tree] = []
    for slug in projects:
        root = Tree(Text(slug, style="bold"))
        seen: set[str] = set()
        for n in kids.get(None, []):
            if n.project == slug:
                grow(root, n, seen)
        trees.append(root)
    return Group(*trees)


def project_table(projects: Sequence[skift.ProjectInfo]) -> Table | Group:
    if is_narrow():
        now = datetime.now(UTC)
        return records(
            [
                (
                    _line(Text(p.slug, style="bold cyan"), _project_state(p)),
                    [
                        p.title,
                        Text(
                            f"{_enum(p.priority)} · {plural(p.node_count, 'node')} · active "
                            f"{reltime(p.active_at, now)}",
                            style="dim",
                        ),
                    ],
                )
                for p in projects
            ]
        )
    table = Table(box=None, pad_edge=False, header_style="bold")
    for name in ("slug", "title", "pri", "nodes", "state", "active"):
        table.add_column(name, no_wrap=name != "title")
    now = datetime.now(UTC)
    for p in projects:
        table.add_row(
            Text(p.slug, style="bold cyan"),
            p.title,
            _prio(p.priority),
            str(p.node_count),
            _project_state(p),
            reltime(p.active_at, now),
        )
    return table


def _project_state(p: skift.ProjectInfo) -> Text:
    if p.archived:
        return Text("archived", style="dim")
    if p.held:
        return Text("held", style="magenta")
    return Text("live", style="green")


def project_panel(p: skift.ProjectInfo) -> Panel:
    rows = Table.grid(padding=(0, 2))
    rows.add_column(style="bold")
    rows.add_column()
    rows.add_row("slug", p.slug)
    rows.add_row("id", p.id)
    rows.add_row("priority", _enum(p.priority))
    rows.add_row("nodes", str(p.node_count))
    if p.vcs_url:
        rows.add_row("vcs", p.vcs_url)
    rows.add_row("created", reltime(p.created_at))
    rows.add_row("active", reltime(p.active_at))
    if p.held:
        rows.add_row("held", Text(p.hold_reason or "", style="magenta"))
    if p.archived:
        rows.add_row("archived", reltime(p.archived_at))
    if p.readers is not None:
        rows.add_row("readers", Text(", ".join(p.readers), style="yellow"))
    return Panel(rows, title=escape(p.title), title_align="left")


# ---------------------------------------------------------------- single node


def node_panel(
    n: skift.NodeInfo,
    *,
    blockers: Sequence[str] = (),
    artifacts: Sequence[skift.ArtifactInfo] = (),
) -> Panel:
    title, grid, lines = _facts.node_facts(n, blockers=blockers, artifacts=artifacts)
    rows = Table.grid(padding=(0, 2))
    rows.add_column(style="bold")
    rows.add_column()
    for label, pieces in grid:
        (text, style, markup), *more = pieces
        rows.add_row(label, text if markup and not more and not style else _text(pieces))
    parts: list[Any] = [rows, *(_text(line) for line in lines)]
    return Panel(Group(*parts), title=escape(title), title_align="left")


def describe_reason(kind: str, d: Mapping[str, Any]) -> Text:
    t = Text()
    if kind == "blocked_by":
        t.append("blocked by ", style="red")
        t.append(f"{d.get('ref')} ", style="bold cyan")
        t.append(f"{d.get('title', '')} ({d.get('status')})")
        if d.get("gate"):
            t.append(" [a gate: a person must complete it]", style="yellow")
        held = d.get("held")
        if isinstance(held, Mapping):
            h: Mapping[str, Any] = held  # pyright: ignore[reportUnknownVariableType]
            t.append(
                f"; stalled by a hold on {h.get('on')} by {h.get('by')}: {h.get('reason')}",
                style="magenta",
            )
    elif kind == "waiting_on_person":
        t.append("waiting on a person: ", style="yellow")
        t.append(f"{d.get('ref')} {d.get('title', '')}")
        if d.get("assignee"):
            t.append(f" (assigned to {d.get('assignee')})")
    elif kind == "open_children":
        refs: Sequence[str] = d.get("refs") or []
        t.append(f"{d.get('count')} open children", style="cyan")
        if refs:
            t.append(": " + ", ".join(refs[:10]) + (" …" if len(refs) > 10 else ""))
    elif kind == "leased":
        until = d.get("until")
        when = reltime(datetime.fromisoformat(until)) if isinstance(until, str) else ""
        t.append("leased ", style="yellow")
        t.append(f"by {d.get('holder')}, expires {when}")
        if d.get("harness"):
            t.append(f" ({d.get('harness')})", style="dim")
    elif kind == "held":
        t.append("held ", style="magenta")
        t.append(f"on {d.get('on')} by {d.get('by')}: {d.get('reason')}")
    elif kind == "archived":
        t.append("archived: ", style="dim")
        t.append(f"project {d.get('project')} is read-only")
    elif kind == "no_path":
        t.append("no path to readiness: ", style="bold red")
        t.append(str(d.get("why", "")))
    elif kind == "closed":
        t.append(f"it is {d.get('status')}", style="dim")
    else:
        t.append(kind)
    return t


def explanation(ex: skift.Explanation) -> None:
    c = out()
    head = Text()
    head.append(ex.ref, style="bold cyan")
    head.append(f" {ex.title}: ")
    head.append(
        "ready" if ex.ready else "not ready", style="bold green" if ex.ready else "bold red"
    )
    c.print(head)
    for r in ex.reasons:
        line = Text("• ").append_text(describe_reason(r.kind, r.detail))
        if c.soft_wrap:  # the width is unknown (piped): one line each, never cropped
            c.print(Text("  ").append_text(line))
        else:  # wrapped lines stay under their bullet instead of running back to column 0
            c.print(Padding(line, (0, 0, 0, 2)))


def claim(cl: skift.Claim) -> None:
    c = out()
    n = cl.node
    head = Text("claimed ", style="green")
    head.append(n.ref, style="bold cyan")
    head.append(f" {n.title}")
    c.print(head)
    c.print(
        f"lease [bold]{cl.lease.id}[/bold] [dim](expires {reltime(cl.lease.expires_at)}; "
        f"context {n.context_id})[/dim]"
    )
    if n.body:
        by = f" — by {escape(_by(n.body_author, n.body_author_kind))}" if n.body_author else ""
        title = f"body{by}"
        c.print(Panel(Text(n.body), title=title, title_align="left"))
    for i in cl.inputs:
        who = f" — completed by {_by(i.author, i.author_kind)}" if i.author else ""
        body = Text(i.result or "(no result)")
        for art in i.artifacts:
            body.append(f"\nartifact: {art.name} ({len(art.parts)} part(s))", style="dim")
        c.print(
            Panel(
                body,
                title=f"input {escape(i.ref)} {escape(i.title)}{escape(who)}",
                title_align="left",
                border_style="dim",
            )
        )
    if cl.comments.unresolved:
        c.print(
            f"[yellow]{cl.comments.unresolved} unresolved comment(s)[/yellow], newest "
            f"{reltime(cl.comments.newest_at)}"
        )


def patch_result(res: skift.PatchResult, *, verb: str = "applied") -> None:
    c = out()
    c.print(f"[green]{verb}[/green] [dim](request {res.request_id})[/dim]")
    aliases = {ref: alias for alias, ref in res.created.items()}
    if res.nodes:
        c.print(node_table(res.nodes, aliases=aliases))
    if res.dropped:
        c.print("[dim]dropped:[/dim] " + ", ".join(res.dropped))
    if res.parked:
        c.print(f"[magenta]parked {res.parked} node(s)[/magenta]")


def focus(res: skift.FocusResult) -> None:
    c = out()
    c.print(f"[bold]focus[/bold] in {res.scope}")
    if res.held:
        c.print("[magenta]held:[/magenta] " + ", ".join(res.held))
    if res.released:
        c.print("[green]released:[/green] " + ", ".join(res.released))
    c.print(f"[dim]{res.parked} open node(s) parked[/dim]")


def events(evs: Iterable[skift.EventInfo]) -> None:
    c = out()
    for e in evs:
        # short lines: the cursor to resume from is printed once, after the read
        line = Text()
        line.append(e.occurred_at.astimezone().strftime("%m-%d %H:%M:%S"), style="dim")
        line.append(f" {e.op}", style="bold")
        line.append(f" {e.node or e.project or ''}", style="cyan")
        line.append(f" by {e.principal}")
        if e.reason:
            line.append(f": {e.reason}", style="dim")
        c.print(line)


def principals(ps: Sequence[skift.PrincipalInfo]) -> Table | Group:
    if is_narrow():
        return records(
            [
                (
                    _line(Text(p.name, style="bold"), Text(str(p.kind), style="dim")),
                    [
                        ", ".join(
                            f"{i.scheme}:{i.value}" + (" (revoked)" if i.revoked else "")
                            for i in p.identities
                        ),
                        Text(f"created {reltime(p.created_at)}", style="dim"),
                    ],
                )
                for p in ps
            ]
        )
    table = Table(box=None, pad_edge=False, header_style="bold")
    for name in ("name", "kind", "role", "identities", "created"):
        table.add_column(name)
    for p in ps:
        ids = ", ".join(
            f"{i.scheme}:{i.value}" + (" (revoked)" if i.revoked else "") for i in p.identities
        )
        role = "admin" if p.admin else ""
        table.add_row(Text(p.name, style="bold"), p.kind, role, ids, reltime(p.created_at))
    return table


def comments(cs: Sequence[skift.CommentInfo]) -> None:
    """A node's comments as threads: replies under what they answer."""
    c = out()
    if not cs:
        c.print("[dim]no comments[/dim]")
        return
    ids = {x.id for x in cs}
    kids: dict[str | None, list[skift.CommentInfo]] = {}
    for x in cs:
        kids.setdefault(x.in_reply_to if x.in_reply_to in ids else None, []).append(x)
    now = datetime.now(UTC)

    def label(x: skift.CommentInfo) -> Group:
        head = Text()
        head.append(x.author, style="bold")
        head.append(f" ({x.author_kind}) ", style="dim")
        head.append(reltime(x.created_at, now), style="dim")
        if x.edited_at:
            head.append(" (edited)", style="dim")
        if x.resolved_at:
            head.append(f"  resolved by {x.resolved_by}", style="green")
        head.append(f"  {x.id}", style="dim")
        return Group(head, Text(x.body, style="dim" if x.resolved_at else ""))

    root = Tree(Text(f"{cs[0].node} {cs[0].node_title}", style="bold cyan"))

    def grow(tree: Tree, x: skift.CommentInfo) -> None:
        branch = tree.add(label(x))
        for k in kids.get(x.id, []):
            grow(branch, k)

    for x in kids.get(None, []):
        grow(root, x)
    c.print(root)


def search_hits(hits: Sequence[skift.SearchHit]) -> None:
    c = out()
    if not hits:
        c.print("[dim]nothing found[/dim]")
        return
    if is_narrow():
        c.print(
            records(
                [
                    (
                        _line(Text(h.node.ref, style="bold cyan"), state(h.node)),
                        [
                            h.node.title,
                            Text(f"in {', '.join(h.matched)}: {h.snippet}", style="dim"),
                        ],
                    )
                    for h in hits
                ]
            )
        )
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("ref", style="bold cyan", no_wrap=True)
    table.add_column("state", no_wrap=True)
    table.add_column("title")
    table.add_column("in", style="dim", no_wrap=True)
    table.add_column("snippet", style="dim")
    for h in hits:
        table.add_row(h.node.ref, state(h.node), h.node.title, ",".join(h.matched), h.snippet)
    c.print(table)


def leases(got: Sequence[skift.LeaseInfo]) -> None:
    """Live leases: a line each (piped or wide), or a record each at a narrow terminal."""
    items: list[tuple[Text, Sequence[Text | str]]] = []
    for x in got:
        where = f" via {x.harness}" if x.harness else ""
        held = f"held by {x.holder}{where} until {x.expires_at:%Y-%m-%d %H:%M:%S}"
        token = f"lease {x.id}" if x.id else ""
        if is_narrow():
            items.append(
                (Text(x.node, style="bold cyan"), [x.title, Text(held, style="dim"), token])
            )
        else:
            line = f"{x.node}  {x.title}  {held}" + (f"  {token}" if token else "")
            out().print(Text(line), soft_wrap=True)
    if items:
        out().print(records(items))


def usage_report(r: skift.UsageReport) -> None:
    c = out()
    head = Text()
    head.append(r.ref, style="bold cyan")
    head.append(f" {r.title}" + (" (with its subtree)" if r.subtree else ""))
    c.print(head)
    table = Table(box=None, pad_edge=False, header_style="bold")
    for name in ("", "input", "output", "cache read", "cache write", "total", "cost"):
        table.add_column(name, justify="right" if name else "left")
    cur = f" {r.currency}" if r.currency else ""
    for label, t, cost in (
        ("actual", r.actual, r.cost_actual),
        ("estimate", r.estimate, r.cost_estimate),
    ):
        table.add_row(
            label,
            f"{t.input_tokens:,}",
            f"{t.output_tokens:,}",
            f"{t.cache_read_tokens:,}",
            f"{t.cache_write_tokens:,}",
            f"{t.total:,}",
            f"{cost}{cur}" if cost is not None else "-",
        )
    c.print(table)
    if r.budget is not None:
        c.print(f"budget {r.budget}{cur}")
    if r.cap is not None:
        c.print(f"[bold]cap {r.cap}{cur}[/bold] (claims refused past it)")
    if r.unpriced_models:
        c.print(f"[yellow]no rate for: {', '.join(r.unpriced_models)}[/yellow]")
    if r.records:
        recs = Table(box=None, pad_edge=False, header_style="bold")
        for name in ("when", "node", "who", "model", "kind", "in", "out", "basis"):
            recs.add_column(name)
        now = datetime.now(UTC)
        for u in r.records[:20]:
            recs.add_row(
                reltime(u.created_at, now),
                u.node,
                u.principal,
                u.model,
                _enum(u.kind),
                f"{u.input_tokens:,}",
                f"{u.output_tokens:,}",
                u.basis or "",
            )
        c.print(recs)
        if len(r.records) > 20:
            c.print(f"[dim]… {len(r.records) - 20} more (--json shows all)[/dim]")
