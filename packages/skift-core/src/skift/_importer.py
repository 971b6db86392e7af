"""Importing a beads export into a project, and exporting a project as one: the rules, once.

An import is one transaction (all or nothing) that writes rows directly,
beyond a patch's limits: the mapping of ``skift._beads`` gives each issue's
node fields; issues are matched by beads id (``NodeOrigin``) so a second
import of the same file changes nothing and a newer export changes what its
issues changed since the last import (a three-way merge against the issue as
last read, so work done in skift since then stays unless beads changed the
same field). What it writes: new nodes (numbered in file order), changed
nodes, ``blocks`` edges, parents, holds, comments (written by the importer, the
beads author kept as text on the first line, never made a principal; the
comment's original time),
the origins, one ``create_node``/``update_node`` event per node and one
``import_beads`` event on the project.

Refusals: a person's act (policy action ``import``); a line that is not an
issue, a dependency on an issue in neither the file nor the project
(``skip_dangling`` turns that into a warning), anything over a size limit
(each naming its line); a cycle in the wait relation (``CycleError`` naming
it; ``break_cycles`` drops the fewest ``blocks`` dependencies and lists
them).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import attrs

from . import _beads as beads
from ._context import Actor, check_size, node_fields
from ._errors import CycleError, Invalid, LimitExceeded, NotFound
from ._intent import intent
from ._models import Comment, Edge, EdgeKind, Event, Hold, Node, Project
from ._origins import NodeOrigin
from ._projects import Projects
from ._refs import format_ref, new_id
from ._store import ReadyQuery, Tx

Progress = Callable[[int, int], None]
"""Told ``(done, total)`` as an import or export goes (a progress bar)."""


@attrs.frozen(kw_only=True)
class BeadsImport:
    """What an import did (or, with ``dry_run``, would do): SURFACE.md's ``import beads --json``."""

    project: str
    created: int
    updated: int
    unchanged: int
    nodes: dict[str, str]
    edges: int
    comments: int
    warnings: tuple[str, ...] = ()
    dry_run: bool = False


class DryRun(Exception):
    """Raised inside the transaction of a dry run, so nothing it wrote is kept."""

    def __init__(self, result: BeadsImport) -> None:
        super().__init__("dry run")
        self.result = result


def _line_error(
    issue: beads.BeadsIssue, what: str, next_move: str, move: dict[str, str] | None = None
) -> Invalid:
    return Invalid(
        f"line {issue.line}: {what}", next=next_move, move=move, line=issue.line, field="data"
    )


async def _project(e: Projects, tx: Tx, actor: Actor, ref: str) -> Project:
    """The project to import into, created (with ``ref`` as its slug) when absent."""
    try:
        return await e.resolve_project(tx, ref)
    except NotFound:
        return await e.create_project(tx, actor, ref, slug=ref)


def _kept(raw: Mapping[str, Any]) -> dict[str, Any]:
    """What an origin keeps of an issue: all of it but its comments (they are comments)."""
    return {k: v for k, v in raw.items() if k != "comments"}


def _deps_of(raw: Mapping[str, Any], kind: str) -> list[str]:
    return [
        str(d.get("depends_on_id", "")).strip()
        for d in beads.objects(raw.get("dependencies"))
        if (d.get("type") or "blocks") == kind
    ]


class _Import:
    """One import's state: the project, the issues, what exists, what it will write."""

    def __init__(self, e: Projects, tx: Tx, actor: Actor, project: Project) -> None:
        self.e, self.tx, self.actor, self.project = e, tx, actor, project
        self.warnings: list[str] = []
        self.ids: dict[str, UUID] = {}  # beads id -> node id, existing and new
        self.origins: dict[str, NodeOrigin] = {}

    def check_sizes(self, issue: beads.BeadsIssue, m: beads.Mapped, body_bytes: int) -> None:
        lim = self.e.limits
        try:
            check_size("title", m.title, lim.title_chars, chars=True)
            check_size("body", m.body, body_bytes)
            if m.result:
                check_size("result", m.result, lim.result_bytes)
            if len(m.labels) > lim.labels_per_node:
                raise LimitExceeded(
                    f"{len(m.labels)} labels; the limit is {lim.labels_per_node}",
                    next="Use fewer labels.",
                    limit="labels_per_node",
                    bound=lim.labels_per_node,
                )
            for label in m.labels:
                check_size("label", label, lim.label_chars, chars=True)
        except LimitExceeded as exc:
            raise LimitExceeded(
                f"line {issue.line} ({issue.id}): {exc.message}",
                next="Shorten it in beads and export again.",
                line=issue.line,
                **exc.details,
            ) from None

    def dangling(self, issues: Sequence[beads.BeadsIssue], skip: bool) -> dict[str, set[str]]:
        """Dependencies (blocks, parent-child) on issues neither in the file nor imported before."""
        out: dict[str, set[str]] = {}
        for issue in issues:
            for dep in issue.deps:
                if dep.type not in ("blocks", "parent-child") or dep.depends_on in self.ids:
                    continue
                if not skip:
                    raise _line_error(
                        issue,
                        f"{issue.id} depends on {dep.depends_on} ({dep.type}), which is neither "
                        "in the file nor imported into this project before",
                        "Export the whole beads database, or import with skip_dangling to leave "
                        "those dependencies out.",
                        {"do": "skip_dangling"},
                    )
                self.warnings.append(
                    f"line {issue.line}: skipped {issue.id}'s {dep.type} dependency on "
                    f"{dep.depends_on} (not in the file)"
                )
                out.setdefault(issue.id, set()).add(dep.depends_on)
        return out

    def wait_arcs(
        self, issues: Sequence[beads.BeadsIssue], skipped: Mapping[str, set[str]]
    ) -> tuple[dict[str, list[str]], dict[str, str]]:
        """The wait relation among the file's issues (waiter -> waited on), and each one's parent."""
        arcs: dict[str, list[str]] = {i.id: [] for i in issues}
        parents: dict[str, str] = {}
        for issue in issues:
            gone = skipped.get(issue.id, set())
            for blocker in issue.blockers:
                if blocker not in gone and blocker != issue.id:
                    arcs[issue.id].append(blocker)
            ups = [p for p in issue.parents if p not in gone]
            if ups:
                parents[issue.id] = ups[0]
                arcs.setdefault(ups[0], []).append(issue.id)  # a parent waits on its child
                if len(set(ups)) > 1:
                    self.warnings.append(
                        f"line {issue.line}: {issue.id} has {len(set(ups))} parents; "
                        f"{ups[0]} is its parent in skift (the others are kept for export)"
                    )
            elif issue.id in arcs and issue.blockers.count(issue.id):
                self.warnings.append(f"line {issue.line}: {issue.id} blocks itself; ignored")
        return arcs, parents

    def resolve_cycles(
        self,
        issues: Sequence[beads.BeadsIssue],
        arcs: dict[str, list[str]],
        parents: Mapping[str, str],
        allowed: bool,
    ) -> set[tuple[str, str]]:
        """Refuse a cycle naming it, or (``allowed``) the blocks arcs to drop to break them all."""
        knots = beads.find_cycles(arcs)
        if not knots:
            return set()
        breakable = {(i.id, b) for i in issues for b in i.blockers if (i.id, b) in _arcset(arcs)}
        if not allowed:
            line = {i.id: i.line for i in issues}
            first = min(knots, key=lambda k: min(line.get(v, 0) for v in k))
            ring = beads.one_cycle(arcs, sorted(first, key=lambda v: line.get(v, 0)))
            shown = " -> ".join([*ring, ring[0]])
            raise CycleError(
                f"the file's dependencies make a cycle: {shown} (each waits on the next); "
                f"{len(knots)} knot(s) in all",
                next="Remove one of those dependencies in beads, or import with break_cycles to "
                "drop the fewest blocks dependencies (they are listed).",
                move={"do": "break_cycles"},
                cycle=[*ring, ring[0]],
            )
        cut = beads.break_cycles(arcs, breakable)
        if cut is None:
            raise CycleError(
                "the file's parent-child dependencies make a cycle, which no blocks dependency breaks",
                next="Fix the parents in beads and export again.",
            )
        line = {i.id: i.line for i in issues}
        for waiter, waited in cut:
            self.warnings.append(
                f"line {line[waiter]}: dropped the dependency of {waiter} on {waited} "
                "(blocks) to break a cycle"
            )
        return set(cut)


def _arcset(arcs: Mapping[str, Sequence[str]]) -> set[tuple[str, str]]:
    return {(v, w) for v, ws in arcs.items() for w in ws}


def _node_from(
    m: beads.Mapped,
    *,
    base: Node,
    parent_id: UUID | None,
    hold_by: UUID,
    now: datetime,
) -> Node:
    hold = base.hold
    if m.hold is None:
        hold = None
    elif hold is None or hold.reason != m.hold:
        hold = Hold(at=now, by=hold_by, reason=m.hold)
    return attrs.evolve(
        base,
        title=m.title,
        body=m.body,
        kind=m.kind,
        priority=m.priority,
        status=m.status,
        hold=hold,
        result=m.result,
        labels=m.labels,
        assignee=m.assignee,
        parent_id=parent_id,
    )


def _merge(current: Node, old: beads.Mapped, new: beads.Mapped, target: Node) -> Node:
    """``current`` with the fields the newer issue changed since ``old`` taken from ``target``."""
    changes: dict[str, Any] = {}
    for field in ("title", "body", "kind", "priority", "status", "result", "labels", "assignee"):
        if getattr(old, field) != getattr(new, field):
            changes[field] = getattr(target, field)
    if old.hold != new.hold:
        changes["hold"] = target.hold
    return attrs.evolve(current, **changes) if changes else current


async def import_beads(
    e: Projects,
    tx: Tx,
    actor: Actor,
    project_ref: str,
    issues: Sequence[beads.BeadsIssue],
    *,
    dry_run: bool = False,
    break_cycles: bool = False,
    skip_dangling: bool = False,
    progress: Progress | None = None,
) -> BeadsImport:
    """Import parsed issues (``skift._beads.parse``) into a project; see the module docstring."""
    await e.authorize(tx, actor, [intent("import")])
    project = await _project(e, tx, actor, project_ref)
    e._writable_project(project)  # pyright: ignore[reportPrivateUsage]
    run = _Import(e, tx, actor, project)
    for o in await tx.origins_of_project(project.id, beads.SOURCE):
        run.origins[o.external_id] = o
        run.ids[o.external_id] = o.node_id
    for issue in issues:
        run.ids.setdefault(issue.id, new_id())
    sizes = await e.sizes(tx)
    mapped = {i.id: beads.mapped(i.raw) for i in issues}
    for issue in issues:
        run.check_sizes(issue, mapped[issue.id], sizes.body_bytes)
        for c in issue.comments:
            if not c.text.strip():
                continue
            try:
                check_size("comment", c.text, sizes.comment_bytes)
            except LimitExceeded as exc:
                raise LimitExceeded(
                    f"line {issue.line} ({issue.id}): {exc.message}",
                    next="Shorten the comment in beads and export again.",
                    line=issue.line,
                ) from None
    skipped = run.dangling(issues, skip_dangling)
    arcs, parents = run.wait_arcs(issues, skipped)
    cut = run.resolve_cycles(issues, arcs, parents, break_cycles)

    now = await tx.now()
    existing_ids = [run.origins[i.id].node_id for i in issues if i.id in run.origins]
    current = await tx.nodes_by_id(existing_ids, lock=True) if existing_ids else {}
    new_issues = [i for i in issues if i.id not in run.origins]
    first = await tx.allocate_numbers(project.id, len(new_issues)) if new_issues else 1
    numbers = {i.id: first + k for k, i in enumerate(new_issues)}
    events: list[Event] = []
    inserts: list[Node] = []
    updates: list[Node] = []
    origins: list[NodeOrigin] = []
    unchanged = 0
    total = len(issues)

    def parent_of(issue_id: str) -> UUID | None:
        p = parents.get(issue_id)
        return run.ids[p] if p is not None else None

    for k, issue in enumerate(issues):
        m = mapped[issue.id]
        nid = run.ids[issue.id]
        kept = _kept(issue.raw)
        if issue.id in numbers:
            created = issue.created_at or now
            base = Node(
                id=nid,
                org_id=tx.org_id,
                project_id=project.id,
                number=numbers[issue.id],
                title=m.title,
                context_id=uuid.uuid4(),
                created_by=actor.id,
                created_at=created,
                updated_at=issue.updated_at or created,
            )
            node = _node_from(
                m, base=base, parent_id=parent_of(issue.id), hold_by=actor.id, now=now
            )
            inserts.append(node)
            events.append(
                await e._event(  # pyright: ignore[reportPrivateUsage]
                    tx,
                    actor,
                    "create_node",
                    project_id=project.id,
                    node_id=nid,
                    reason=f"import beads {issue.id}",
                    after=node_fields(node),
                )
            )
            origins.append(
                NodeOrigin(
                    node_id=nid,
                    org_id=tx.org_id,
                    project_id=project.id,
                    source=beads.SOURCE,
                    external_id=issue.id,
                    extra={"issue": kept},
                )
            )
        else:
            origin = run.origins[issue.id]
            old_raw: Mapping[str, Any] = origin.extra.get("issue") or {}
            if dict(old_raw) == kept:
                unchanged += 1
            else:
                cur = current[nid]
                target = _node_from(
                    m, base=cur, parent_id=parent_of(issue.id), hold_by=actor.id, now=now
                )
                after = _merge(cur, beads.mapped(old_raw), m, target)
                old_parent = next(iter(_deps_of(old_raw, "parent-child")), None)
                if old_parent != parents.get(issue.id):
                    after = attrs.evolve(after, parent_id=target.parent_id)
                if after != cur:
                    after = attrs.evolve(after, updated_at=issue.updated_at or now)
                    updates.append(after)
                    names = [
                        f.name
                        for f in attrs.fields(Node)
                        if f.name != "updated_at" and getattr(cur, f.name) != getattr(after, f.name)
                    ]
                    events.append(
                        await e._event(  # pyright: ignore[reportPrivateUsage]
                            tx,
                            actor,
                            "update_node",
                            project_id=project.id,
                            node_id=nid,
                            reason=f"import beads {issue.id}",
                            before=node_fields(cur, names),
                            after=node_fields(after, names),
                        )
                    )
                origins.append(attrs.evolve(origin, extra={"issue": kept}))
        if progress is not None and (k % 500 == 0 or k == total - 1):
            progress(k + 1, total)

    await tx.insert_nodes(_parents_first(inserts))
    for node in updates:
        await tx.update_node(node)

    edges_added = await _sync_edges(run, issues, skipped, cut, now)
    comments_added = await _add_comments(run, issues, now)
    await tx.upsert_origins(origins)
    if run.origins and (edges_added or updates):
        await _check_no_cycle(tx, [run.ids[i.id] for i in issues])
    result = BeadsImport(
        project=project.slug,
        created=len(inserts),
        updated=sum(1 for o in origins if o.external_id in run.origins),
        unchanged=unchanged,
        nodes={},
        edges=edges_added,
        comments=comments_added,
        warnings=tuple(run.warnings),
        dry_run=dry_run,
    )
    numbers_of = {n.id: n.number for n in inserts} | {n.id: n.number for n in current.values()}
    result = attrs.evolve(
        result,
        nodes={i.id: format_ref(project.slug, numbers_of[run.ids[i.id]]) for i in issues},
    )
    if not (result.created or result.updated or result.edges or result.comments):
        if dry_run:
            raise DryRun(result)
        return result  # nothing changed: no event either
    events.append(
        await e._event(  # pyright: ignore[reportPrivateUsage]
            tx,
            actor,
            "import_beads",
            project_id=project.id,
            after={
                "created": result.created,
                "updated": result.updated,
                "unchanged": result.unchanged,
                "edges": result.edges,
                "comments": result.comments,
            },
        )
    )
    await tx.append_events(events)
    if dry_run:
        raise DryRun(result)
    return result


def _parents_first(nodes: Sequence[Node]) -> list[Node]:
    """The nodes ordered so a parent is written before its children (a foreign key)."""
    by_id = {n.id: n for n in nodes}
    done: set[UUID] = set()
    out: list[Node] = []
    for n in nodes:
        chain: list[Node] = []
        cur: Node | None = n
        while cur is not None and cur.id not in done:
            chain.append(cur)
            done.add(cur.id)
            cur = by_id.get(cur.parent_id) if cur.parent_id else None
        out.extend(reversed(chain))
    return out


async def _sync_edges(
    run: _Import,
    issues: Sequence[beads.BeadsIssue],
    skipped: Mapping[str, set[str]],
    cut: set[tuple[str, str]],
    now: datetime,
) -> int:
    """Add the file's blocks edges; remove those a newer export dropped (and only those)."""
    tx = run.tx
    want: set[tuple[UUID, UUID]] = set()
    gone: set[tuple[UUID, UUID]] = set()
    for issue in issues:
        me = run.ids[issue.id]
        skip = skipped.get(issue.id, set())
        for blocker in issue.blockers:
            if blocker in skip or blocker == issue.id or (issue.id, blocker) in cut:
                continue
            want.add((run.ids[blocker], me))
        origin = run.origins.get(issue.id)
        if origin is not None:
            old_raw: Mapping[str, Any] = origin.extra.get("issue") or {}
            for blocker in _deps_of(old_raw, "blocks"):
                if blocker in run.ids and blocker not in issue.blockers:
                    gone.add((run.ids[blocker], me))
    have: set[tuple[UUID, UUID]] = set()
    existing = [run.ids[i.id] for i in issues if i.id in run.origins]
    if existing:
        have = {
            (x.from_id, x.to_id) for x in await tx.edges_into(existing) if x.kind is EdgeKind.BLOCKS
        }
    for from_id, to_id in sorted(gone & have):
        await tx.delete_edge(from_id, to_id, EdgeKind.BLOCKS.value)
    new = sorted(want - have)
    await tx.insert_edges(
        [Edge(org_id=tx.org_id, from_id=f, to_id=t, created_at=now) for f, t in new]
    )
    return len(new)


async def _add_comments(run: _Import, issues: Sequence[beads.BeadsIssue], now: datetime) -> int:
    """Add each issue's comments that the node does not have yet (same author, time and text)."""
    tx = run.tx
    with_comments = [i for i in issues if any(c.text.strip() for c in i.comments)]
    if not with_comments:
        return 0
    # a comment's beads author stays text (its first line), never a principal: the importer
    # wrote it into skift (issue 32 point 8; the archive does the same)
    author = run.actor.id
    have: set[tuple[UUID, UUID, datetime, str]] = set()
    existing = [run.ids[i.id] for i in with_comments if i.id in run.origins]
    if existing:
        have = {
            (c.node_id, c.author_id, c.created_at, c.body) for c in await tx.comments_of(existing)
        }
    out: list[Comment] = []
    for issue in with_comments:
        nid = run.ids[issue.id]
        for c in issue.comments:
            if not c.text.strip():
                continue
            body = beads.imported_body(c.author, c.text)
            if (nid, author, c.created_at, body) in have:
                continue
            have.add((nid, author, c.created_at, body))
            out.append(
                Comment(
                    id=new_id(),
                    org_id=tx.org_id,
                    project_id=run.project.id,
                    node_id=nid,
                    author_id=author,
                    body=body,
                    created_at=c.created_at,
                )
            )
    await tx.insert_comments(out)
    return len(out)


async def _check_no_cycle(tx: Tx, ids: Sequence[UUID]) -> None:
    """After a re-import: the project's whole wait relation around these nodes is acyclic."""
    arcs: dict[str, list[str]] = {}
    for waiter, waited in await tx.wait_arcs_from(ids):
        arcs.setdefault(str(waiter), []).append(str(waited))
    knots = beads.find_cycles(arcs)
    if knots:
        nodes = await tx.nodes_by_id([UUID(v) for v in beads.one_cycle(arcs, knots[0])])
        shown = " -> ".join(f"#{n.number}" for n in nodes.values())
        raise CycleError(
            f"the import would close a cycle with edges made in skift: {shown}",
            next="Remove one of those edges in skift (a patch), or the dependency in beads.",
        )


# ---------------------------------------------------------------------- export


async def project_nodes(tx: Tx, project: Project) -> list[Node]:
    """Every node of a project, any state, by number."""
    out: list[Node] = []
    page = 5000
    while True:
        after = (project.id, out[-1].number) if out else None
        got = await tx.list_nodes(
            ReadyQuery(projects=(project.id,), limit=page, after_node=after), status=None, held=None
        )
        out.extend(got)
        if len(got) < page:
            return sorted(out, key=lambda n: n.number)


async def export_beads(
    e: Projects, tx: Tx, project_ref: str, *, progress: Progress | None = None
) -> list[dict[str, Any]]:
    """A project as ``bd export`` lines (one dict an issue), beads ids kept or made (``slug-N``)."""
    project = await e.resolve_project(tx, project_ref)
    nodes = await project_nodes(tx, project)
    origins = {o.node_id: o for o in await tx.origins_of_project(project.id, beads.SOURCE)}
    taken = {o.external_id for o in origins.values()}
    ids: dict[UUID, str] = {}
    for n in nodes:
        origin = origins.get(n.id)
        if origin is not None:
            ids[n.id] = origin.external_id
            continue
        made = f"{project.slug}-{n.number}"
        while made in taken:
            made += "x"
        taken.add(made)
        ids[n.id] = made
    node_ids = [n.id for n in nodes]
    blockers: dict[UUID, list[UUID]] = {}
    for edge in await tx.edges_into(node_ids) if node_ids else []:
        if edge.kind is EdgeKind.BLOCKS:
            blockers.setdefault(edge.to_id, []).append(edge.from_id)
    outside = {b for bs in blockers.values() for b in bs if b not in ids}
    if outside:
        others = await tx.nodes_by_id(outside)
        hidden = await e.hidden(tx)
        unread = {nid for nid, n in others.items() if n.project_id in hidden}
        if unread:  # a dependency on a project the caller may not read is left out
            others = {nid: n for nid, n in others.items() if nid not in unread}
            blockers = {t: [b for b in bs if b not in unread] for t, bs in blockers.items()}
        slugs = await tx.projects_by_id({n.project_id for n in others.values()})
        for nid, n in others.items():
            ids[nid] = f"{slugs[n.project_id].slug}-{n.number}"
    comments: dict[UUID, list[Comment]] = {}
    for c in await tx.comments_of(node_ids) if node_ids else []:
        comments.setdefault(c.node_id, []).append(c)
    authors = await tx.principals_by_id({c.author_id for cs in comments.values() for c in cs})
    out: list[dict[str, Any]] = []
    for k, n in enumerate(nodes):
        origin = origins.get(n.id)
        view = beads.NodeOut(
            id=ids[n.id],
            title=n.title,
            body=n.body,
            kind=n.kind,
            priority=n.priority,
            status=n.status,
            hold=n.hold.reason if n.hold is not None else None,
            result=n.result,
            labels=n.labels,
            assignee=n.assignee,
            created_at=n.created_at,
            updated_at=n.updated_at,
            parent=ids.get(n.parent_id) if n.parent_id else None,
            blockers=tuple(sorted(ids[b] for b in blockers.get(n.id, []))),
            comments=tuple(
                _beads_comment(c, authors[c.author_id].name if c.author_id in authors else "")
                for c in comments.get(n.id, [])
            ),
        )
        raw: Mapping[str, Any] | None = origin.extra.get("issue") if origin is not None else None
        out.append(beads.issue_out(view, raw))
        if progress is not None and (k % 500 == 0 or k == len(nodes) - 1):
            progress(k + 1, len(nodes))
    return out


def _beads_comment(c: Comment, principal: str) -> beads.BeadsComment:
    """A comment as beads shows it: an imported one with its beads author, else its principal."""
    imported = beads.split_imported(c.body)
    author, text = imported if imported is not None else (principal, c.body)
    return beads.BeadsComment(author=author, text=text, created_at=c.created_at)
