"""The remote Skift: the same API as :class:`skift.LocalSkift`, over gRPC.

``connect(url)`` returns a :class:`RemoteSkift` whose methods take the same
arguments and return the same views (``skift.NodeInfo``, ``skift.Claim``...)
as the local API, and raise the same :class:`skift.SkiftError` classes with
the same message, ``next`` and details.

Transport: a small pool of HTTP/2 channels (one connection each, opened on
first use), a deadline on every call, and retries only where a retry cannot
do a thing twice: reads, heartbeats, and writes that carry a request id (the
client makes the id before the first attempt, so every attempt is the same
request and the server applies it once). Any call is retried when the
connection could not even be opened. A retry waits with jittered backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import os
import random
import ssl
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar
from urllib.parse import unquote, urlsplit

import attrs
import betterproto2
from grpclib.client import Channel
from grpclib.exceptions import GRPCError, StreamTerminatedError
from h2.exceptions import ProtocolError as H2ProtocolError

import skift

from . import _convert_graph as g
from . import _convert_ops as o
from . import _convert_records as rc
from . import _webhooks_wire as wh
from ._auth import ACT_AS, CLOCK_OFFSET, ORG
from ._convert import enum_pb
from ._errors import ErrorDetailsCodec, from_grpc
from ._paths import check_socket_owner, find_socket, starting_pid
from ._proto.skift import v1

T = TypeVar("T", bound=betterproto2.Message)

DEFAULT_TIMEOUT = 30.0
START_WAIT = 60.0  # how long a client waits for a server that announced it is starting
"""Seconds a call may take (ClaimNext adds its wait)."""

_NOT_SENT = (ConnectionRefusedError, FileNotFoundError, ConnectionResetError)


class _UnixChannel(Channel):
    """A channel over a unix socket that first checks who owns the socket (see ``_paths``)."""

    def __init__(self, path: str, codec: ErrorDetailsCodec) -> None:
        super().__init__(path=path, status_details_codec=codec)  # pyright: ignore[reportUnknownMemberType]
        self._socket_path = path

    async def _create_connection(self) -> Any:
        check_socket_owner(self._socket_path)
        return await super()._create_connection()


@attrs.define
class _Shared:
    """What every handle made from one ``connect`` shares: channels and the test clock."""

    make: Callable[[], Channel]  # a channel; made on first use, inside the caller's event loop
    size: int
    metadata: dict[str, str]
    socket: Path | None = None  # a unix socket's path: for waiting on a starting server and errors
    looked_at: list[Path] = attrs.field(factory=lambda: list[Path]())  # default paths tried
    on_wait: Callable[[str], None] | None = None
    waited: bool = False
    clock_offset: timedelta | None = None
    closed: bool = False
    channels: list[Channel] = attrs.field(factory=lambda: list[Channel]())
    rr: itertools.count[int] = attrs.field(factory=itertools.count)

    def channel(self) -> Channel:
        if not self.channels:
            # grpclib binds a channel to the loop it is made in: making them here, on the
            # first call, lets connect() run outside the loop that uses it (module level)
            self.channels = [self.make() for _ in range(self.size)]
        return self.channels[next(self.rr) % len(self.channels)]

    async def wait_for_start(self) -> bool:
        """Wait (once, up to START_WAIT) for a server that announced it is starting on the socket."""
        if self.socket is None or self.waited:
            return False
        pid = starting_pid(self.socket)
        if pid is None:
            return False
        self.waited = True
        if self.on_wait is not None:
            self.on_wait(f"waiting for the skift server (pid {pid}) to start on {self.socket}…")
        deadline = time.monotonic() + START_WAIT
        while time.monotonic() < deadline and not self.socket.exists():
            if starting_pid(self.socket) is None:
                break  # it stopped starting: served (the socket appears) or gave up
            await asyncio.sleep(0.1)
        return True

    def unreachable(self, exc: OSError) -> skift.Unavailable:
        """The error for a connection never made, naming the socket (and the others looked at)."""
        if self.socket is None:
            return skift.Unavailable(
                f"cannot reach the skift server: {exc}",
                next="Check that `skift serve` is running and the address is right.",
            )
        why = "no server is listening" if isinstance(exc, ConnectionRefusedError) else "no socket"
        others = [str(p) for p in self.looked_at if p != self.socket]
        also = f" (also looked at {', '.join(others)})" if others else ""
        return skift.Unavailable(
            f"cannot reach the skift server at {self.socket}: {why}{also}",
            next="Start it with 'skift serve' (or 'make run'), or point SKIFT_SERVER or "
            "--server at a running one (unix:///path/skift.sock, https://host:port).",
            socket=str(self.socket),
        )


class RemoteStore:
    """The store-side test hook a remote handle offers: the clock (``--test-hooks`` only)."""

    def __init__(self, shared: _Shared) -> None:
        self._shared = shared

    def set_clock_offset(self, offset: timedelta) -> None:
        """Move the server store's clock by ``offset`` from now on (tests only)."""
        self._shared.clock_offset = offset


def _artifact(value: skift.Artifact | Mapping[str, Any]) -> skift.Artifact:
    """An Artifact, from itself or its JSON form (checked as the patch format checks it)."""
    if isinstance(value, skift.Artifact):
        return value
    op = skift.parse_op({"op": "attach_artifact", "node": "-", "artifact": dict(value)})
    assert isinstance(op, skift.AttachArtifact)
    return op.artifact


def _pick_ops(ops: Sequence[skift.Op | dict[str, Any]]) -> list[skift.Op]:
    return [skift.parse_op(op, i) if isinstance(op, dict) else op for i, op in enumerate(ops)]


@skift.check_inputs
class RemoteSkift:
    """skift over gRPC. Use :func:`connect` to make one."""

    def __init__(
        self,
        shared: _Shared,
        *,
        principal: skift.PrincipalSpec | None = None,
        org: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        attempts: int = 5,
    ) -> None:
        self._shared = shared
        self.principal = principal
        self.org = org
        self.timeout = timeout
        self.attempts = attempts
        self.store = RemoteStore(shared)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the channels (shared by every handle made from this connection)."""
        if not self._shared.closed:
            self._shared.closed = True
            for ch in self._shared.channels:
                ch.close()

    def acting_as(self, principal: skift.PrincipalSpec, *, org: str | None = None) -> RemoteSkift:
        """A handle acting as another principal: only on a server run with ``--test-hooks``."""
        return RemoteSkift(
            self._shared,
            principal=principal,
            org=org or self.org,
            timeout=self.timeout,
            attempts=self.attempts,
        )

    # ------------------------------------------------------------ transport

    def _metadata(self) -> dict[str, str]:
        md = dict(self._shared.metadata)
        if self.principal is not None:
            md[ACT_AS] = f"{self.principal.kind.value}:{self.principal.name}"
        if self.org is not None:
            md[ORG] = self.org
        if self._shared.clock_offset is not None:
            md[CLOCK_OFFSET] = repr(self._shared.clock_offset.total_seconds())
        return md

    async def _call(
        self,
        method: str,
        request: betterproto2.Message,
        reply: type[T],
        *,
        safe: bool,
        timeout: float | None = None,
    ) -> T:
        """One unary call with a deadline, retried when that cannot do anything twice."""
        if self._shared.closed:
            raise skift.Unavailable(
                "this skift connection is closed", next="Connect again with skift_server.connect."
            )
        route = f"/skift.v1.SkiftService/{method}"
        last: skift.SkiftError | None = None
        for attempt in range(self.attempts):
            channel = self._shared.channel()
            stub = v1.SkiftServiceStub(channel, metadata=self._metadata())
            try:
                return await stub._unary_unary(  # pyright: ignore[reportPrivateUsage]
                    route, request, reply, timeout=timeout or self.timeout
                )
            except GRPCError as exc:
                err = from_grpc(exc)
                if not (safe and isinstance(err, skift.Unavailable)):
                    raise err from None
                last = err
            except _NOT_SENT as exc:
                # The connection was never made: nothing was sent, any call may be retried.
                last = self._shared.unreachable(exc)
                if attempt < self.attempts - 1 and await self._shared.wait_for_start():
                    continue
            except (TimeoutError, StreamTerminatedError, H2ProtocolError, OSError) as exc:
                last = skift.Unavailable(
                    f"the connection to the skift server failed: {exc or type(exc).__name__}",
                    next="Retry; a write with a request id is safe to send again.",
                )
                if not safe:
                    raise last from None
            if attempt < self.attempts - 1:
                await asyncio.sleep(random.uniform(0.5, 1.5) * min(0.05 * 2**attempt, 1.0))
        assert last is not None
        raise last

    # ------------------------------------------------------------ projects

    async def create_project(
        self,
        title: str,
        *,
        slug: str | None = None,
        priority: skift.Priority | str = skift.Priority.P2,
        vcs_url: str = "",
    ) -> skift.ProjectInfo:
        req = v1.CreateProjectRequest(
            title=title, slug=slug, priority=enum_pb(v1.Priority, priority), vcs_url=vcs_url
        )
        got = await self._call("CreateProject", req, v1.CreateProjectResponse, safe=False)
        return g.project_view(got.project)

    async def get_project(self, ref: str) -> skift.ProjectInfo:
        req = v1.GetProjectRequest(ref=ref)
        got = await self._call("GetProject", req, v1.GetProjectResponse, safe=True)
        return g.project_view(got.project)

    async def list_projects(
        self, *, archived: bool = False, limit: int | None = None, offset: int = 0
    ) -> list[skift.ProjectInfo]:
        out: list[skift.ProjectInfo] = []
        token = ""
        if offset:
            token = _skip_token("ListProjects", offset, limit)
        while True:
            req = v1.ListProjectsRequest(
                show_archived=archived, page_size=_page_size(limit), page_token=token
            )
            got = await self._call("ListProjects", req, v1.ListProjectsResponse, safe=True)
            out += [g.project_view(p) for p in got.projects]
            token = got.next_page_token
            # one page, as the local API answers; more only where bytes cut it short
            if not token or limit is None or len(out) >= limit:
                return out

    async def update_project(
        self,
        ref: str,
        *,
        title: str | None = None,
        slug: str | None = None,
        priority: skift.Priority | str | None = None,
        vcs_url: str | None = None,
        budget: Decimal | int | str | None = None,
    ) -> skift.ProjectInfo:
        req = v1.UpdateProjectRequest(
            ref=ref,
            title=title,
            slug=slug,
            priority=enum_pb(v1.Priority, priority),
            vcs_url=vcs_url,
            budget=str(budget) if budget is not None else None,
        )
        got = await self._call("UpdateProject", req, v1.UpdateProjectResponse, safe=False)
        return g.project_view(got.project)

    async def rename_project(
        self, ref: str, title: str, *, slug: str | None = None
    ) -> skift.ProjectInfo:
        return await self.update_project(ref, title=title, slug=slug)

    async def archive_project(self, ref: str, *, reason: str = "archived") -> skift.ProjectInfo:
        req = v1.ArchiveProjectRequest(ref=ref, reason=reason)
        got = await self._call("ArchiveProject", req, v1.ArchiveProjectResponse, safe=False)
        return g.project_view(got.project)

    async def hold_project(self, ref: str, *, reason: str) -> int:
        req = v1.HoldProjectRequest(ref=ref, reason=reason)
        got = await self._call("HoldProject", req, v1.HoldProjectResponse, safe=False)
        return got.parked

    async def unhold_project(self, ref: str, *, reason: str) -> int:
        req = v1.UnholdProjectRequest(ref=ref, reason=reason)
        got = await self._call("UnholdProject", req, v1.UnholdProjectResponse, safe=False)
        return got.released

    # ------------------------------------------------------------ graph

    async def patch(
        self,
        project: str,
        ops: Sequence[skift.Op | dict[str, Any]],
        *,
        request_id: str | None = None,
        lease: str | None = None,
        on_behalf_of: str | None = None,
    ) -> skift.PatchResult:
        parsed = _pick_ops(ops)
        req = v1.PatchRequest(
            project=project,
            ops=[o.op_pb(op) for op in parsed],
            request_id=_request_id(request_id),
            lease=lease,
            on_behalf_of=on_behalf_of,
        )
        got = await self._call("Patch", req, v1.PatchResponse, safe=True)
        return g.patch_result_view(got.result)

    async def create(self, project: str, title: str, **fields: Any) -> skift.NodeInfo:
        """Create one node (a one-operation patch) and return it."""
        res = await self.patch(project, [skift.CreateNode(title=title, **fields)])
        return res.nodes[0]

    async def get(self, ref: str, *, project: str | None = None) -> skift.NodeInfo:
        req = v1.GetNodeRequest(ref=ref, project=project)
        got = await self._call("GetNode", req, v1.GetNodeResponse, safe=True)
        return g.node_view(got.node or v1.Node())

    async def resolve(self, ref: str, *, project: str | None = None) -> skift.Resolved:
        req = v1.ResolveNodeRequest(ref=ref, project=project)
        got = await self._call("ResolveNode", req, v1.ResolveNodeResponse, safe=True)
        return skift.Resolved(ref=got.ref, id=got.id, title=got.title)

    async def ready(
        self, *, limit: int | None = None, page: str | None = None, **filters: Any
    ) -> skift.ReadyPage:
        req = v1.ReadyRequest(
            filter=_filter(filters), page_size=_page_size(limit), page_token=page or ""
        )
        got = await self._call("Ready", req, v1.ReadyResponse, safe=True)
        return g.page_view(got.nodes, got.held_count, got.held_count_exact, got.next_page_token)

    async def list_nodes(
        self,
        *,
        limit: int | None = None,
        page: str | None = None,
        attributed: bool = False,
        **filters: Any,
    ) -> skift.ReadyPage:
        req = v1.ListNodesRequest(
            filter=_filter(filters),
            page_size=_page_size(limit),
            page_token=page or "",
            attributed=attributed,
        )
        got = await self._call("ListNodes", req, v1.ListNodesResponse, safe=True)
        return g.page_view(got.nodes, got.held_count, got.held_count_exact, got.next_page_token)

    async def explain(self, ref: str, *, project: str | None = None) -> skift.Explanation:
        req = v1.ExplainRequest(ref=ref, project=project)
        return g.explanation_view(await self._call("Explain", req, v1.ExplainResponse, safe=True))

    async def drop(
        self,
        ref: str,
        *,
        reason: str,
        cascade: int | None = None,
        project: str | None = None,
        lease: str | None = None,
        request_id: str | None = None,
    ) -> skift.PatchResult:
        req = v1.DropNodeRequest(
            ref=ref,
            reason=reason,
            cascade=cascade,
            project=project,
            lease=lease,
            request_id=_request_id(request_id),
        )
        got = await self._call("DropNode", req, v1.DropNodeResponse, safe=True)
        return g.patch_result_view(got.result)

    async def reopen(
        self,
        ref: str,
        *,
        reason: str,
        project: str | None = None,
        lease: str | None = None,
        request_id: str | None = None,
    ) -> skift.PatchResult:
        req = v1.ReopenNodeRequest(
            ref=ref,
            reason=reason,
            project=project,
            lease=lease,
            request_id=_request_id(request_id),
        )
        got = await self._call("ReopenNode", req, v1.ReopenNodeResponse, safe=True)
        return g.patch_result_view(got.result)

    async def hold(self, ref: str, *, reason: str, project: str | None = None) -> skift.PatchResult:
        req = v1.HoldNodeRequest(ref=ref, reason=reason, project=project)
        got = await self._call("HoldNode", req, v1.HoldNodeResponse, safe=False)
        return g.patch_result_view(got.result)

    async def unhold(
        self, ref: str, *, reason: str, project: str | None = None
    ) -> skift.PatchResult:
        req = v1.UnholdNodeRequest(ref=ref, reason=reason, project=project)
        got = await self._call("UnholdNode", req, v1.UnholdNodeResponse, safe=False)
        return g.patch_result_view(got.result)

    async def focus(
        self, keep: Sequence[str], *, reason: str, project: str | None = None
    ) -> skift.FocusResult:
        req = v1.FocusRequest(keep=list(keep), reason=reason, project=project)
        got = await self._call("Focus", req, v1.FocusResponse, safe=False)
        return g.focus_view(got.result)

    async def clear_focus(self, *, reason: str, project: str | None = None) -> skift.FocusResult:
        req = v1.ClearFocusRequest(reason=reason, project=project)
        got = await self._call("ClearFocus", req, v1.ClearFocusResponse, safe=False)
        return g.focus_view(got.result)

    # ------------------------------------------------------------ work protocol

    async def claim(
        self,
        ref: str,
        *,
        project: str | None = None,
        ttl: timedelta | None = None,
        harness: str = "",
        agent_ref: str = "",
        session_ref: str = "",
        on_behalf_of: str | None = None,
    ) -> skift.Claim:
        req = v1.ClaimRequest(
            ref=ref,
            project=project,
            ttl=ttl,
            harness=harness,
            agent_ref=agent_ref,
            session_ref=session_ref,
            on_behalf_of=on_behalf_of,
        )
        got = await self._call("Claim", req, v1.ClaimResponse, safe=False)
        return await self._whole(got.claim or v1.Claim())

    async def claim_next(
        self,
        *,
        ttl: timedelta | None = None,
        wait: timedelta | None = None,
        harness: str = "",
        agent_ref: str = "",
        session_ref: str = "",
        on_behalf_of: str | None = None,
        **filters: Any,
    ) -> skift.Claim:
        req = v1.ClaimNextRequest(
            filter=_filter(filters),
            ttl=ttl,
            wait=wait,
            harness=harness,
            agent_ref=agent_ref,
            session_ref=session_ref,
            on_behalf_of=on_behalf_of,
        )
        timeout = self.timeout + (wait.total_seconds() if wait else 0.0)
        got = await self._call("ClaimNext", req, v1.ClaimNextResponse, safe=False, timeout=timeout)
        return await self._whole(got.claim or v1.Claim())

    async def _whole(self, claim: v1.Claim) -> skift.Claim:
        """The claim with every input whole: what did not fit in the claim's answer is read
        with ListInputs (and ListArtifacts for an input whose artifacts were cut)."""
        inputs = list(claim.inputs)
        token = claim.next_inputs_page_token
        ref = (claim.node or v1.Node()).ref
        if token:
            inputs += await self._input_pages(ref, None, token)
        return attrs.evolve(g.claim_view(claim, []), inputs=tuple(await self._inputs(inputs)))

    async def _input_pages(self, ref: str, project: str | None, token: str) -> list[v1.Input]:
        out: list[v1.Input] = []
        while True:
            req = v1.ListInputsRequest(ref=ref, project=project, page_token=token)
            got = await self._call("ListInputs", req, v1.ListInputsResponse, safe=True)
            out += got.inputs
            if not (token := got.next_page_token):
                return out

    async def _inputs(self, inputs: list[v1.Input]) -> list[skift.Input]:
        out: list[skift.Input] = []
        for i in inputs:
            view = g.input_view(i)
            if i.artifacts_cut:
                view = attrs.evolve(view, artifacts=tuple(await self.artifacts(i.ref)))
            out.append(view)
        return out

    async def inputs(self, ref: str, *, project: str | None = None) -> list[skift.Input]:
        """A node's inputs, as a claim carries them (without claiming it)."""
        return await self._inputs(await self._input_pages(ref, project, ""))

    async def heartbeat(
        self,
        ref: str,
        *,
        lease: str,
        ttl: timedelta | None = None,
        project: str | None = None,
    ) -> skift.LeaseInfo:
        # Renewing twice sets the same kind of expiry: safe to retry.
        req = v1.HeartbeatRequest(ref=ref, lease=lease, ttl=ttl, project=project)
        got = await self._call("Heartbeat", req, v1.HeartbeatResponse, safe=True)
        return g.lease_view(got.lease)

    async def complete(
        self,
        ref: str,
        *,
        lease: str | None = None,
        result: str = "",
        artifacts: Sequence[skift.Artifact | Mapping[str, Any]] = (),
        project: str | None = None,
        request_id: str | None = None,
    ) -> skift.PatchResult:
        req = v1.CompleteRequest(
            ref=ref,
            lease=lease,
            result=result,
            artifacts=[o.artifact_pb(_artifact(a)) for a in artifacts],
            project=project,
            request_id=_request_id(request_id),
        )
        got = await self._call("Complete", req, v1.CompleteResponse, safe=True)
        return g.patch_result_view(got.result)

    async def release(
        self,
        ref: str,
        *,
        lease: str | None = None,
        reason: skift.ReleaseReason | str = skift.ReleaseReason.CRASH,
        project: str | None = None,
        preempt: bool = False,
    ) -> skift.NodeInfo:
        """End the lease on ``ref``: the holder's own, or with ``preempt=True`` (a person)
        whoever's it is, ``reason`` then being the person's explanation."""
        if preempt:
            why = reason.value if isinstance(reason, skift.ReleaseReason) else str(reason)
            req = v1.ReleaseRequest(ref=ref, project=project, preempt=True, preempt_reason=why)
        else:
            req = v1.ReleaseRequest(
                ref=ref,
                lease=lease or "",
                reason=enum_pb(v1.ReleaseReason, reason),
                project=project,
            )
        got = await self._call("Release", req, v1.ReleaseResponse, safe=False)
        return g.node_view(got.node or v1.Node())

    async def gate(
        self,
        ref: str,
        *,
        lease: str,
        title: str,
        body: str = "",
        project: str | None = None,
        request_id: str | None = None,
    ) -> skift.PatchResult:
        req = v1.GateRequest(
            ref=ref,
            lease=lease,
            title=title,
            body=body,
            project=project,
            request_id=_request_id(request_id),
        )
        got = await self._call("Gate", req, v1.GateResponse, safe=True)
        return g.patch_result_view(got.result)

    async def leases(
        self,
        ref: str | None = None,
        *,
        project: str | None = None,
        projects: Sequence[str] = (),
        mine: bool = False,
    ) -> list[skift.LeaseInfo]:
        """With ``ref``: every attempt on that node. Without: the organization's live leases
        (of ``projects``; the caller's own with ``mine``), an id only on the caller's own."""
        out: list[skift.LeaseInfo] = []
        token = ""
        if ref is None:
            while True:
                live = v1.ListLiveLeasesRequest(
                    projects=list(projects), mine=mine, page_token=token
                )
                page = await self._call(
                    "ListLiveLeases", live, v1.ListLiveLeasesResponse, safe=True
                )
                out += [g.lease_view(x) for x in page.leases]
                if not (token := page.next_page_token):
                    return out
        while True:
            req = v1.ListLeasesRequest(ref=ref, project=project, page_token=token)
            got = await self._call("ListLeases", req, v1.ListLeasesResponse, safe=True)
            out += [g.lease_view(x) for x in got.leases]
            if not (token := got.next_page_token):
                return out

    async def sweep_expired(self, limit: int = 500) -> int:
        req = v1.SweepExpiredRequest(limit=limit)
        got = await self._call("SweepExpired", req, v1.SweepExpiredResponse, safe=False)
        return got.expired

    # ------------------------------------------------------------ events

    async def events(
        self, *, ref: str | None = None, project: str | None = None, limit: int = 1000
    ) -> list[skift.EventInfo]:
        pages: list[list[skift.EventInfo]] = []
        got_count = 0
        token = ""
        most = 500
        while got_count < limit:
            req = v1.ListEventsRequest(
                ref=ref, project=project, page_size=min(limit - got_count, most), page_token=token
            )
            try:
                got = await self._call("ListEvents", req, v1.ListEventsResponse, safe=True)
            except skift.LimitExceeded as exc:
                bound = exc.details.get("bound")
                if exc.details.get("limit") != "page_size" or not isinstance(bound, int):
                    raise
                most = bound  # this server pages smaller: ask for its largest page
                continue
            pages.append([rc.event_view(e) for e in got.events])
            got_count += len(got.events)
            if not (token := got.next_page_token):
                break
        # each page is older than the one before it, oldest first within itself
        return [e for page in reversed(pages) for e in page]

    async def watch_events(
        self,
        *,
        after: str | None = None,
        projects: Sequence[str] | None = None,
        ops: Sequence[str] | None = None,
        limit: int = 100,
        wait: timedelta | None = None,
    ) -> skift.EventPage:
        req = v1.WatchEventsRequest(
            page_token=after or "",
            projects=list(projects or ()),
            ops=list(ops or ()),
            page_size=_page_size(limit),
            wait=wait,
        )
        timeout = self.timeout + (wait.total_seconds() if wait else 0.0)
        got = await self._call(
            "WatchEvents", req, v1.WatchEventsResponse, safe=True, timeout=timeout
        )
        return skift.EventPage(
            events=tuple(rc.event_view(e) for e in got.events), cursor=got.next_page_token
        )

    # ------------------------------------------------------------ principals and tokens

    # ------------------------------------------------------------ comments

    async def add_comment(
        self,
        ref: str,
        body: str,
        *,
        reply_to: str | None = None,
        project: str | None = None,
        request_id: str | None = None,
    ) -> skift.CommentInfo:
        req = v1.AddCommentRequest(
            ref=ref,
            body=body,
            reply_to=reply_to,
            project=project,
            request_id=_request_id(request_id),
        )
        got = await self._call("AddComment", req, v1.AddCommentResponse, safe=True)
        return rc.comment_view(got.comment)

    async def edit_comment(self, comment_id: str, body: str) -> skift.CommentInfo:
        req = v1.EditCommentRequest(id=comment_id, body=body)
        got = await self._call("EditComment", req, v1.EditCommentResponse, safe=False)
        return rc.comment_view(got.comment)

    async def resolve_comment(self, comment_id: str) -> skift.CommentInfo:
        # resolving a resolved comment changes nothing, so a retry is harmless
        req = v1.ResolveCommentRequest(id=comment_id)
        got = await self._call("ResolveComment", req, v1.ResolveCommentResponse, safe=True)
        return rc.comment_view(got.comment)

    async def comments(self, ref: str, *, project: str | None = None) -> list[skift.CommentInfo]:
        out: list[skift.CommentInfo] = []
        token = ""
        while True:
            req = v1.ListCommentsRequest(ref=ref, project=project, page_token=token)
            got = await self._call("ListComments", req, v1.ListCommentsResponse, safe=True)
            out += [rc.comment_view(x) for x in got.comments]
            if not (token := got.next_page_token):
                return out

    # ------------------------------------------------------------ search

    async def search(
        self,
        query: str,
        *,
        projects: Sequence[str] | None = None,
        limit: int = 20,
        include_archived: bool = False,
    ) -> list[skift.SearchHit]:
        out: list[skift.SearchHit] = []
        token = ""
        while True:
            req = v1.SearchRequest(
                query=query,
                projects=list(projects or ()),
                page_size=_page_size(limit),
                include_archived=include_archived,
                page_token=token,
            )
            got = await self._call("Search", req, v1.SearchResponse, safe=True)
            out += [rc.search_hit_view(h) for h in got.hits]
            token = got.next_page_token
            # a page holds `limit` hits unless bytes cut it short: read on only then
            if not token or len(out) >= limit:
                return out[:limit]

    # ------------------------------------------------------------ usage and cost

    async def record_usage(
        self,
        ref: str,
        *,
        model: str,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        estimate: bool = False,
        basis: str | None = None,
        lease: str | None = None,
        project: str | None = None,
    ) -> skift.UsageInfo:
        req = v1.RecordUsageRequest(
            ref=ref,
            project=project,
            model=model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_read_tokens=cache_read_tokens,
            cache_write_tokens=cache_write_tokens,
            estimate=estimate,
            basis=basis,
            lease=lease,
        )
        # not retried: a second attempt could append a second record
        got = await self._call("RecordUsage", req, v1.RecordUsageResponse, safe=False)
        return rc.usage_view(got.record)

    async def usage(
        self, ref: str, *, subtree: bool = False, project: str | None = None
    ) -> skift.UsageReport:
        req = v1.GetUsageRequest(ref=ref, project=project, subtree=subtree)
        got = await self._call("GetUsage", req, v1.GetUsageResponse, safe=True)
        return rc.report_view(got.report)

    async def project_usage(self, project: str) -> skift.UsageReport:
        req = v1.GetProjectUsageRequest(project=project)
        got = await self._call("GetProjectUsage", req, v1.GetProjectUsageResponse, safe=True)
        return rc.report_view(got.report)

    async def set_rate(
        self,
        model: str,
        *,
        input: Decimal | int | str,
        output: Decimal | int | str,
        cache_read: Decimal | int | str = 0,
        cache_write: Decimal | int | str = 0,
        currency: str = "USD",
    ) -> skift.RateInfo:
        req = v1.SetRateRequest(
            model=model,
            input=str(input),
            output=str(output),
            cache_read=str(cache_read),
            cache_write=str(cache_write),
            currency=currency,
        )
        got = await self._call("SetRate", req, v1.SetRateResponse, safe=True)
        return rc.rate_view(got.rate)

    async def rates(self) -> list[skift.RateInfo]:
        out: list[skift.RateInfo] = []
        token = ""
        while True:
            req = v1.ListRatesRequest(page_token=token)
            got = await self._call("ListRates", req, v1.ListRatesResponse, safe=True)
            out += [rc.rate_view(r) for r in got.rates]
            if not (token := got.next_page_token):
                return out

    async def set_org_limits(self, **sizes: int | None) -> skift.OrgLimits:
        req = v1.SetOrgLimitsRequest(
            set={k: v for k, v in sizes.items() if v is not None},
            unset=[k for k, v in sizes.items() if v is None],
        )
        got = await self._call("SetOrgLimits", req, v1.SetOrgLimitsResponse, safe=True)
        return rc.org_limits_view(got.limits)

    async def org_limits(self) -> skift.OrgLimits:
        req = v1.GetOrgLimitsRequest()
        got = await self._call("GetOrgLimits", req, v1.GetOrgLimitsResponse, safe=True)
        return rc.org_limits_view(got.limits)

    # ------------------------------------------------------------ webhooks

    async def add_webhook(
        self, project: str, url: str, *, events: Sequence[str] | None = None
    ) -> skift.WebhookInfo:
        req = v1.AddWebhookRequest(project=project, url=url, events=list(events or ()))
        got = await self._call("AddWebhook", req, v1.AddWebhookResponse, safe=False)
        return wh.webhook_view(got.webhook, got.secret)

    async def webhooks(self, *, project: str | None = None) -> list[skift.WebhookInfo]:
        out: list[skift.WebhookInfo] = []
        token = ""
        while True:
            req = v1.ListWebhooksRequest(project=project, page_token=token)
            got = await self._call("ListWebhooks", req, v1.ListWebhooksResponse, safe=True)
            out += [wh.webhook_view(w) for w in got.webhooks]
            if not (token := got.next_page_token):
                return out

    async def rotate_webhook_secret(self, webhook: str) -> skift.WebhookInfo:
        req = v1.RotateWebhookSecretRequest(webhook=webhook)
        got = await self._call(
            "RotateWebhookSecret", req, v1.RotateWebhookSecretResponse, safe=False
        )
        return wh.webhook_view(got.webhook, got.secret)

    async def disable_webhook(self, webhook: str) -> skift.WebhookInfo:
        req = v1.DisableWebhookRequest(webhook=webhook)
        got = await self._call("DisableWebhook", req, v1.DisableWebhookResponse, safe=True)
        return wh.webhook_view(got.webhook)

    async def enable_webhook(self, webhook: str) -> skift.WebhookInfo:
        req = v1.EnableWebhookRequest(webhook=webhook)
        got = await self._call("EnableWebhook", req, v1.EnableWebhookResponse, safe=True)
        return wh.webhook_view(got.webhook)

    async def webhook_deliveries(
        self,
        webhook: str | None = None,
        *,
        project: str | None = None,
        parked: bool = False,
        limit: int | None = None,
    ) -> list[skift.DeliveryInfo]:
        out: list[skift.DeliveryInfo] = []
        token = ""
        while True:
            req = v1.ListWebhookDeliveriesRequest(
                webhook=webhook,
                project=project,
                parked=parked,
                page_size=limit or 0,
                page_token=token,
            )
            got = await self._call(
                "ListWebhookDeliveries", req, v1.ListWebhookDeliveriesResponse, safe=True
            )
            out += [wh.delivery_view(d) for d in got.deliveries]
            if limit is None:  # the server's default page, as in process
                return out
            if len(out) >= limit or not (token := got.next_page_token):
                return out[:limit]

    async def redeliver(self, delivery: str) -> skift.DeliveryInfo:
        req = v1.RedeliverWebhookRequest(delivery=delivery)
        got = await self._call("RedeliverWebhook", req, v1.RedeliverWebhookResponse, safe=False)
        return wh.delivery_view(got.delivery)

    async def test_webhook(self, webhook: str) -> skift.DeliveryInfo:
        req = v1.TestWebhookRequest(webhook=webhook)
        got = await self._call("TestWebhook", req, v1.TestWebhookResponse, safe=False)
        return wh.delivery_view(got.delivery)

    # ------------------------------------------------------------ artifacts and blobs

    async def put_blob(
        self, data: bytes, *, media_type: str, digest: str | None = None
    ) -> skift.BlobInfo:
        req = v1.PutBlobRequest(data=bytes(data), media_type=media_type, digest=digest)
        # content-addressed: sending the same bytes twice stores them once
        return o.blob_view((await self._call("PutBlob", req, v1.PutBlobResponse, safe=True)).blob)

    async def get_blob(self, digest: str) -> bytes:
        req = v1.GetBlobRequest(digest=digest)
        return (await self._call("GetBlob", req, v1.GetBlobResponse, safe=True)).data

    async def attach_artifact(
        self,
        ref: str,
        artifact: skift.Artifact | Mapping[str, Any],
        *,
        lease: str | None = None,
        project: str | None = None,
        request_id: str | None = None,
    ) -> skift.PatchResult:
        req = v1.AttachArtifactRequest(
            ref=ref,
            artifact=o.artifact_pb(_artifact(artifact)),
            lease=lease,
            project=project,
            request_id=_request_id(request_id),
        )
        got = await self._call("AttachArtifact", req, v1.AttachArtifactResponse, safe=True)
        return g.patch_result_view(got.result)

    async def artifacts(self, ref: str, *, project: str | None = None) -> list[skift.ArtifactInfo]:
        out: list[skift.ArtifactInfo] = []
        token = ""
        while True:
            req = v1.ListArtifactsRequest(ref=ref, project=project, page_token=token)
            got = await self._call("ListArtifacts", req, v1.ListArtifactsResponse, safe=True)
            out += [o.artifact_info_view(a) for a in got.artifacts]
            if not (token := got.next_page_token):
                return out

    async def add_principal(
        self,
        name: str,
        kind: skift.PrincipalKind | str = skift.PrincipalKind.AGENT,
        *,
        uid: int | None = None,
    ) -> skift.PrincipalInfo:
        """Register a principal (admin), with a unix identity when ``uid`` is given."""
        req = v1.AddPrincipalRequest(name=name, kind=enum_pb(v1.PrincipalKind, kind), uid=uid)
        got = await self._call("AddPrincipal", req, v1.AddPrincipalResponse, safe=False)
        return rc.principal_view(got.principal)

    async def list_principals(self) -> list[skift.PrincipalInfo]:
        out: list[skift.PrincipalInfo] = []
        token = ""
        while True:
            req = v1.ListPrincipalsRequest(page_token=token)
            got = await self._call("ListPrincipals", req, v1.ListPrincipalsResponse, safe=True)
            out += [rc.principal_view(p) for p in got.principals]
            if not (token := got.next_page_token):
                return out

    async def attach_identity(self, principal: str, scheme: str, value: str) -> skift.PrincipalInfo:
        """Give a principal another way in (unix uid, oidc subject, tailscale node)."""
        req = v1.AttachIdentityRequest(principal=principal, scheme=scheme, value=value)
        got = await self._call("AttachIdentity", req, v1.AttachIdentityResponse, safe=False)
        return rc.principal_view(got.principal)

    async def create_token(self, principal: str) -> skift.TokenInfo:
        """A new bearer token for a principal; its secret is in the result and nowhere else."""
        req = v1.CreateTokenRequest(principal=principal)
        return rc.token_view(
            await self._call("CreateToken", req, v1.CreateTokenResponse, safe=False)
        )

    async def revoke_token(self, token_id: str) -> None:
        req = v1.RevokeTokenRequest(token_id=token_id)
        await self._call("RevokeToken", req, v1.RevokeTokenResponse, safe=False)

    async def mint_signin_code(self) -> skift.SigninCode:
        """A one-time code (ten minutes, one use) that signs you in to the web board; ``url``
        is the link when the server serves the board."""
        m = await self._call(
            "MintSigninCode", v1.MintSigninCodeRequest(), v1.MintSigninCodeResponse, safe=False
        )
        assert m.expires_at is not None
        return skift.SigninCode(
            code=m.code, principal=m.principal, expires_at=m.expires_at, url=m.url
        )


def _page_size(limit: int | None) -> int:
    """``limit`` as a wire page size: None is 0 (the server's default); an explicit 0,
    which the wire cannot tell from "default", is sent as -1 so the server refuses it
    as the local API does."""
    if limit is None:
        return 0
    return limit if limit != 0 else -1


def _skip_token(rpc: str, offset: int, size: int | None) -> str:
    """A page token that starts ``offset`` items in (the server's own token format)."""
    from ._paging import Token, encode

    if offset < 0:
        raise skift.Invalid("offset must be 0 or more", next="Give the number of items to skip.")
    return encode(Token(rpc, offset=offset, size=size))


def _request_id(value: str | None) -> str:
    """The caller's request id, or a fresh one made before the first attempt."""
    if value is None:
        return skift.ulid_str(skift.new_id())
    if not value.strip():
        raise skift.Invalid(
            "request_id is empty", next="Leave it out to have one made, or give a non-empty id."
        )
    return value


def _filter(filters: dict[str, Any]) -> v1.NodeFilter:
    return g.filter_pb(_node_filter(**filters))


def _node_filter(
    projects: Sequence[str] = (),
    kinds: Sequence[str] = (),
    labels: Sequence[str] = (),
    any_labels: Sequence[str] = (),
    assignee_kind: skift.AssigneeKind | str | None = None,
    min_priority: skift.Priority | str | None = None,
    parent: str | None = None,
    status: skift.Status | str | None = None,
    held: bool | None = None,
) -> skift.NodeFilter:
    """The filter keywords of ``ready``/``list_nodes``/``claim_next``, checked as the API does."""
    try:
        return skift.NodeFilter(
            projects=tuple(projects),
            kinds=tuple(kinds),
            labels=tuple(labels),
            any_labels=tuple(any_labels),
            assignee_kind=skift.AssigneeKind(assignee_kind) if assignee_kind else None,
            min_priority=skift.Priority(min_priority) if min_priority else None,
            parent=parent,
            status=skift.Status(status) if status else None,
            held=held,
        )
    except ValueError as exc:
        raise skift.Invalid(
            str(exc),
            next="assignee_kind is agent|user; min_priority p0..p4; status open|done|dropped.",
        ) from None


def connect(
    url: str | None = None,
    *,
    token: str | None = None,
    principal: skift.PrincipalSpec | None = None,
    org: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    attempts: int = 5,
    pool_size: int = 2,
    ssl_context: ssl.SSLContext | None = None,
    on_wait: Callable[[str], None] | None = None,
) -> RemoteSkift:
    """A remote Skift: ``unix:///path.sock``, ``http://host:port`` or ``https://host:port``.

    Without ``url``: ``SKIFT_SERVER``, else the default socket of ``skift serve``.
    ``token`` (default ``SKIFT_TOKEN``) is sent as a bearer token over TCP
    only: on a unix socket the kernel names the caller, and a token is never
    sent there. A unix socket (or its directory) that belongs to neither the
    caller nor root is refused before connecting. ``principal`` and ``org``
    act as another principal and work only against ``skift serve --test-hooks``.
    A server that announced it is starting on the socket is waited for (up to
    a minute, once); ``on_wait`` is told so (the CLI prints it).
    """
    looked_at: list[Path] = []
    if not (url or os.environ.get("SKIFT_SERVER")):
        found, looked_at = find_socket()
        url = f"unix://{found}"
    url = url or os.environ["SKIFT_SERVER"]
    token = token if token is not None else os.environ.get("SKIFT_TOKEN") or None
    parts = urlsplit(url)
    make: Callable[[], Channel]
    socket_path = ""
    codec = ErrorDetailsCodec()
    size = max(1, pool_size)
    if parts.scheme == "unix":
        path = unquote(parts.path if not parts.netloc else f"/{parts.netloc}{parts.path}")
        if not path:
            raise skift.Invalid(f"{url!r} names no socket", next="Use unix:///path/to/skift.sock.")
        make = functools.partial(_UnixChannel, path, codec)
        socket_path = path
        token = None  # the kernel names the caller; a bearer token never goes over a socket
    elif parts.scheme in ("http", "https"):
        if not parts.hostname or not parts.port:
            raise skift.Invalid(
                f"{url!r} names no host and port", next="Use https://host:port (or http://)."
            )
        tls: ssl.SSLContext | bool = False
        if parts.scheme == "https":
            tls = ssl_context or ssl.create_default_context()
            with contextlib.suppress(AttributeError, NotImplementedError):
                tls.set_alpn_protocols(["h2"])
        make = functools.partial(
            Channel, parts.hostname, parts.port, ssl=tls, status_details_codec=codec
        )
    else:
        raise skift.Invalid(
            f"{url!r} is not a skift server address",
            next="Use unix:///path.sock, http://host:port or https://host:port.",
        )
    metadata: dict[str, str] = {}
    if token:
        metadata["authorization"] = f"Bearer {token}"
    shared = _Shared(
        make=make,
        size=size,
        metadata=metadata,
        socket=Path(socket_path) if socket_path else None,
        looked_at=looked_at,
        on_wait=on_wait,
    )
    return RemoteSkift(shared, principal=principal, org=org, timeout=timeout, attempts=attempts)
