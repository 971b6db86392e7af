"""``skift ready`` and ``skift show`` without click, asyncio or grpclib: what an agent runs in a loop.

``skift_cli.main`` hands these two commands here first. When the command line
is one this module reads exactly as click would (the command first, then its
own and the global options, ``--opt value`` or ``--opt=value``) and the call
goes over a unix socket or plain HTTP/2, it reads the config as the full
command line does, calls the server through ``skift_server._unary`` (one
blocking HTTP/2 connection), makes the same views with the same converters
and prints them through ``skift_cli._shown``, which the click commands use
too: the same bytes, text or ``--json``. A skift error is rendered by the
full command line's own ``_show_failure`` with its exit code.

Anything else returns None before printing, and ``main`` runs the full
command line: an option it does not know, a usage error (click words it),
``--help``, TLS, a server it cannot reach or one that answered "unavailable"
(the full client waits for a starting server and retries a read), a config
file that does not parse. Both commands only read, so running one again in
full after a failed attempt changes nothing. tests/cli/test_cli_fast.py runs
both paths on the same command lines against a real server and compares them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a few ms)
if TYPE_CHECKING:
    from typing import Any, TypeVar

    import skift
    from skift_server._unary import Connection

    M = TypeVar("M")

PRIORITIES = ("p0", "p1", "p2", "p3", "p4")
ASSIGNEE_KINDS = ("user", "agent")


class Unread(Exception):
    """A command line the fast path leaves to click."""


# Each option: its names, whether it takes a value, and whether it repeats.
_GLOBAL = {"-p": "project", "--project": "project", "--server": "server", "--json": "json"}
READY_OPTIONS = {
    "--kind": "kind",
    "--label": "label",
    "--any-label": "any_label",
    "--assignee-kind": "assignee_kind",
    "--min-priority": "min_priority",
    "--parent": "parent",
    "--limit": "limit",
    "--page": "page",
}
_FLAGS = {"json"}
_REPEATED = {"project", "kind", "label", "any_label"}


def parse(args: Sequence[str], options: dict[str, str], positionals: int) -> dict[str, Any]:
    """Options and positional arguments as click reads them, or Unread."""
    names = {**_GLOBAL, **options}
    got: dict[str, Any] = {k: [] for k in _REPEATED}
    positional: list[str] = []
    got["args"] = positional
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg.startswith("-") and arg != "-":
            name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
            key = names.get(name)
            if key is None:  # --help, --, -pX, an unknown or a misspelt option: click's
                raise Unread
            if key in _FLAGS:
                if eq:
                    raise Unread
                got[key] = True
                continue
            if not eq:
                if i >= len(args):
                    raise Unread
                value = args[i]
                i += 1
            if key in _REPEATED:
                got[key].append(value)
            else:
                got[key] = value
        else:
            positional.append(arg)
    if len(positional) != positionals:
        raise Unread
    return got


class Run:
    """The resolved defaults, as ``skift_cli._base.App`` resolves them."""

    def __init__(self, got: dict[str, Any]) -> None:
        from . import _config

        self.flags: list[str] = got["project"]
        try:
            self.cfg = _config.load()
        except _config.ConfigError:
            raise Unread from None
        self.json = bool(got.get("json")) or self.cfg.get("output") == "json"
        self.server = got.get("server") or os.environ.get("SKIFT_SERVER") or self.cfg.get("server")

    def projects(self) -> list[str]:
        if "*" in self.flags:
            return []
        if self.flags:
            return list(dict.fromkeys(self.flags))
        env = os.environ.get("SKIFT_PROJECT", "").strip()
        if env:
            return [env]
        if self.cfg.get("project"):
            return [self.cfg["project"]]
        return []

    def project(self) -> str | None:
        ps = self.projects()
        if len(ps) > 1:
            raise Unread  # click's usage error
        return ps[0] if ps else None

    def project_source(self) -> str | None:
        from . import _config

        if self.flags:
            return None
        if os.environ.get("SKIFT_PROJECT", "").strip():
            return "SKIFT_PROJECT"
        if self.cfg.get("project"):
            return f"the config file {_config.config_path()} (project = {self.cfg['project']!r})"
        return None

    def url(self) -> str:
        if self.server:
            return self.server
        from skift_server._paths import find_socket

        return f"unix://{find_socket()[0]}"


def emit(value: Any) -> None:
    import json

    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def _ready(conn: _Replay, run: Run, got: dict[str, Any]) -> Callable[[], None]:
    import skift
    from skift_server._convert import page_size
    from skift_server._convert_types import from_pb, to_pb
    from skift_server._proto.skift import v1

    if got.get("assignee_kind") not in (None, *ASSIGNEE_KINDS):
        raise Unread
    if got.get("min_priority") not in (None, *PRIORITIES):
        raise Unread
    limit = None
    if got.get("limit") is not None:
        try:
            limit = int(got["limit"])
        except ValueError:
            raise Unread from None
    flt = skift.filter_from(
        projects=run.projects(),
        kinds=got["kind"],
        labels=got["label"],
        any_labels=got["any_label"],
        assignee_kind=got.get("assignee_kind"),
        min_priority=got.get("min_priority"),
        parent=got.get("parent"),
    )
    req = v1.ReadyRequest(
        filter=to_pb(v1.NodeFilter, flt),
        page_size=page_size(limit),
        page_token=got.get("page") or "",
    )
    got_pb = _read(conn, "Ready", bytes(req), v1.ReadyResponse)
    pg = from_pb(v1.ReadyResponse, skift.ReadyPage, got_pb)

    def show() -> None:
        from . import _shown

        _shown.ready(pg, as_json=run.json, emit=emit)

    return show


def _show(conn: _Replay, run: Run, got: dict[str, Any]) -> Callable[[], None]:
    import skift
    from skift_server._convert_types import from_pb
    from skift_server._proto.skift import v1

    ref: str = got["args"][0]
    proj = run.project()
    req = v1.GetNodeRequest(ref=ref, project=proj)
    n = from_pb(
        v1.Node, skift.NodeInfo, _read(conn, "GetNode", bytes(req), v1.GetNodeResponse).node
    )
    arts: list[skift.ArtifactInfo] = []
    token = ""
    while True:
        areq = v1.ListArtifactsRequest(ref=n.ref, page_token=token)
        apage = _read(conn, "ListArtifacts", bytes(areq), v1.ListArtifactsResponse)
        arts += [from_pb(v1.ArtifactInfo, skift.ArtifactInfo, a) for a in apage.artifacts]
        if not (token := apage.next_page_token):
            break
    cs: list[skift.CommentInfo] = []
    while True:
        creq = v1.ListCommentsRequest(ref=n.ref, page_token=token)
        cpage = _read(conn, "ListComments", bytes(creq), v1.ListCommentsResponse)
        cs += [from_pb(v1.Comment, skift.CommentInfo, x) for x in cpage.comments]
        if not (token := cpage.next_page_token):
            break
    blockers: list[str] = []
    if n.blocked and n.status == "open":
        ereq = v1.ExplainRequest(ref=n.ref)
        ex = from_pb(
            v1.ExplainResponse,
            skift.Explanation,
            _read(conn, "Explain", bytes(ereq), v1.ExplainResponse),
        )
        blockers = [str(r.detail.get("ref")) for r in ex.reasons if r.kind == "blocked_by"]

    def show() -> None:
        from . import _shown

        _shown.show(n, arts, blockers, cs, as_json=run.json, emit=emit)

    return show


COMMANDS: dict[str, tuple[dict[str, str], int, Any]] = {
    "ready": (READY_OPTIONS, 0, _ready),
    "show": ({}, 1, _show),
}


class _Replay:
    """A connection that answers first from what ``_thin`` was already answered."""

    def __init__(self, conn: Connection, answers: dict[tuple[str, bytes], bytes]) -> None:
        self.conn = conn
        self.answers = answers

    def call(self, method: str, request: bytes) -> bytes:
        got = self.answers.pop((method, request), None)
        return got if got is not None else self.conn.call(method, request)


def _read(conn: _Replay, method: str, request: bytes, reply: type[M]) -> M:
    """The answer to ``method`` as ``reply``, read exactly as it is encoded: an answer the
    fast decoder does not take (an unreadable one: betterproto2's parser read three bytes of
    0xff as an empty page) raises, and the full client, which reads strictly and says what
    is wrong, runs the command instead."""
    from skift_server._wirecodec import read_exactly

    return read_exactly(reply, conn.call(method, request))


def run(args: Sequence[str], answers: dict[tuple[str, bytes], bytes] | None = None) -> int | None:
    """Run ``skift ARGS`` when it is a command line this module reads; its exit code, else None.

    ``answers``: what the server already answered ``_thin`` (method and request -> answer),
    read again rather than asked again."""
    spec = COMMANDS.get(args[0]) if args else None
    if spec is None:
        return None
    options, positionals, call = spec
    ctx: Run | None = None
    try:
        got = parse(args[1:], options, positionals)
        ctx = Run(got)
        from skift_server import _unary

        timeout = _unary.env_timeout(30.0)
        if timeout is None:
            return None
        with _unary.Connection(
            ctx.url(), token=os.environ.get("SKIFT_TOKEN") or None, timeout=timeout
        ) as conn:
            show = call(_Replay(conn, answers or {}), ctx, got)
    except Unread:
        return None
    except Exception as exc:
        return _failed(exc, ctx)
    try:
        show()
    except BrokenPipeError:
        return 0
    return 0


def _failed(exc: Exception, run: Run | None) -> int | None:
    """A skift error as the full command line shows it; None (run it in full) otherwise."""
    import skift
    from skift_server import _unary

    if isinstance(exc, _unary.CallFailed):
        from grpclib.const import Status
        from grpclib.exceptions import GRPCError

        from skift_server._errors import ErrorDetailsCodec, from_grpc

        status = Status(exc.status)
        details = (
            ErrorDetailsCodec().decode(status, exc.message, exc.details) if exc.details else None
        )
        err = from_grpc(GRPCError(status, exc.message or None, details))
    elif isinstance(exc, skift.SkiftError):
        err = exc
    else:
        return None  # the transport: the full client retries, waits or words it
    if isinstance(err, skift.Unavailable) or run is None:
        return None
    from ._app import _show_failure  # pyright: ignore[reportPrivateUsage]
    from ._base import Failure

    extra: dict[str, Any] = {}
    source = run.project_source()
    if source and err.code == "not_found" and "project" in err.message:
        extra["default_project_from"] = source
    failure = Failure(err, server=run.url(), **extra)
    _show_failure(failure, run.json)
    return failure.exit_code
