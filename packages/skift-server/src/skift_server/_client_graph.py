"""RemoteSkift's projects and graph: create, patch, read, explain, drop, hold, focus."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import skift

from ._client_base import (
    RemoteBase,
    filter_of,
    page_size,
    pick_ops,
    remote_page,
    request_id_of,
)
from ._convert import enum_pb
from ._convert_ops import op_pb
from ._convert_types import from_pb
from ._proto.skift import v1


class GraphCalls(RemoteBase):
    """RemoteSkift's projects and graph: create, patch, read, explain, drop, hold, focus."""

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
        got = await self._call("CreateProject", req, v1.CreateProjectResponse)
        return from_pb(v1.Project, skift.ProjectInfo, got.project)

    async def get_project(self, ref: str) -> skift.ProjectInfo:
        req = v1.GetProjectRequest(ref=ref)
        got = await self._call("GetProject", req, v1.GetProjectResponse)
        return from_pb(v1.Project, skift.ProjectInfo, got.project)

    async def list_projects(
        self, *, archived: bool = False, limit: int | None = None, page: str | None = None
    ) -> skift.Page[skift.ProjectInfo]:
        out: list[skift.ProjectInfo] = []
        token = page or ""
        while True:
            req = v1.ListProjectsRequest(
                show_archived=archived,
                page_size=page_size(None if limit is None else limit - len(out)),
                page_token=token,
            )
            got = await self._call("ListProjects", req, v1.ListProjectsResponse)
            out += [from_pb(v1.Project, skift.ProjectInfo, p) for p in got.projects]
            token = got.next_page_token
            # one page, as the local API answers; more only where bytes cut it short
            if not token or limit is None or len(out) >= limit:
                return remote_page(out, token)

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
        got = await self._call("UpdateProject", req, v1.UpdateProjectResponse)
        return from_pb(v1.Project, skift.ProjectInfo, got.project)

    async def rename_project(
        self, ref: str, title: str, *, slug: str | None = None
    ) -> skift.ProjectInfo:
        return await self.update_project(ref, title=title, slug=slug)

    async def archive_project(self, ref: str, *, reason: str = "archived") -> skift.ProjectInfo:
        req = v1.ArchiveProjectRequest(ref=ref, reason=reason)
        got = await self._call("ArchiveProject", req, v1.ArchiveProjectResponse)
        return from_pb(v1.Project, skift.ProjectInfo, got.project)

    async def restrict_project(
        self, ref: str, *, readers: Sequence[str], reason: str
    ) -> skift.ProjectInfo:
        names = [readers] if isinstance(readers, str) else list(readers)
        req = v1.RestrictProjectRequest(ref=ref, readers=names, reason=reason)
        got = await self._call("RestrictProject", req, v1.RestrictProjectResponse)
        return from_pb(v1.Project, skift.ProjectInfo, got.project)

    async def unrestrict_project(self, ref: str, *, reason: str) -> skift.ProjectInfo:
        req = v1.UnrestrictProjectRequest(ref=ref, reason=reason)
        got = await self._call("UnrestrictProject", req, v1.UnrestrictProjectResponse)
        return from_pb(v1.Project, skift.ProjectInfo, got.project)

    async def hold_project(self, ref: str, *, reason: str, request_id: str | None = None) -> int:
        req = v1.HoldProjectRequest(ref=ref, reason=reason, request_id=request_id_of(request_id))
        got = await self._call("HoldProject", req, v1.HoldProjectResponse)
        return got.parked

    async def unhold_project(self, ref: str, *, reason: str, request_id: str | None = None) -> int:
        req = v1.UnholdProjectRequest(ref=ref, reason=reason, request_id=request_id_of(request_id))
        got = await self._call("UnholdProject", req, v1.UnholdProjectResponse)
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
        if len(ops) > skift.DEFAULT_LIMITS.ops_per_patch:
            # counted before a single operation is parsed or built (a 100,000-operation
            # patch cost a minute and half a gigabyte before the server's refusal)
            await self.check_ops_count(len(ops))
        parsed = pick_ops(ops)
        req = v1.PatchRequest(
            project=project,
            ops=[op_pb(op) for op in parsed],
            request_id=request_id_of(request_id),
            lease=lease,
            on_behalf_of=on_behalf_of,
        )
        got = await self._call("Patch", req, v1.PatchResponse)
        return from_pb(v1.PatchResult, skift.PatchResult, got.result)

    async def check_ops_count(self, count: int) -> None:
        """Refuse a patch of ``count`` operations that the server's limit refuses, by
        asking the limit (one small read) instead of sending the patch."""
        got = await self._call("GetOrgLimits", v1.GetOrgLimitsRequest(), v1.GetOrgLimitsResponse)
        bound = (got.limits or v1.OrgLimits()).ops_per_patch
        if bound and count > bound:
            raise skift.LimitExceeded(
                f"the patch has {count} operations; the limit is {bound}",
                next="Split it into several patches.",
                limit="ops_per_patch",
                bound=bound,
            )

    async def create(self, project: str, title: str, **fields: Any) -> skift.NodeInfo:
        """Create one node (a one-operation patch) and return it."""
        res = await self.patch(project, [skift.CreateNode(title=title, **fields)])
        return res.nodes[0]

    async def get(self, ref: str, *, project: str | None = None) -> skift.NodeInfo:
        req = v1.GetNodeRequest(ref=ref, project=project)
        got = await self._call("GetNode", req, v1.GetNodeResponse)
        return from_pb(v1.Node, skift.NodeInfo, got.node)

    async def resolve(self, ref: str, *, project: str | None = None) -> skift.Resolved:
        req = v1.ResolveNodeRequest(ref=ref, project=project)
        got = await self._call("ResolveNode", req, v1.ResolveNodeResponse)
        return skift.Resolved(ref=got.ref, id=got.id, title=got.title)

    async def ready(
        self, *, limit: int | None = None, page: str | None = None, **filters: Any
    ) -> skift.ReadyPage:
        req = v1.ReadyRequest(
            filter=filter_of(filters), page_size=page_size(limit), page_token=page or ""
        )
        got = await self._call("Ready", req, v1.ReadyResponse)
        return from_pb(v1.ReadyResponse, skift.ReadyPage, got)

    async def list_nodes(
        self,
        *,
        limit: int | None = None,
        page: str | None = None,
        attributed: bool = False,
        **filters: Any,
    ) -> skift.ReadyPage:
        req = v1.ListNodesRequest(
            filter=filter_of(filters),
            page_size=page_size(limit),
            page_token=page or "",
            attributed=attributed,
        )
        got = await self._call("ListNodes", req, v1.ListNodesResponse)
        return from_pb(v1.ReadyResponse, skift.ReadyPage, got)

    async def edges(
        self, nodes: Sequence[str], *, project: str | None = None
    ) -> list[skift.EdgeInfo]:
        """The ``blocks`` edges into and out of these nodes (references or ids), both ends named."""
        out: list[skift.EdgeInfo] = []
        token = ""
        while True:
            req = v1.ListEdgesRequest(nodes=list(nodes), project=project, page_token=token)
            got = await self._call("ListEdges", req, v1.ListEdgesResponse)
            out += [from_pb(v1.EdgeInfo, skift.EdgeInfo, x) for x in got.edges]
            if not (token := got.next_page_token):
                return out

    async def explain(self, ref: str, *, project: str | None = None) -> skift.Explanation:
        req = v1.ExplainRequest(ref=ref, project=project)
        got = await self._call("Explain", req, v1.ExplainResponse)
        return from_pb(v1.ExplainResponse, skift.Explanation, got)

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
            request_id=request_id_of(request_id),
        )
        got = await self._call("DropNode", req, v1.DropNodeResponse)
        return from_pb(v1.PatchResult, skift.PatchResult, got.result)

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
            request_id=request_id_of(request_id),
        )
        got = await self._call("ReopenNode", req, v1.ReopenNodeResponse)
        return from_pb(v1.PatchResult, skift.PatchResult, got.result)

    # hold, unhold, focus and clearing one carry a request id (made before the first
    # attempt), so a retry after a lost answer returns the first answer instead of
    # "already held" or a second sweep.

    async def hold(
        self,
        ref: str,
        *,
        reason: str,
        project: str | None = None,
        request_id: str | None = None,
    ) -> skift.PatchResult:
        req = v1.HoldNodeRequest(
            ref=ref, reason=reason, project=project, request_id=request_id_of(request_id)
        )
        got = await self._call("HoldNode", req, v1.HoldNodeResponse)
        return from_pb(v1.PatchResult, skift.PatchResult, got.result)

    async def unhold(
        self,
        ref: str,
        *,
        reason: str,
        project: str | None = None,
        request_id: str | None = None,
    ) -> skift.PatchResult:
        req = v1.UnholdNodeRequest(
            ref=ref, reason=reason, project=project, request_id=request_id_of(request_id)
        )
        got = await self._call("UnholdNode", req, v1.UnholdNodeResponse)
        return from_pb(v1.PatchResult, skift.PatchResult, got.result)

    async def focus(
        self,
        keep: Sequence[str],
        *,
        reason: str,
        project: str | None = None,
        request_id: str | None = None,
    ) -> skift.FocusResult:
        req = v1.FocusRequest(
            keep=list(keep), reason=reason, project=project, request_id=request_id_of(request_id)
        )
        got = await self._call("Focus", req, v1.FocusResponse)
        return from_pb(v1.FocusResult, skift.FocusResult, got.result)

    async def clear_focus(
        self, *, reason: str, project: str | None = None, request_id: str | None = None
    ) -> skift.FocusResult:
        req = v1.ClearFocusRequest(
            reason=reason, project=project, request_id=request_id_of(request_id)
        )
        got = await self._call("ClearFocus", req, v1.ClearFocusResponse)
        return from_pb(v1.FocusResult, skift.FocusResult, got.result)
