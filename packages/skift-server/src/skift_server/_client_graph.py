"""RemoteSkift's projects and graph calls that do more than encode, call and decode: a
patch (checked for size, its operations parsed), the conveniences over another call, a
list whose request names a parameter otherwise, a project's readers.

The rest of this concern is generated, in ``_client_generated``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import skift

from ._client_base import page_size, pick_ops, remote_page, request_id_of
from ._client_generated import GeneratedCalls
from ._convert_ops import op_pb
from ._convert_types import from_pb
from ._proto.skift import v1


class GraphCalls(GeneratedCalls):
    """RemoteSkift's patch, its conveniences, the list of projects and their readers."""

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

    async def rename_project(
        self, ref: str, title: str, *, slug: str | None = None
    ) -> skift.ProjectInfo:
        return await self.update_project(ref, title=title, slug=slug)

    async def restrict_project(
        self, ref: str, *, readers: Sequence[str], reason: str
    ) -> skift.ProjectInfo:
        names = [readers] if isinstance(readers, str) else list(readers)
        req = v1.RestrictProjectRequest(ref=ref, readers=names, reason=reason)
        got = await self._call("RestrictProject", req, v1.RestrictProjectResponse)
        return from_pb(v1.Project, skift.ProjectInfo, got.project)

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
