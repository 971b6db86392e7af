"""The ce-sweep state in a skift project (``skift sweep --state skift:SLUG``).

Only the public :class:`skift.Skift` API is used, so the same code runs in
process (memory, PostgreSQL) and against a server. The layout:

- **The state node** (label and kind ``sweep-state``, skift's bookkeeping
  kind: never ready work nor a gate waiting on a person, though it is a gate
  so no agent may take it): its body carries the document without its items (``schema_version``,
  the sweep lease, ``sources``, ``last_run``, unknown top-level keys) as a
  fenced JSON block.
- **The write lock** is a skift lease on the state node: every
  read-modify-write claims it (waiting while another writer holds it), writes
  under it, and releases it. The claim is atomic on the server, so it is a
  real cross-machine mutex; a crashed writer's claim expires after
  ``lock_ttl``; every write carries the lease, so a writer whose claim lapsed
  is fenced off instead of clobbering the next one. The sweep lease itself
  (writer, timestamp, ttl_minutes) is data under that lock, with exactly the
  file's rules, so both modes answer the same words for the same sequence.
- **An item is a node** (labels ``sweep-item`` and ``sweep-key:<digest of its
  key>``; its fields, unknown ones included, in a fenced JSON block of its
  body) whose readiness follows its status (:func:`placement`).

Redaction is applied to every item before it is sent, so a sensitive item's
``body`` and ``quote`` never reach the server, whatever path wrote it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from .._models import BOOKKEEPING_KIND
from ._file import load as load_file
from ._file import write as write_file
from ._file import write_lock
from ._rules import (
    MUTATING,
    STATUSES,
    Clock,
    Command,
    Loaded,
    Outcome,
    State,
    apply,
    evidenced,
    is_sensitive,
    redact,
    stamp_version,
    state_from_text,
    utc_now,
)
from ._yaml import emit_document

if TYPE_CHECKING:
    from skift import NodeInfo, Skift

STATE_LABEL = "sweep-state"
ITEM_LABEL = "sweep-item"
ITEM_KIND = "sweep-item"
STATE_KIND = BOOKKEEPING_KIND  # "sweep-state": out of Ready, ClaimNext and Waiting on me
_FENCE = "```json\n"
_OPS_PER_PATCH = 500
# the commands that write on an absent state (they create the project)
_CREATES = frozenset({"lease-acquire", "run-record", "import-legacy"})


def key_label(key: str) -> str:
    """The label that finds an item's node by its key (labels are short; keys need not be)."""
    return "sweep-key:" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def placement(item: dict[str, Any]) -> tuple[str, bool, bool]:
    """Where an item's node stands: (open|done|dropped, held, gate).

    ``closed`` with all three evidence fields is done (an under-evidenced
    ``closed`` stays open until ``validate`` downgrades it); ``source_gone`` is
    dropped; ``ack_deferred`` is held; ``manual_stuck`` is a gate (a person
    acts on it); every other status, unknown ones included, is open work.
    """
    status = item.get("status")
    if status == "closed" and evidenced(item):
        return "done", False, False
    if status == "source_gone":
        return "dropped", False, False
    return "open", status == "ack_deferred", status == "manual_stuck"


def _evidence(item: dict[str, Any]) -> str:
    return "\n".join(
        f"{f}: {item.get(f)}" for f in ("fix_ref", "verified_merge_sha", "verified_at")
    )


def _body(header: str, data: object) -> str:
    return f"{header}\n\n{_FENCE}{json.dumps(data, indent=2, ensure_ascii=False)}\n```\n"


def _data(body: str) -> Any:
    start = body.index(_FENCE) + len(_FENCE)
    return json.loads(body[start : body.rindex("\n```")])


def _item_title(key: str, item: dict[str, Any]) -> str:
    title = item.get("title")
    text = title.strip() if isinstance(title, str) and title.strip() else key
    return " ".join(text.split())[:500] or key[:500]


def _item_labels(key: str, item: dict[str, Any]) -> tuple[str, ...]:
    labels = [ITEM_LABEL, key_label(key)]
    status = item.get("status")
    if isinstance(status, str) and status and len(status) <= 80:
        labels.append("sweep-status:" + status)
    return tuple(labels)


def _item_body(key: str, item: dict[str, Any]) -> str:
    status = item.get("status")
    lines = [f"ce-sweep item `{key}`" + (f" ({status})" if isinstance(status, str) else "")]
    url = item.get("url")
    if isinstance(url, str) and url:
        lines.append(url)
    if isinstance(status, str) and status not in STATUSES:
        lines.append(f"(status {status!r} is not one this engine knows; it is kept as it is)")
    return _body("\n".join(lines), {"key": key, "item": item})


def _state_body(doc: dict[str, Any] | None) -> str:
    return _body(
        "The ce-sweep state of this project (`skift sweep --state skift:SLUG`): "
        "the sweep lease, the sources' cursors, the last run. Items are the nodes "
        "labelled sweep-item. Write it only through `skift sweep`.",
        {"state": doc},
    )


def _normalize(state: State) -> Loaded:
    """The state as the file engine would read it back after writing it."""
    return state_from_text(emit_document(state))


def _fingerprint(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


class _Lock:
    def __init__(self, ref: str, lease: str, node: NodeInfo) -> None:
        self.ref = ref
        self.lease = lease
        self.node = node


class ProjectState:
    """The state engine on a skift project, with the file engine's words and payloads."""

    def __init__(
        self,
        sk: Skift,
        slug: str,
        *,
        clock: Clock = utc_now,
        lock_ttl: timedelta = timedelta(seconds=60),
        lock_wait: timedelta = timedelta(minutes=5),
    ) -> None:
        self.sk = sk
        self.slug = slug
        self.clock = clock
        self.lock_ttl = lock_ttl
        self.lock_wait = lock_wait

    # ------------------------------------------------------------ public commands

    async def run(self, cmd: Command, *, lease: str | None = None) -> Outcome:
        """Run a subcommand; a server failure (unreachable, refused) is ERROR naming it.

        ``lease``: the skift lease the caller holds on the item's node (an
        ``upsert-item`` by the worker that claimed that item's work); without
        it, a write to an item whose node someone holds is refused (ERROR).
        """
        import skift

        try:
            if cmd.name not in MUTATING:
                loaded, _ = await self._load(self._keys_for(cmd))
                return apply(cmd, loaded, self.clock)
            state_node = await self._state_node(create=cmd.name in _CREATES)
            if state_node is None:  # absent: nothing of these writes on an absent state
                return apply(cmd, Loaded("absent"), self.clock)
            async with self._locked(state_node) as lock:
                loaded, nodes = await self._load(self._keys_for(cmd), lock.node)
                before = _snapshot(loaded)
                out = apply(cmd, loaded, self.clock)
                if out.write is not None:
                    await self._save(lock, before, out.write, nodes, item_lease=lease)
                return out
        except skift.SkiftError as exc:
            return Outcome("ERROR", error=f"{exc} ({self.slug})")
        except Exception as exc:
            return Outcome("ERROR", error=f"internal error: {exc!r}")

    async def read(self) -> Loaded:
        """The whole state as the file engine would read it."""
        loaded, _ = await self._load(None)
        return loaded

    async def export(self, path: str) -> Outcome:
        """Write the state to ``path`` as the file engine would have written it."""
        loaded = await self.read()
        if loaded.status == "absent":
            return Outcome("NO-STATE")
        if loaded.state is None:
            return Outcome("CORRUPT")
        with write_lock(path):
            write_file(path, stamp_version(loaded.state))
        return Outcome("OK", {"items": len(loaded.state.get("items", {}))})

    async def import_file(self, path: str) -> Outcome:
        """Bring a state file into the project: its document replaces the project's, its items are set."""
        import skift

        loaded = load_file(path)
        if loaded.status == "absent":
            return Outcome("NO-STATE")
        if loaded.state is None:
            return Outcome("CORRUPT")
        incoming = loaded.state
        if not isinstance(incoming.get("items"), dict) or not isinstance(
            incoming.get("sources"), dict
        ):
            return Outcome("CORRUPT", error="items and sources must be maps")
        try:
            state_node = await self._state_node(create=True)
            assert state_node is not None
            async with self._locked(state_node) as lock:
                current, nodes = await self._load(None, lock.node)
                if current.status == "corrupt":
                    return Outcome("CORRUPT", error="the project's sweep state does not parse")
                before = _snapshot(current)
                merged = dict(incoming)
                items = dict(current.state["items"]) if current.state else {}
                items.update(incoming["items"])
                merged["items"] = items
                await self._save(lock, before, stamp_version(merged), nodes)
        except skift.SkiftError as exc:
            return Outcome("ERROR", error=f"{exc} ({self.slug})")
        return Outcome("OK", {"items": len(incoming["items"]), "sources": len(incoming["sources"])})

    async def nodes(self) -> Outcome:
        """Each item's key and its node's reference."""
        found = await self._state_node(create=False)
        if found is None:
            return Outcome("NO-STATE")
        out: dict[str, str] = {}
        for node in await self._item_nodes(None):
            try:
                out[str(_data(node.body)["key"])] = node.ref
            except (ValueError, KeyError, TypeError):
                continue
        return Outcome("OK", dict(sorted(out.items())))

    # ------------------------------------------------------------ loading

    def _keys_for(self, cmd: Command) -> list[str] | None:
        """The items a command reads (None: all of them)."""
        if cmd.name == "upsert-item":
            return [f"{cmd.source}:{cmd.id}"]
        if cmd.name == "cursor-advance":
            return [f"{cmd.source}:{cmd.past_item}"]
        if cmd.name in ("cursor-get", "lease-acquire", "lease-release", "run-record"):
            return []
        return None

    async def _state_node(self, *, create: bool) -> NodeInfo | None:
        import skift

        try:
            await self.sk.get_project(self.slug)
        except skift.NotFound:
            if not create:
                return None
            try:
                await self.sk.create_project(f"sweep {self.slug}", slug=self.slug)
            except skift.Conflict as taken:
                try:  # a concurrent writer created it
                    await self.sk.get_project(self.slug)
                except skift.NotFound:
                    # a project the caller may not read holds the slug: the answer is
                    # project create's own, "taken", as anyone gets it (docs/identity.md:
                    # slugs are the organization's namespace), never a "no project" that
                    # would tell a hidden slug from a taken one
                    raise taken from None
        page = await self.sk.list_nodes(projects=[self.slug], labels=[STATE_LABEL], limit=5)
        found = sorted(page.nodes, key=lambda n: n.number)
        if found:
            return found[0]
        if not create:
            return None
        project = await self.sk.get_project(self.slug)
        await self.sk.patch(
            self.slug,
            [
                skift.CreateNode(
                    alias="state",
                    title="sweep state",
                    kind=STATE_KIND,
                    priority=skift.Priority.P4,  # last in a person's turn order
                    labels=(STATE_LABEL,),
                    assignee_kind=skift.AssigneeKind.USER,
                    body=_state_body(None),
                )
            ],
            # the same request from every writer that races here: one node, replayed
            request_id=f"sweep-state-{project.id}",
        )
        page = await self.sk.list_nodes(projects=[self.slug], labels=[STATE_LABEL], limit=5)
        return sorted(page.nodes, key=lambda n: n.number)[0]

    async def _item_nodes(self, keys: list[str] | None) -> list[NodeInfo]:
        if keys is not None:
            found: list[NodeInfo] = []
            for key in keys:
                page = await self.sk.list_nodes(
                    projects=[self.slug], labels=[key_label(key)], limit=5
                )
                found.extend(sorted(page.nodes, key=lambda n: n.number)[:1])
            return found
        nodes: list[NodeInfo] = []
        page_token: str | None = None
        while True:
            page = await self.sk.list_nodes(
                projects=[self.slug], labels=[ITEM_LABEL], limit=500, page=page_token
            )
            nodes.extend(page.nodes)
            page_token = page.next_page
            if not page_token:
                return nodes

    async def _load(
        self, keys: list[str] | None, state_node: NodeInfo | None = None
    ) -> tuple[Loaded, dict[str, NodeInfo]]:
        if state_node is None:
            state_node = await self._state_node(create=False)
        if state_node is None:
            return Loaded("absent"), {}
        try:
            doc = _data(state_node.body)["state"]
        except (ValueError, KeyError, TypeError):
            return Loaded("corrupt"), {}
        if doc is None:
            return Loaded("absent"), {}
        if not isinstance(doc, dict):
            return Loaded("corrupt"), {}
        state: State = dict(cast(dict[str, Any], doc))
        items: dict[str, Any] = {}
        by_key: dict[str, NodeInfo] = {}
        for node in await self._item_nodes(keys):
            try:
                data = _data(node.body)
                key, item = str(data["key"]), data["item"]
            except (ValueError, KeyError, TypeError):
                return Loaded("corrupt"), {}
            if key in by_key and by_key[key].number < node.number:
                continue
            items[key] = item
            by_key[key] = node
        state["items"] = items
        return _normalize(state), by_key

    # ------------------------------------------------------------ the lock

    def _locked(self, state_node: NodeInfo) -> _Locked:
        return _Locked(self, state_node)

    async def _claim(self, state_node: NodeInfo) -> _Lock:
        import skift

        deadline = time.monotonic() + self.lock_wait.total_seconds()
        pause = 0.02
        while True:
            try:
                claim = await self.sk.claim(
                    state_node.ref, ttl=self.lock_ttl, harness="skift sweep"
                )
                return _Lock(state_node.ref, claim.lease.id, claim.node)
            except skift.Refused:
                why = await self.sk.explain(state_node.ref)
                kinds = {r.kind for r in why.reasons}
                if kinds - {"leased"}:
                    raise
            if time.monotonic() > deadline:
                raise skift.Unavailable(
                    f"another writer has held {state_node.ref} (the sweep's write lock) "
                    f"for over {self.lock_wait}",
                    next="Retry; a crashed writer's lock expires by itself.",
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.5)

    # ------------------------------------------------------------ saving

    async def _save(
        self,
        lock: _Lock,
        before: _Snapshot,
        new: State,
        nodes: dict[str, NodeInfo],
        *,
        item_lease: str | None = None,
    ) -> None:
        import skift

        written = _normalize(new).state
        assert written is not None
        items: dict[str, Any] = written.pop("items", {})
        groups: list[list[Any]] = []  # one item's operations stay in one patch (its alias)
        whole = {**written, "items": items}
        fresh = 0
        for key, item in items.items():
            if not isinstance(item, dict):
                continue
            record = dict(cast(dict[str, Any], item))
            if is_sensitive(whole, record, record.get("source")):
                redact(record)  # never send what the file engine would never write
            if before.items.get(key) == _fingerprint(record) and key in nodes:
                continue
            node = nodes.get(key)
            if node is None:
                fresh += 1
                groups.append(self._create_ops(f"i{fresh}", key, record))
            else:
                groups.append(self._update_ops(node, key, record))
        patches: list[list[Any]] = [[]]
        for group in groups:
            if patches[-1] and len(patches[-1]) + len(group) > _OPS_PER_PATCH:
                patches.append([])
            patches[-1].extend(group)
        if item_lease is not None:
            # the items go under the caller's lease on their node, the document under the lock's
            for ops in (p for p in patches if p):
                await self.sk.patch(self.slug, ops, lease=item_lease)
            patches = [[]]
        if _fingerprint(written) != before.doc:
            # last, with the final items: a failure part way leaves the document as it was
            patches[-1].append(skift.UpdateNode(node=lock.ref, body=_state_body(written)))
        for i, ops in enumerate(p for p in patches if p):
            if i:
                await self.sk.heartbeat(lock.ref, lease=lock.lease, ttl=self.lock_ttl)
            await self.sk.patch(self.slug, ops, lease=lock.lease)

    def _create_ops(self, alias: str, key: str, item: dict[str, Any]) -> list[Any]:
        import skift

        status, held, gate = placement(item)
        ops: list[Any] = [
            skift.CreateNode(
                alias=alias,
                title=_item_title(key, item),
                kind=ITEM_KIND,
                labels=_item_labels(key, item),
                assignee_kind=skift.AssigneeKind.USER if gate else None,
                body=_item_body(key, item),
            )
        ]
        if held:
            ops.append(skift.HoldNode(node=alias, reason="ack_deferred: triage deferred"))
        if status == "done":
            ops.append(skift.CompleteNode(node=alias, result=_evidence(item)))
        elif status == "dropped":
            ops.append(skift.DropNode(node=alias, reason="source_gone"))
        return ops

    def _update_ops(self, node: NodeInfo, key: str, item: dict[str, Any]) -> list[Any]:
        import skift

        status, held, gate = placement(item)
        ref = node.ref
        said = f"sweep item is {item.get('status')}"
        ops: list[Any] = []
        if node.status.value != "open" and node.status.value != status:
            ops.append(skift.ReopenNode(node=ref, reason=said))
        change: dict[str, Any] = {}
        title, body, labels = _item_title(key, item), _item_body(key, item), _item_labels(key, item)
        if title != node.title:
            change["title"] = title
        if body != node.body:
            change["body"] = body
        if tuple(sorted(labels)) != tuple(sorted(node.labels)):
            change["labels"] = labels
        is_gate = node.assignee_kind is not None and node.assignee_kind.value == "user"
        if gate != is_gate:
            change["assignee_kind"] = "user" if gate else ""
        if change:
            ops.append(skift.UpdateNode(node=ref, **change))
        want_held = held and status == "open"
        if node.held and not want_held:
            ops.append(skift.UnholdNode(node=ref, reason=said))
        elif want_held and not node.held:
            ops.append(skift.HoldNode(node=ref, reason="ack_deferred: triage deferred"))
        if status == "done" and node.status.value != "done":
            ops.append(skift.CompleteNode(node=ref, result=_evidence(item)))
        elif status == "dropped" and node.status.value != "dropped":
            ops.append(skift.DropNode(node=ref, reason="source_gone"))
        return ops


class _Snapshot:
    """Fingerprints of the loaded state, to send only what a command changed."""

    def __init__(self, doc: str, items: dict[str, str]) -> None:
        self.doc = doc
        self.items = items


def _snapshot(loaded: Loaded) -> _Snapshot:
    if loaded.state is None:
        return _Snapshot("", {})
    doc = {k: v for k, v in loaded.state.items() if k != "items"}
    items = cast(dict[str, Any], loaded.state.get("items", {}))
    return _Snapshot(_fingerprint(doc), {k: _fingerprint(v) for k, v in items.items()})


class _Locked:
    """``async with``: the state node claimed for one read-modify-write, then released."""

    def __init__(self, owner: ProjectState, state_node: NodeInfo) -> None:
        self.owner = owner
        self.state_node = state_node
        self.lock: _Lock | None = None

    async def __aenter__(self) -> _Lock:
        self.lock = await self.owner._claim(self.state_node)  # pyright: ignore[reportPrivateUsage]
        return self.lock

    async def __aexit__(self, *exc: object) -> None:
        import skift

        lock = self.lock
        if lock is None:
            return
        with contextlib.suppress(skift.SkiftError):  # lapsed or fenced: it expires by itself
            await self.owner.sk.release(lock.ref, lease=lock.lease, reason="budget")
