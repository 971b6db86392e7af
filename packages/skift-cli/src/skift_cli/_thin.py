"""``skift ready`` and ``skift show`` on the standard library alone: the commands agents loop on.

``skift_cli.main`` tries this first. It reads the command line as ``_fast`` does (the
same parser), calls the server through ``_wire`` (no ``skift_server``, betterproto2,
attrs, hpack or skift-core), reads the answers' protobuf into plain objects with the
attributes of skift's views, and prints them: ``--json`` as ``skift.to_json`` writes
the views, text through ``_plain`` (the same cells ``_facts`` gives rich).

Where it would have to judge more, it prints nothing and hands over the answers it
holds: ``_fast`` then reads the same bytes with the generated messages and skift's
views and prints through ``_shown`` (rich where a cell wraps, a leased node, an
artifact, an explanation's detail other than a text reference, any answer this
reader does not take), and calls the server itself only for what was not asked yet.
Everything ``_fast`` leaves to click (an unknown flag, TLS, an error, a server that
is starting) goes there too, so every command line prints what it printed before:
tests/cli/test_cli_fast.py runs both on the same command lines and compares them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from . import _fast, _wire
from ._wire import NotTaken, read, signed, string_field, text

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a few ms)
if TYPE_CHECKING:
    from typing import Any


Answers = dict[tuple[str, bytes], bytes]
"""What the server answered, by method and request: ``_fast`` reads them again."""
if TYPE_CHECKING:
    Command = Callable[[_wire.Connection, _fast.Run, dict[str, Any], Answers], Callable[[], Any]]

NODE_FIELDS = [
    "ref",
    "id",
    "number",
    "project",
    "title",
    "body",
    "kind",
    "status",
    "priority",
    "parent",
    "labels",
    "assignee_kind",
    "assignee",
    "context_id",
    "created_at",
    "blocked",
    "held",
    "claimed",
    "ready",
    "result",
    "human_written",
    "body_author",
    "body_author_kind",
    "result_author",
    "result_author_kind",
    "lease",
]
"""``skift.NodeInfo``'s fields in its order (tests/cli/test_cli_wire.py holds it to it)."""

_STATUS = {0: "open", 1: "open", 2: "done", 3: "dropped"}  # unspecified: open
_PRIORITY = {0: "p2", 1: "p0", 2: "p1", 3: "p2", 4: "p3", 5: "p4"}  # unspecified: p2
_ASSIGNEE = {0: None, 1: "agent", 2: "user"}
_PRINCIPAL = {0: None, 1: "user", 2: "agent", 3: "service"}
_WORDS = {"agent": 1, "user": 2, "p0": 1, "p1": 2, "p2": 3, "p3": 4, "p4": 5}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Node:
    """A node as ``skift.NodeInfo`` holds it (words for its enums), read from ``v1.Node``."""

    __slots__ = tuple(NODE_FIELDS)
    ref: str
    id: str
    number: int
    project: str
    title: str
    body: str
    kind: str
    status: str
    priority: str
    parent: str | None
    labels: tuple[str, ...]
    assignee_kind: str | None
    assignee: str | None
    context_id: str
    created_at: datetime
    blocked: bool
    held: bool
    claimed: bool
    ready: bool
    result: str | None
    human_written: bool
    body_author: str | None
    body_author_kind: str | None
    result_author: str | None
    result_author_kind: str | None
    lease: None

    def __init__(self, raw: bytes) -> None:
        f = read(raw, (11,))
        if 26 in f:
            raise NotTaken("a leased node")  # its lease: _fast
        ints = {k: v for k, v in f.items() if isinstance(v, int)}
        for num in (3, 8, 9, 12, 16, 17, 18, 19, 21, 23, 25):
            if num in f and num not in ints:
                raise NotTaken("a scalar field of another wire type")
        s = self
        s.ref, s.id = text(f.get(1, b"")), text(f.get(2, b""))
        s.number = signed(ints.get(3, 0))
        s.project, s.title = text(f.get(4, b"")), text(f.get(5, b""))
        s.body, s.kind = text(f.get(6, b"")), text(f.get(7, b""))
        s.status, s.priority = _STATUS[ints.get(8, 0)], _PRIORITY[ints.get(9, 0)]
        s.parent = text(f[10]) if 10 in f else None
        s.labels = tuple(text(x) for x in f.get(11, ()))
        s.assignee_kind = _ASSIGNEE[ints.get(12, 0)]
        s.assignee = text(f[13]) if 13 in f else None
        s.context_id = text(f.get(14, b""))
        s.created_at = timestamp(f.get(15))
        s.blocked, s.held = bool(ints.get(16)), bool(ints.get(17))
        s.claimed, s.ready = bool(ints.get(18)), bool(ints.get(19))
        s.result = text(f[20]) if 20 in f else None
        s.human_written = bool(ints.get(21))
        s.body_author = text(f[22]) if 22 in f else None
        s.body_author_kind = _PRINCIPAL[ints.get(23, 0)]
        s.result_author = text(f[24]) if 24 in f else None
        s.result_author_kind = _PRINCIPAL[ints.get(25, 0)]
        s.lease = None

    def json(self) -> dict[str, Any]:
        """``skift.to_json`` of the view."""
        out = {name: getattr(self, name) for name in NODE_FIELDS}
        out["labels"] = list(self.labels)
        out["created_at"] = self.created_at.isoformat()
        return out


def timestamp(raw: Any) -> datetime:
    """A ``google.protobuf.Timestamp`` as the views hold it (the epoch when unset)."""
    if raw is None:
        return _EPOCH
    f = read(raw)
    seconds, nanos = f.get(1, 0), f.get(2, 0)
    if not isinstance(seconds, int) or not isinstance(nanos, int):
        raise NotTaken("a timestamp of another wire type")
    return _EPOCH + timedelta(seconds=signed(seconds), microseconds=signed(nanos) // 1000)


class Page:
    """``skift.ReadyPage`` read from ``v1.ReadyResponse``."""

    def __init__(self, raw: bytes) -> None:
        f = read(raw, (1,))
        held, exact = f.get(2, 0), f.get(3, 0)
        if not isinstance(held, int) or not isinstance(exact, int):
            raise NotTaken("a scalar field of another wire type")
        self.nodes = [Node(x) for x in f.get(1, ())]
        self.held_count = signed(held)
        self.held_count_exact = bool(exact)
        self.next_page = text(f.get(4, b"")) or None

    def json(self) -> dict[str, Any]:
        return {
            "nodes": [n.json() for n in self.nodes],
            "held_count": self.held_count,
            "next_page": self.next_page,
            "held_count_exact": self.held_count_exact,
        }


class Comment:
    """What ``skift show`` reads of a comment: whether it was resolved."""

    __slots__ = ("resolved_at",)

    def __init__(self, raw: bytes) -> None:
        f = read(raw)
        self.resolved_at = timestamp(f[10]) if 10 in f else None


def ready_request(run: _fast.Run, got: dict[str, Any]) -> bytes:
    """``v1.ReadyRequest`` as ``_fast`` makes it (through ``skift.filter_from``)."""
    flt = b"".join(string_field(1, p) for p in run.projects())
    flt += b"".join(string_field(2, k) for k in got["kind"])
    flt += b"".join(string_field(3, x) for x in got["label"])
    flt += b"".join(string_field(4, x) for x in got["any_label"])
    if got.get("assignee_kind"):
        flt += b"\x28" + bytes((_WORDS[got["assignee_kind"]],))
    if got.get("min_priority"):
        flt += b"\x30" + bytes((_WORDS[got["min_priority"]],))
    if got.get("parent") is not None:
        flt += string_field(7, got["parent"])
    out = b"\x0a" + _wire.encode_int_varint(len(flt)) + flt
    limit = got.get("limit")
    if limit is not None:
        size = int(limit) if int(limit) != 0 else -1  # _convert.page_size
        if size:
            out += b"\x10" + _wire.encode_int_varint(size)
    if got.get("page"):
        out += string_field(3, got["page"])
    return out


def _ready(conn: _wire.Connection, run: _fast.Run, got: dict[str, Any], answers: Answers) -> Any:
    if got.get("assignee_kind") not in (None, *_fast.ASSIGNEE_KINDS):
        raise _fast.Unread
    if got.get("min_priority") not in (None, *_fast.PRIORITIES):
        raise _fast.Unread
    if got.get("limit") is not None:
        try:
            int(got["limit"])
        except ValueError:
            raise _fast.Unread from None
    req = ready_request(run, got)
    raw = answers[("Ready", req)] = conn.call("Ready", req)
    page = Page(raw)
    if run.json:
        return lambda: _fast.emit(page.json()) or True
    from . import _plain

    cols = _plain.width()
    if cols is None or cols < 80:  # _shown._NARROW
        raise NotTaken("rich draws it")
    # ready_table reads a ReadyPage's and its NodeInfos' attributes: Page and Node have them
    return lambda: _plain.ready_table(page, cols)  # pyright: ignore[reportArgumentType]


def _pages(
    conn: _wire.Connection, answers: Answers, method: str, ref: str, item: Callable[[bytes], Any]
) -> list[Any]:
    """Every item of a ListArtifacts or ListComments (``ref``, then each page token)."""
    out: list[Any] = []
    token = ""
    while True:
        req = string_field(1, ref) + (string_field(4, token) if token else b"")
        raw = answers[(method, req)] = conn.call(method, req)
        f = read(raw, (1,))
        out += [item(x) for x in f.get(1, ())]
        if not (token := text(f.get(2, b""))):
            return out


def _no_artifact(raw: bytes) -> None:
    raise NotTaken("an artifact")  # its parts: _fast


def _blockers(raw: bytes) -> list[str]:
    """``skift show``'s "blocked by": the reasons ``blocked_by`` and their detail's ref."""
    out: list[str] = []
    for reason in read(raw, (4,)).get(4, ()):
        r = read(reason)
        if text(r.get(1, b"")) != "blocked_by":
            continue
        ref = None
        for entry in read(r.get(2, b""), (1,)).get(1, ()):
            e = read(entry)
            if text(e.get(1, b"")) == "ref":
                value = read(e.get(2, b""))
                if set(value) != {3}:
                    raise NotTaken("a reference that is not text")
                ref = text(value[3])
        if ref is None:
            raise NotTaken("a blocker without its reference")
        out.append(ref)
    return out


def _show(conn: _wire.Connection, run: _fast.Run, got: dict[str, Any], answers: Answers) -> Any:
    proj = run.project()
    req = string_field(1, got["args"][0]) + (string_field(2, proj) if proj is not None else b"")
    raw = answers[("GetNode", req)] = conn.call("GetNode", req)
    f = read(raw)
    if 1 not in f:
        raise NotTaken("an answer without its node")
    n = Node(f[1])
    _pages(conn, answers, "ListArtifacts", n.ref, _no_artifact)
    cs: list[Comment] = _pages(conn, answers, "ListComments", n.ref, Comment)
    blockers: list[str] = []
    if n.blocked and n.status == "open":
        req = string_field(1, n.ref)
        raw = answers[("Explain", req)] = conn.call("Explain", req)
        blockers = _blockers(raw)
    if run.json:
        unresolved = sum(1 for c in cs if c.resolved_at is None)
        doc = {
            **n.json(),
            "lease": None,
            "blocked_by": blockers,
            "artifacts": [],
            "comments": {"count": len(cs), "unresolved": unresolved},
        }
        return lambda: _fast.emit(doc) or True
    from . import _plain

    cols = _plain.width()
    if cols is None:
        raise NotTaken("rich draws it")
    # node_panel reads a NodeInfo's attributes: Node has them all
    return lambda: _plain.node_panel(n, [], blockers, cs, cols)  # pyright: ignore[reportArgumentType]


COMMANDS: dict[str, tuple[dict[str, str], int, Command]] = {
    "ready": (_fast.READY_OPTIONS, 0, _ready),
    "show": ({}, 1, _show),
}


def run(args: Sequence[str], answers: Answers) -> int | None:
    """Run ``skift ARGS`` when this module takes it all; its exit code, else None (with what
    the server answered so far in ``answers``)."""
    spec = COMMANDS.get(args[0]) if args else None
    if spec is None:
        return None
    options, positionals, call = spec
    try:
        got = _fast.parse(args[1:], options, positionals)
        ctx = _fast.Run(got)
        timeout = _wire.env_timeout(30.0)
        if timeout is None:
            return None
        url = ctx.server or f"unix://{_wire.default_socket()}"
        token = os.environ.get("SKIFT_TOKEN") or None
        with _wire.Connection(url, token=token, timeout=timeout) as conn:
            show = call(conn, ctx, got, answers)
    except Exception:  # _fast.Unread, NotTaken, or an answer this reader does not take
        return None
    try:
        # False: _plain printed nothing (rich draws it); _fast reads the answers again
        return 0 if show() else None
    except BrokenPipeError:
        return 0
