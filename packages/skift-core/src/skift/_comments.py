"""Comments: content on a node, threaded, edited with every prior body kept, resolved once.

A comment is its own entity, not an event: events are immutable and
comments are the one thing people edit, thread and resolve. Creating,
editing and resolving a comment each write an event (``add_comment``,
``edit_comment``, ``resolve_comment``), so the audit log records the change
while the comment holds the content.

The rules, once for every store:

- the body is markdown, not empty, at most ``Limits.comment_bytes``;
- ``in_reply_to`` names a comment on the same node (a reply is resolved on
  its own: resolving the comment it answers leaves it unresolved);
- a comment may be written on a held node (a hold blocks claiming, not
  writing) and on a leased one without its lease, never in an archived
  project (read-only), which also refuses edits and resolutions there;
- an edit keeps the prior body as a revision (body, who wrote it, when);
  an edit to the same body changes nothing;
- resolving sets ``resolved_at``/``resolved_by`` once; resolving a resolved
  comment is a no-op that returns it unchanged (so a retry is harmless);
- who may comment, edit and resolve is the policy's call (actions
  ``comment``, ``edit_comment``, ``resolve_comment`` in default.rego).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import attrs

from ._context import (
    Actor,
    Context,
    check_size,
    node_facts,
    ref_of,
)
from ._convert import from_json, to_json
from ._errors import IdempotencyMismatch, Invalid, NotFound
from ._intent import intent
from ._models import Comment, Node, Project, Revision
from ._ops import canonical_digest
from ._pages import Page, cut, read_limit, read_position, scoped
from ._refs import new_id, parse_ulid, ulid_str
from ._retention import refuse_pruned_request
from ._store import Tx
from ._views import CommentInfo, CommentRevision


async def _body(e: Context, tx: Tx, body: str) -> str:
    if not body.strip():
        raise Invalid(
            "a comment needs a body", next="Write what you want to say (markdown).", field="body"
        )
    check_size("comment", body, (await e.sizes(tx)).comment_bytes)
    return body


async def _node_and_project(tx: Tx, node_id: UUID) -> tuple[Node, Project]:
    node = (await tx.nodes_by_id([node_id]))[node_id]
    project = await tx.project_by_id(node.project_id)
    assert project is not None
    return node, project


async def _comment(e: Context, tx: Tx, comment_id: str, *, lock: bool = False) -> Comment:
    ident = parse_ulid(comment_id.strip())
    if ident is None:
        raise Invalid(
            f"{comment_id!r} is not a comment id",
            next="Use the id a comment was given (a node's comments list them).",
            move={"do": "list_comments"},
            field="comment_id",
        )
    found = await tx.comment_by_id(ident, lock=lock)
    if found is not None and found.project_id in await e.hidden(tx):
        found = None  # a comment in a project the caller may not read is no comment
    if found is None:
        raise NotFound(
            f"no comment {comment_id}",
            next="Check the id; a node's comments list them.",
            move={"do": "list_comments"},
        )
    return found


def _comment_facts(c: Comment, actor: Actor) -> dict[str, Any]:
    """What the policy knows about a comment."""
    return {
        "id": ulid_str(c.id),
        "mine": c.author_id == actor.id,
        "resolved": c.resolved_at is not None,
    }


async def new_comment(
    e: Context, tx: Tx, actor: Actor, node: Node, project: Project, body: str, reply_to: str | None
) -> Comment:
    """Check and insert a comment on ``node`` (policy and event are the caller's)."""
    e._writable_project(project)  # pyright: ignore[reportPrivateUsage]
    text = await _body(e, tx, body)
    parent_id: UUID | None = None
    if reply_to is not None:
        parent = await _comment(e, tx, reply_to)
        if parent.node_id != node.id:
            other, other_project = await _node_and_project(tx, parent.node_id)
            where, here = ref_of(other, other_project), ref_of(node, project)
            raise Invalid(
                f"comment {reply_to} is on {where}, not on {here}; a reply goes on the node of the comment it answers",
                next=f"Reply on {where}, or comment on {here} without reply_to.",
                field="reply_to",
            )
        parent_id = parent.id
    comment = Comment(
        id=new_id(),
        org_id=tx.org_id,
        project_id=node.project_id,
        node_id=node.id,
        author_id=actor.id,
        body=text,
        in_reply_to=parent_id,
        created_at=await tx.now(),
    )
    await tx.insert_comment(comment)
    return comment


def comment_event(c: Comment) -> dict[str, Any]:
    return {
        "comment": ulid_str(c.id),
        "in_reply_to": ulid_str(c.in_reply_to) if c.in_reply_to else None,
        "body": c.body,
    }


def _fingerprint(node: Node, body: str, reply_to: str | None) -> str:
    return canonical_digest(
        {"op": "add_comment", "node": ulid_str(node.id), "body": body, "reply_to": reply_to}
    )


async def add_comment(
    e: Context,
    tx: Tx,
    actor: Actor,
    ref: str,
    project_ref: str | None,
    body: str,
    reply_to: str | None,
    request_id: str,
) -> CommentInfo:
    node = await e.node_in(tx, ref, project_ref)
    project = await tx.project_by_id(node.project_id)
    assert project is not None
    fp = _fingerprint(node, body, reply_to)
    stored = await tx.reserve_request(actor.id, request_id, fp)
    if stored is not None:
        if stored.fingerprint != fp or stored.response is None:
            raise IdempotencyMismatch(
                f"request id {request_id!r} was already used for a different request",
                next="Use a fresh request id for new content; reuse an id only to retry the same request.",
            )
        return from_json(stored.response, CommentInfo)
    await refuse_pruned_request(tx, actor.id, request_id, e.limits.request_retention)
    comment = await new_comment(e, tx, actor, node, project, body, reply_to)
    ref_text = ref_of(node, project)
    await e.authorize(
        tx, actor, [intent("comment", node=node_facts(node, ref_text, project.slug, actor))]
    )
    await tx.append_events(
        [
            await e._event(  # pyright: ignore[reportPrivateUsage]
                tx,
                actor,
                "add_comment",
                project_id=project.id,
                node_id=node.id,
                request_id=request_id,
                after=comment_event(comment),
            )
        ]
    )
    info = (await infos(tx, [comment]))[0]
    await tx.save_response(actor.id, request_id, to_json(info))
    return info


async def _guarded(
    e: Context, tx: Tx, actor: Actor, comment_id: str, action: str
) -> tuple[Comment, Node, Project]:
    """Load a comment for a change: its project must be live and the policy must allow it."""
    c = await _comment(e, tx, comment_id, lock=True)
    node, project = await _node_and_project(tx, c.node_id)
    e._writable_project(project)  # pyright: ignore[reportPrivateUsage]
    live = (await tx.live_leases([node.id])).get(node.id)
    facts = node_facts(
        node,
        ref_of(node, project),
        project.slug,
        actor,
        in_my_lease=live is not None and live.holder == actor.id,
    )
    await e.authorize(tx, actor, [intent(action, node=facts, comment=_comment_facts(c, actor))])
    return c, node, project


async def edit_comment(e: Context, tx: Tx, actor: Actor, comment_id: str, body: str) -> CommentInfo:
    c, node, project = await _guarded(e, tx, actor, comment_id, "edit_comment")
    text = await _body(e, tx, body)
    if text == c.body:
        return (await infos(tx, [c]))[0]
    now = await tx.now()
    prior = Revision(body=c.body, author_id=c.author_id, at=c.edited_at or c.created_at)
    edited = attrs.evolve(c, body=text, edited_at=now, revisions=(*c.revisions, prior))
    await tx.update_comment(edited, revision=prior)
    await tx.append_events(
        [
            await e._event(  # pyright: ignore[reportPrivateUsage]
                tx,
                actor,
                "edit_comment",
                project_id=project.id,
                node_id=node.id,
                before={"comment": ulid_str(c.id), "body": c.body},
                after={"comment": ulid_str(c.id), "body": text},
            )
        ]
    )
    return (await infos(tx, [edited]))[0]


async def resolve_comment(e: Context, tx: Tx, actor: Actor, comment_id: str) -> CommentInfo:
    c, node, project = await _guarded(e, tx, actor, comment_id, "resolve_comment")
    if c.resolved_at is not None:
        return (await infos(tx, [c]))[0]
    now = await tx.now()
    resolved = attrs.evolve(c, resolved_at=now, resolved_by=actor.id)
    await tx.update_comment(resolved)
    await tx.append_events(
        [
            await e._event(  # pyright: ignore[reportPrivateUsage]
                tx,
                actor,
                "resolve_comment",
                project_id=project.id,
                node_id=node.id,
                after={"comment": ulid_str(c.id), "resolved_at": now.isoformat()},
            )
        ]
    )
    return (await infos(tx, [resolved]))[0]


async def list_comments(
    e: Context,
    tx: Tx,
    ref: str,
    project_ref: str | None,
    *,
    limit: int | None = None,
    page: str | None = None,
) -> Page[CommentInfo]:
    """A node's comments, oldest first (created_at, id): every one when ``limit`` is None,
    else ``limit`` of them after ``page`` (keyset: a comment added or removed meanwhile
    moves no other)."""
    size = None if limit is None else e.page_size(limit)
    node = await e.node_in(tx, ref, project_ref)
    name = scoped("comments", node.id)
    after = read_position(name, page, (datetime, UUID))
    got = await tx.comment_page(node.id, after=after, limit=read_limit(size))
    rows, ends, more = cut(name, got, size, lambda c: (c.created_at, c.id))
    return Page(await infos(tx, rows), ends=ends, more=more)


async def infos(tx: Tx, comments: Sequence[Comment]) -> list[CommentInfo]:
    """Comments as callers see them: node refs, principals by name."""
    if not comments:
        return []
    who: set[UUID] = set()
    for c in comments:
        who.add(c.author_id)
        who.update(r.author_id for r in c.revisions)
        if c.resolved_by is not None:
            who.add(c.resolved_by)
    principals = await tx.principals_by_id(who)
    nodes = await tx.nodes_by_id({c.node_id for c in comments})
    projects = await tx.projects_by_id({n.project_id for n in nodes.values()})

    def name(pid: UUID) -> str:
        p = principals.get(pid)
        return p.name if p else ulid_str(pid)

    def kind(pid: UUID) -> str:
        p = principals.get(pid)
        return p.kind.value if p else "?"

    out: list[CommentInfo] = []
    for c in comments:
        node = nodes[c.node_id]
        out.append(
            CommentInfo(
                id=ulid_str(c.id),
                node=ref_of(node, projects[node.project_id]),
                node_title=node.title,
                author=name(c.author_id),
                author_kind=kind(c.author_id),
                body=c.body,
                in_reply_to=ulid_str(c.in_reply_to) if c.in_reply_to else None,
                created_at=c.created_at,
                edited_at=c.edited_at,
                resolved_at=c.resolved_at,
                resolved_by=name(c.resolved_by) if c.resolved_by else None,
                revisions=tuple(
                    CommentRevision(
                        body=r.body,
                        author=name(r.author_id),
                        author_kind=kind(r.author_id),
                        at=r.at,
                    )
                    for r in c.revisions
                ),
            )
        )
    return out
