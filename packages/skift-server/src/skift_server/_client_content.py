"""RemoteSkift's content and administration calls whose request names its fields otherwise
than the method does its parameters: comments by id, an organization's limits and policy.

The rest of this concern only encodes, calls and decodes: generated, in ``_client_generated``.
"""

from __future__ import annotations

from collections.abc import Mapping

import skift

from ._client_base import RemoteBase
from ._convert_types import from_pb
from ._proto.skift import v1


class ContentCalls(RemoteBase):
    """RemoteSkift's comments by id, and an organization's limits and policy."""

    async def edit_comment(self, comment_id: str, body: str) -> skift.CommentInfo:
        req = v1.EditCommentRequest(id=comment_id, body=body)
        got = await self._call("EditComment", req, v1.EditCommentResponse)
        return from_pb(v1.Comment, skift.CommentInfo, got.comment)

    async def resolve_comment(self, comment_id: str) -> skift.CommentInfo:
        req = v1.ResolveCommentRequest(id=comment_id)
        got = await self._call("ResolveComment", req, v1.ResolveCommentResponse)
        return from_pb(v1.Comment, skift.CommentInfo, got.comment)

    async def set_org_limits(self, **sizes: int | None) -> skift.OrgLimits:
        req = v1.SetOrgLimitsRequest(
            set={k: v for k, v in sizes.items() if v is not None},
            unset=[k for k, v in sizes.items() if v is None],
        )
        got = await self._call("SetOrgLimits", req, v1.SetOrgLimitsResponse)
        return from_pb(v1.OrgLimits, skift.OrgLimits, got.limits)

    async def set_policy(
        self, modules: Mapping[str, str], *, reason: str | None = None
    ) -> skift.OrgPolicy:
        req = v1.SetPolicyRequest(
            modules=[v1.PolicyModule(name=n, source=s) for n, s in modules.items()],
            reason=reason or "",
        )
        got = await self._call("SetPolicy", req, v1.SetPolicyResponse)
        return from_pb(v1.OrgPolicy, skift.OrgPolicy, got.policy)
