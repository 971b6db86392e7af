"""RemoteSkift's organization calls: the organization's own policy, and the server's
organizations (an administrator of the server)."""

from __future__ import annotations

from collections.abc import Mapping

import skift

from ._client_base import RemoteBase
from ._convert_types import from_pb
from ._proto.skift import v1


class AdminCalls(RemoteBase):
    """The organization's policy and the server's organizations, over gRPC."""

    async def whoami(self) -> skift.WhoAmI:
        got = await self._call("WhoAmI", v1.WhoAmIRequest(), v1.WhoAmIResponse)
        return from_pb(v1.WhoAmIResponse, skift.WhoAmI, got)

    async def policy(self) -> skift.OrgPolicy:
        got = await self._call("GetPolicy", v1.GetPolicyRequest(), v1.GetPolicyResponse)
        return from_pb(v1.OrgPolicy, skift.OrgPolicy, got.policy)

    async def set_policy(
        self, modules: Mapping[str, str], *, reason: str | None = None
    ) -> skift.OrgPolicy:
        req = v1.SetPolicyRequest(
            modules=[v1.PolicyModule(name=n, source=s) for n, s in modules.items()],
            reason=reason or "",
        )
        # setting the same modules twice changes nothing the second time
        got = await self._call("SetPolicy", req, v1.SetPolicyResponse)
        return from_pb(v1.OrgPolicy, skift.OrgPolicy, got.policy)

    async def reset_policy(self, *, reason: str | None = None) -> skift.OrgPolicy:
        req = v1.ResetPolicyRequest(reason=reason or "")
        got = await self._call("ResetPolicy", req, v1.ResetPolicyResponse)
        return from_pb(v1.OrgPolicy, skift.OrgPolicy, got.policy)

    async def grant_admin(self, principal: str, *, reason: str) -> skift.PrincipalInfo:
        req = v1.GrantAdminRequest(principal=principal, reason=reason)
        got = await self._call("GrantAdmin", req, v1.GrantAdminResponse)
        return from_pb(v1.Principal, skift.PrincipalInfo, got.principal)

    async def revoke_admin(self, principal: str, *, reason: str) -> skift.PrincipalInfo:
        req = v1.RevokeAdminRequest(principal=principal, reason=reason)
        got = await self._call("RevokeAdmin", req, v1.RevokeAdminResponse)
        return from_pb(v1.Principal, skift.PrincipalInfo, got.principal)

    async def invite_identity(self, principal: str, scheme: str, value: str) -> skift.InviteInfo:
        req = v1.InviteIdentityRequest(principal=principal, scheme=scheme, value=value)
        got = await self._call("InviteIdentity", req, v1.InviteIdentityResponse)
        return from_pb(v1.IdentityInvite, skift.InviteInfo, got.invite)

    async def invites(self) -> list[skift.InviteInfo]:
        got = await self._call("ListInvites", v1.ListInvitesRequest(), v1.ListInvitesResponse)
        return [from_pb(v1.IdentityInvite, skift.InviteInfo, i) for i in got.invites]

    async def cancel_invite(self, invite: str) -> skift.InviteInfo:
        req = v1.CancelInviteRequest(invite=invite)
        got = await self._call("CancelInvite", req, v1.CancelInviteResponse)
        return from_pb(v1.IdentityInvite, skift.InviteInfo, got.invite)

    async def create_org(
        self, name: str, *, admin: str, uid: int | None = None
    ) -> skift.OrgCreated:
        req = v1.CreateOrgRequest(name=name, admin=admin, uid=uid)
        got = await self._call("CreateOrg", req, v1.CreateOrgResponse)
        return from_pb(v1.CreateOrgResponse, skift.OrgCreated, got)

    async def list_orgs(self) -> list[skift.OrgInfo]:
        out: list[skift.OrgInfo] = []
        token = ""
        while True:
            req = v1.ListOrgsRequest(page_token=token)
            got = await self._call("ListOrgs", req, v1.ListOrgsResponse)
            out += [from_pb(v1.Org, skift.OrgInfo, o) for o in got.orgs]
            if not (token := got.next_page_token):
                return out
