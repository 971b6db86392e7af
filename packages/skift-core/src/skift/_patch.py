"""The patch: a list of operations applied atomically, under one authorization.

Creation with aliases, updates, blocks edges, drops (with cascade bounded by
``max_nodes``), completion (with artifacts), comments, reopen, node holds; the
patch's limits and idempotency (a request id replays its stored response).
The state the operations share and the cycle check are in ``_patch_state``;
the content rules they call (``_artifacts``, ``_comments``, ``_usage``) depend
only on the context layer.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Any
from uuid import UUID

import attrs

from ._artifacts import Artifact, artifact_event, prepare_artifacts
from ._comments import comment_event, new_comment
from ._context import Actor, Context, changed_fields, check_size, fence, node_fields
from ._convert import from_json, to_json
from ._errors import (
    CycleError,
    FencingError,
    IdempotencyMismatch,
    Invalid,
    LimitExceeded,
    NotFound,
    Refused,
    SkiftError,
)
from ._models import AssigneeKind, Edge, EdgeKind, Hold, Node, ReleaseReason, Status
from ._ops import (
    AddComment,
    AddEdge,
    AttachArtifact,
    CompleteNode,
    CreateNode,
    DropNode,
    HoldNode,
    Op,
    RemoveEdge,
    ReopenNode,
    UnholdNode,
    UpdateNode,
    fingerprint,
)
from ._patch_state import PatchState
from ._refs import format_ref, new_id, parse_ulid, ulid_str
from ._retention import refuse_pruned_request
from ._store import Derived, Tx
from ._usage import set_budget
from ._views import PatchResult

_ALIAS_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")


class Patching(Context):
    """The patch entry point: limits, idempotency, applying the operations, one authorization."""

    def needs_graph_lock(self, ops: Sequence[Op]) -> bool:
        for op in ops:
            if isinstance(op, AddEdge | RemoveEdge):
                return True
            if isinstance(op, CreateNode) and (op.parent or op.blocked_by):
                return True
            if isinstance(op, UpdateNode) and op.parent is not None:
                return True
        return False

    def check_ops_count(self, count: int) -> None:
        """Refuse a patch of ``count`` operations over the limit: callers count before they
        parse or convert a single operation (a 100,000-operation patch cost a minute)."""
        bound = self.limits.ops_per_patch
        if count > bound:
            raise LimitExceeded(
                f"the patch has {count} operations; the limit is {bound}",
                next="Split it into several patches.",
                limit="ops_per_patch",
                bound=bound,
            )

    def check_patch_limits(self, ops: Sequence[Op]) -> None:
        lim = self.limits
        if not ops:
            raise Invalid(
                "the patch has no operations",
                next="Add at least one operation to 'ops'.",
                field="ops",
            )
        self.check_ops_count(len(ops))
        creates = sum(1 for o in ops if isinstance(o, CreateNode))
        if creates > lim.nodes_per_patch:
            raise LimitExceeded(
                f"the patch creates {creates} nodes; the limit is {lim.nodes_per_patch}",
                next="Split it into several patches.",
                limit="nodes_per_patch",
                bound=lim.nodes_per_patch,
            )
        edges = sum(1 for o in ops if isinstance(o, AddEdge)) + sum(
            len(o.blocked_by) for o in ops if isinstance(o, CreateNode)
        )
        if edges > lim.edges_per_patch:
            raise LimitExceeded(
                f"the patch adds {edges} edges; the limit is {lim.edges_per_patch}",
                next="Split it into several patches.",
                limit="edges_per_patch",
                bound=lim.edges_per_patch,
            )

    async def patch(
        self,
        tx: Tx,
        actor: Actor,
        project_ref: str,
        ops: Sequence[Op],
        *,
        request_id: str,
        lease: str | None = None,
        release_after: ReleaseReason | None = None,
    ) -> PatchResult:
        self.check_patch_limits(ops)
        project = await self.resolve_project(tx, project_ref)
        self._writable_project(project)
        fp = fingerprint(ulid_str(project.id), ops, lease)
        stored = await tx.reserve_request(actor.id, request_id, fp)
        if stored is not None:
            if stored.fingerprint != fp or stored.response is None:
                raise IdempotencyMismatch(
                    f"request id {request_id!r} was already used for a different patch",
                    next="Use a fresh request id for new content; reuse an id only to retry the same patch.",
                )
            return from_json(stored.response, PatchResult)
        await refuse_pruned_request(tx, actor.id, request_id, self.limits.request_retention)
        ctx = _Patch(self, tx, actor, project, request_id)
        if len(ops) == 1 and isinstance(ops[0], CompleteNode):
            ctx.derived_before = {}
        if lease is not None:
            ctx.lease = await fence(tx, actor, lease, refused="this patch is refused")
        count = sum(1 for o in ops if isinstance(o, CreateNode))
        if count:
            ctx.next_number = await tx.allocate_numbers(project.id, count)
        for index, op in enumerate(ops):
            ctx.index = index
            try:
                await ctx.apply(op)
            except SkiftError as exc:
                exc.details.setdefault("index", index)
                field = exc.details.get("field")
                if isinstance(field, str) and field and not field.startswith("ops["):
                    # the path into the request: ops[1].title, as a parse error names it
                    exc.details["field"] = f"ops[{exc.details['index']}].{field}"
                raise
        await ctx.check_cycles()
        if (
            release_after is not None
            and ctx.lease is not None
            and ctx.lease.node_id not in ctx.touched
        ):
            # gate-and-release releases the lease of the node it gates, never another node's
            raise FencingError(
                f"lease {lease} is not a lease on the node this patch writes",
                next="Use the lease id that Claim returned for this node.",
            )
        await self.authorize(tx, actor, ctx.intents, ctx.lease)
        await ctx.finish(release_after)
        result = PatchResult(
            request_id=request_id,
            created={alias: ctx.refs[nid] for alias, nid in ctx.aliases.items()},
            dropped=tuple(ctx.refs[n] for n in ctx.dropped),
            nodes=tuple(
                await self.infos(
                    tx, [ctx.nodes[n] for n in ctx.touched], derived=ctx.derived_after()
                )
            ),
            parked=ctx.parked,
        )
        await tx.save_response(actor.id, request_id, to_json(result))
        return result


class _Patch(PatchState):
    """The operations of a patch: create (aliases), update, edges, drop (cascade), complete,
    attach, comment, reopen, hold."""

    def derived_after(self) -> dict[UUID, Derived] | None:
        """The derived facts of a patch that is one complete_node, from those read before its
        writes (None for any other patch: its nodes' facts are read after its writes).

        Completing a node changes none of its derived facts but two: its lease is released
        (it is claimed by nobody: a live lease on it is this patch's, or the write is refused)
        and, when a person completes it, it is written by a person. Whether it is blocked,
        held, has open children or is archived follows from other rows."""
        if self.derived_before is None:
            return None
        return {
            nid: attrs.evolve(d, claimed=False, human_written=d.human_written or self.actor.is_user)
            for nid, d in self.derived_before.items()
        }

    async def apply(self, op: Op) -> None:
        if not isinstance(op, CreateNode):
            await self.flush()
        match op:
            case CreateNode():
                await self.create(op)
            case UpdateNode():
                await self.update(op)
            case DropNode():
                await self.drop(op)
            case CompleteNode():
                await self.complete(op)
            case ReopenNode():
                await self.reopen(op)
            case HoldNode():
                await self.hold(op, hold=True)
            case UnholdNode():
                await self.hold(op, hold=False)
            case AddEdge():
                await self.add_edge(op)
            case RemoveEdge():
                await self.remove_edge(op)
            case AttachArtifact():
                await self.attach(op)
            case AddComment():
                await self.comment(op)

    def _labels(self, labels: Sequence[str]) -> tuple[str, ...]:
        lim = self.e.limits
        clean = tuple(dict.fromkeys(label.strip() for label in labels if label.strip()))
        if len(clean) > lim.labels_per_node:
            raise LimitExceeded(
                f"{len(clean)} labels; the limit is {lim.labels_per_node}",
                next="Use fewer labels.",
                limit="labels_per_node",
                bound=lim.labels_per_node,
            )
        for label in clean:
            check_size("label", label, lim.label_chars, chars=True)
        return clean

    def _title(self, title: str) -> str:
        text = title.strip()
        if not text:
            raise Invalid(
                "a node needs a title",
                next="Give a short title saying what the work is.",
                field="title",
            )
        check_size("title", text, self.e.limits.title_chars, chars=True)
        return text

    async def _depth(self, node: Node) -> int:
        """How deep ``node`` sits in its tree (a root is 1), nodes of this patch included."""
        depth = 1
        while node.id in self.created and node.parent_id is not None:
            node = self.nodes[node.parent_id]
            depth += 1
        if node.id in self.created:
            return depth
        return depth + len(await self.tx.ancestors(node.id))

    async def _height(self, node: Node) -> int:
        """How many levels the subtree under ``node`` spans (a leaf is 1)."""
        if node.id in self.created:
            return 1
        nodes = await self.tx.nodes_by_id(set(await self.tx.subtree_ids(node.id)))
        kids: dict[UUID, list[UUID]] = {}
        for n in nodes.values():
            if n.parent_id is not None and n.id != node.id:
                kids.setdefault(n.parent_id, []).append(n.id)
        height, frontier = 0, [node.id]
        while frontier:
            height += 1
            frontier = [k for f in frontier for k in kids.get(f, [])]
        return height

    async def _check_depth(self, parent: Node, height: int) -> None:
        """A tree is at most ``Limits.tree_depth`` levels deep (Explain and Ready walk it)."""
        bound = self.e.limits.tree_depth
        depth = await self._depth(parent) + height
        if depth > bound:
            raise LimitExceeded(
                f"under {self.refs.get(parent.id, 'that parent')} the tree would be {depth} levels "
                f"deep; the limit is {bound}",
                next="File the work under a shallower parent, or link it with a blocks edge.",
                limit="tree_depth",
                bound=bound,
            )

    async def _parent(self, ref: str, child_project: UUID) -> Node:
        parent = await self.node(ref)
        if parent.project_id != child_project:
            raise Invalid(
                f"{self.refs[parent.id]} is in another project; a parent must be in the child's project",
                next="Link across projects with a blocks edge (add_edge) instead.",
                field="parent",
            )
        if parent.status is not Status.OPEN:
            raise Refused(
                f"{self.refs[parent.id]} is {parent.status.value}; children go under open work",
                next=f"Reopen {self.refs[parent.id]} first, or file the child elsewhere.",
            )
        await self.guard(parent)
        return parent

    async def create(self, op: CreateNode) -> None:
        title = self._title(op.title)
        if op.body:
            check_size("body", op.body, (await self.e.sizes(self.tx)).body_bytes)
        if op.alias is not None:
            if not _ALIAS_RE.match(op.alias) or parse_ulid(op.alias) is not None:
                raise Invalid(
                    f"{op.alias!r} is not a usable alias",
                    next="Use a short name of letters, digits, _ . - starting with a letter, e.g. research.",
                    field="alias",
                )
            if op.alias in self.aliases:
                raise Invalid(
                    f"alias {op.alias!r} is used twice in this patch",
                    next="Give each created node its own alias.",
                    field="alias",
                )
        parent_id: UUID | None = None
        if op.parent is not None:
            parent = await self._parent(op.parent, self.project.id)
            await self._check_depth(parent, 1)
            parent_id = parent.id
        now = await self.tx.now()
        number = self.next_number
        self.next_number += 1
        node = Node(
            id=new_id(),
            org_id=self.tx.org_id,
            project_id=self.project.id,
            number=number,
            parent_id=parent_id,
            kind=op.kind.strip() or "task",
            title=title,
            body=op.body,
            priority=op.priority,
            assignee_kind=op.assignee_kind,
            assignee=op.assignee or None,
            labels=self._labels(op.labels),
            context_id=uuid.uuid4(),
            created_by=self.actor.id,
            created_at=now,
            updated_at=now,
        )
        self.pending_nodes.append(node)
        self.refs[node.id] = format_ref(self.project.slug, number)
        self.created.add(node.id)
        self._touch(node)
        self.intend(
            "create",
            node=await self.facts(node),
            parent=await self.facts(self.nodes[parent_id]) if parent_id else None,
        )
        if op.alias is not None:
            self.aliases[op.alias] = node.id
        if parent_id is not None:
            self.arcs.append((parent_id, node.id))
        await self.event("create_node", node, after=node_fields(node))
        for blocker_ref in op.blocked_by:
            await self._link(await self.node(blocker_ref), node)

    async def _link(self, source: Node, target: Node) -> None:
        if source.id == target.id:
            raise CycleError(
                f"{self.refs[source.id]} cannot block itself",
                next="Remove the edge; a node never waits on itself.",
            )
        self.e._writable_project(await self._project(source.project_id))  # pyright: ignore[reportPrivateUsage]
        await self.guard(target)
        self.intend("link", **{"from": await self.facts(source), "to": await self.facts(target)})
        if target.id in self.created:
            # a node this patch created has no edges but the ones this patch added
            if (source.id, target.id) in self.new_edges:
                return
        else:
            existing = await self.tx.edges_into([target.id])
            if any(e.from_id == source.id and e.kind is EdgeKind.BLOCKS for e in existing):
                return
        edge = Edge(
            org_id=self.tx.org_id,
            from_id=source.id,
            to_id=target.id,
            created_at=await self.tx.now(),
        )
        self.new_edges.add((source.id, target.id))
        if target.id in self.created or source.id in self.created:
            self.pending_edges.append(edge)  # after the nodes it joins, in flush()
        else:
            await self.tx.insert_edges([edge])
        self.arcs.append((target.id, source.id))
        self._touch(target)
        await self.event(
            "add_edge",
            target,
            after={"from": self.refs[source.id], "to": self.refs[target.id], "kind": "blocks"},
        )

    def _edge_kind(self, kind: str) -> None:
        if kind != EdgeKind.BLOCKS.value:
            raise Invalid(
                f"edge kind {kind!r} is not supported",
                next="Use kind 'blocks' (the default).",
                field="kind",
            )

    async def add_edge(self, op: AddEdge) -> None:
        self._edge_kind(op.kind)
        await self._link(await self.node(op.from_), await self.node(op.to))

    async def remove_edge(self, op: RemoveEdge) -> None:
        self._edge_kind(op.kind)
        source, target = await self.node(op.from_), await self.node(op.to)
        self.e._writable_project(await self._project(source.project_id))  # pyright: ignore[reportPrivateUsage]
        await self.guard(target)
        self.intend("unlink", **{"from": await self.facts(source), "to": await self.facts(target)})
        if not await self.tx.delete_edge(source.id, target.id, op.kind):
            raise NotFound(
                f"{self.refs[source.id]} does not block {self.refs[target.id]}",
                next=f"Explain {self.refs[target.id]} to list what blocks it.",
                move={"do": "explain", "ref": self.refs[target.id]},
            )
        self._touch(target)
        await self.event(
            "remove_edge",
            target,
            before={"from": self.refs[source.id], "to": self.refs[target.id], "kind": op.kind},
        )

    async def update(self, op: UpdateNode) -> None:
        node = await self.node(op.node)
        await self.guard(node)
        changes: dict[str, Any] = {}
        if op.title is not None:
            changes["title"] = self._title(op.title)
        if op.body is not None:
            check_size("body", op.body, (await self.e.sizes(self.tx)).body_bytes)
            changes["body"] = op.body
        if op.kind is not None:
            changes["kind"] = op.kind.strip() or "task"
        if op.priority is not None:
            changes["priority"] = op.priority
        if op.labels is not None:
            changes["labels"] = self._labels(op.labels)
        if op.assignee is not None:
            changes["assignee"] = op.assignee or None
        if op.assignee_kind is not None:
            if op.assignee_kind == "":
                changes["assignee_kind"] = None
            else:
                try:
                    changes["assignee_kind"] = AssigneeKind(op.assignee_kind)
                except ValueError:
                    raise Invalid(
                        f"assignee_kind {op.assignee_kind!r} is not agent or user",
                        next="Use agent, user, or an empty string to unset it.",
                        field="assignee_kind",
                    ) from None
        if op.parent is not None:
            if op.parent == "":
                new_parent: UUID | None = None
            else:
                parent = await self._parent(op.parent, node.project_id)
                if parent.id == node.id:
                    raise CycleError(
                        f"{self.refs[node.id]} cannot contain itself", next="Choose another parent."
                    )
                new_parent = parent.id
                if new_parent != node.parent_id:
                    await self._check_depth(parent, await self._height(node))
            if new_parent != node.parent_id:
                if node.parent_id is not None:
                    old_parent = await self.node(ulid_str(node.parent_id))
                    await self.guard(old_parent)
                    self._touch(old_parent)
                if new_parent is not None:
                    self.arcs.append((new_parent, node.id))
                    self._touch(self.nodes[new_parent])
                changes["parent_id"] = new_parent
        updated = attrs.evolve(node, **changes)
        changed = [
            "parent" if k == "parent_id" else k for k, v in changes.items() if getattr(node, k) != v
        ]
        money = await set_budget(self.tx, node.id, "node", budget=op.budget, cap=op.cap)
        if money is not None:  # budgets live beside the node (_usage); "cap" is a person's call
            changed += list(money[1])
            await self.event("set_budget", node, before=money[0], after=money[1])
        new_parent_id = changes.get("parent_id")
        self.intend(
            "update",
            node=await self.facts(node),
            parent=await self.facts(self.nodes[new_parent_id]) if new_parent_id else None,
            changes=changed,
        )
        if updated == node:
            self._touch(node)
            return
        before, after = changed_fields(node, updated)
        await self.write(node, updated)
        await self.event("update_node", updated, before=before, after=after)

    async def _end_lease(self, node: Node) -> None:
        if (
            self.lease is not None
            and self.lease.node_id == node.id
            and self.lease.released_at is None
        ):
            now = await self.tx.now()
            self.lease = attrs.evolve(
                self.lease, released_at=now, release_reason=ReleaseReason.COMPLETE
            )
            await self.tx.update_lease(self.lease)

    async def drop(self, op: DropNode) -> None:
        node = await self.node(op.node)
        reason = self.e._reason(op.reason, "drop")  # pyright: ignore[reportPrivateUsage]
        if node.status is Status.DROPPED:
            raise Refused(f"{self.refs[node.id]} is already dropped", next="Nothing to do.")
        targets = [node]
        if op.cascade is not None:
            targets = await self._cascade(node)
            if len(targets) > op.cascade.max_nodes:
                raise Refused(
                    f"dropping {self.refs[node.id]} with cascade would drop {len(targets)} nodes; "
                    f"the bound is {op.cascade.max_nodes}",
                    next=f"Read what it takes (explain, list the nodes), then set cascade.max_nodes to "
                    f"{len(targets)} or more, or drop without cascade.",
                    move={"do": "raise_cascade_bound", "count": len(targets)},
                    count=len(targets),
                    bound=op.cascade.max_nodes,
                )
        for target in targets:
            await self.guard(target)
            self.intend("drop", node=await self.facts(target), cascade=target is not node)
            dropped = attrs.evolve(target, status=Status.DROPPED)
            await self.write(target, dropped)
            await self._end_lease(target)
            self.dropped.append(target.id)
            await self.event(
                "drop_node",
                dropped,
                reason=reason,
                before={"status": target.status.value},
                after={
                    "status": "dropped",
                    "cascade_from": self.refs[node.id] if target is not node else None,
                },
            )

    async def _cascade(self, root: Node) -> list[Node]:
        """The node, everything downstream of it through blocks edges, and their descendants."""
        order: list[UUID] = [root.id]
        seen = {root.id}
        frontier = [root.id]
        while frontier:
            nxt: list[UUID] = []
            for e in await self.tx.edges_out_of(frontier):
                if e.to_id not in seen:
                    seen.add(e.to_id)
                    nxt.append(e.to_id)
            for c in await self.tx.children_of(frontier):
                if c.id not in seen:
                    seen.add(c.id)
                    nxt.append(c.id)
            order.extend(nxt)
            frontier = nxt
        out: list[Node] = []
        for nid in order:
            if nid not in self.nodes:
                loaded = (await self.tx.nodes_by_id([nid], lock=True))[nid]
                self.nodes[nid] = loaded
                project = await self._project(loaded.project_id)
                self.refs[nid] = format_ref(project.slug, loaded.number)
            n = self.nodes[nid]
            if n.status is not Status.DROPPED:
                out.append(n)
        return out

    async def complete(self, op: CompleteNode) -> None:
        node = await self.node(op.node)
        if op.result:  # an empty result needs no reading of the organization's limits
            check_size("result", op.result, (await self.e.sizes(self.tx)).result_bytes)
        if node.status is not Status.OPEN:
            raise Refused(
                f"{self.refs[node.id]} is already {node.status.value}",
                next=f"Reopen {self.refs[node.id]} first (with a reason) to complete it again.",
                move={"do": "reopen", "ref": self.refs[node.id]},
            )
        if self.derived_before is not None:
            self.derived_before.update(await self.tx.derive([node.id]))
        await self.guard(node)
        self.intend("complete", node=await self.facts(node))
        await self._attach(node, op.artifacts)
        done = attrs.evolve(node, status=Status.DONE, result=op.result)
        await self.write(node, done)
        await self._end_lease(node)
        await self.event(
            "complete_node",
            done,
            before={"status": "open"},
            after={"status": "done", "result": op.result},
        )

    async def attach(self, op: AttachArtifact) -> None:
        node = await self.node(op.node)
        await self.guard(node)
        self.intend("attach", node=await self.facts(node))
        await self._attach(node, (op.artifact,))

    async def _attach(self, node: Node, artifacts: Sequence[Artifact]) -> None:
        """Check and store artifacts on a node (the rules are in _artifacts)."""
        if not artifacts:
            return
        sizes = await self.e.sizes(self.tx)
        records = await prepare_artifacts(self.tx, sizes, node.id, artifacts, self.actor.id)
        await self.tx.insert_artifacts(records)
        self._touch(node)
        for r in records:
            await self.event("attach_artifact", node, after=artifact_event(r))

    async def comment(self, op: AddComment) -> None:
        """The ``add_comment`` operation: authorized with the rest of the patch (rules: _comments)."""
        node = await self.node(op.node)
        project = await self._project(node.project_id)
        comment = await new_comment(
            self.e, self.tx, self.actor, node, project, op.body, op.reply_to
        )
        self.intend("comment", node=await self.facts(node))
        self._touch(node)
        await self.event("add_comment", node, after=comment_event(comment))

    async def reopen(self, op: ReopenNode) -> None:
        node = await self.node(op.node)
        reason = self.e._reason(op.reason, "reopen")  # pyright: ignore[reportPrivateUsage]
        if node.status is Status.OPEN:
            raise Refused(f"{self.refs[node.id]} is already open", next="Nothing to do.")
        await self.guard(node)
        self.intend("reopen", node=await self.facts(node))
        opened = attrs.evolve(node, status=Status.OPEN)
        await self.write(node, opened)
        await self.event(
            "reopen_node",
            opened,
            reason=reason,
            before={"status": node.status.value},
            after={"status": "open"},
        )

    async def hold(self, op: HoldNode | UnholdNode, *, hold: bool) -> None:
        node = await self.node(op.node)
        self.intend("hold" if hold else "unhold", node=await self.facts(node))
        reason = self.e._reason(op.reason, "hold" if hold else "unhold")  # pyright: ignore[reportPrivateUsage]
        project = await self._project(node.project_id)
        self.e._writable_project(project)  # pyright: ignore[reportPrivateUsage]
        now = await self.tx.now()
        if hold:
            if node.hold is not None:
                raise Refused(
                    f"{self.refs[node.id]} is already held ({node.hold.reason})",
                    next="Release its hold first (with a reason) to hold it anew.",
                    move={"do": "unhold", "ref": self.refs[node.id]},
                )
            before_ready = await self._open_subtree(node)
            changed = attrs.evolve(node, hold=Hold(at=now, by=self.actor.id, reason=reason))
        else:
            if node.hold is None:
                raise Refused(
                    f"{self.refs[node.id]} carries no hold of its own",
                    next=f"Explain {self.refs[node.id]} to see where a hold on it comes from.",
                    move={"do": "explain", "ref": self.refs[node.id]},
                )
            changed = attrs.evolve(node, hold=None)
            before_ready = 0
        await self.write(node, changed)
        if hold:
            self.parked += before_ready
        await self.event("hold_node" if hold else "unhold_node", changed, reason=reason)

    async def _open_subtree(self, node: Node) -> int:
        """How many open nodes a hold on ``node`` parks: it and its open descendants."""
        count = 1 if node.status is Status.OPEN else 0
        frontier = [node.id]
        seen = {node.id}
        while frontier:
            kids = [c for c in await self.tx.children_of(frontier) if c.id not in seen]
            seen.update(c.id for c in kids)
            count += sum(1 for c in kids if c.status is Status.OPEN)
            frontier = [c.id for c in kids]
        return count
