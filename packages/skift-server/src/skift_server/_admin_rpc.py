"""skift.v1's organization RPCs: its own policy (GetPolicy, SetPolicy, ResetPolicy), its admins
(GrantAdmin, RevokeAdmin) and invitations (InviteIdentity, ListInvites, CancelInvite), and the
server's organizations (CreateOrg, ListOrgs): the handlers (decode,
call the API, encode; the rules are the engine's, skift._org_policy and skift._orgs)."""

from __future__ import annotations

import skift

from . import _paging as paging
from ._convert_types import to_pb
from ._proto.skift import v1


async def grant_admin(sk: skift.LocalSkift, r: v1.GrantAdminRequest) -> v1.GrantAdminResponse:
    got = await sk.grant_admin(r.principal, reason=r.reason)
    return v1.GrantAdminResponse(principal=to_pb(v1.Principal, got))


async def revoke_admin(sk: skift.LocalSkift, r: v1.RevokeAdminRequest) -> v1.RevokeAdminResponse:
    got = await sk.revoke_admin(r.principal, reason=r.reason)
    return v1.RevokeAdminResponse(principal=to_pb(v1.Principal, got))


async def invite_identity(
    sk: skift.LocalSkift, r: v1.InviteIdentityRequest
) -> v1.InviteIdentityResponse:
    got = await sk.invite_identity(r.principal, r.scheme, r.value)
    return v1.InviteIdentityResponse(invite=to_pb(v1.IdentityInvite, got))


async def list_invites(sk: skift.LocalSkift, r: v1.ListInvitesRequest) -> v1.ListInvitesResponse:
    return v1.ListInvitesResponse(invites=[to_pb(v1.IdentityInvite, i) for i in await sk.invites()])


async def cancel_invite(sk: skift.LocalSkift, r: v1.CancelInviteRequest) -> v1.CancelInviteResponse:
    return v1.CancelInviteResponse(
        invite=to_pb(v1.IdentityInvite, await sk.cancel_invite(r.invite))
    )


async def get_policy(sk: skift.LocalSkift, r: v1.GetPolicyRequest) -> v1.GetPolicyResponse:
    return v1.GetPolicyResponse(policy=to_pb(v1.OrgPolicy, await sk.policy()))


async def set_policy(sk: skift.LocalSkift, r: v1.SetPolicyRequest) -> v1.SetPolicyResponse:
    modules = [(m.name, m.source) for m in r.modules]
    names = [n for n, _ in modules]
    if len(set(names)) != len(names):  # a dict would quietly keep the last of two
        dup = next(n for n in names if names.count(n) > 1)
        raise skift.Invalid(
            f"two policy modules are named {dup!r}", next="Give each module its own name."
        )
    got = await sk.set_policy(dict(modules), reason=r.reason)
    return v1.SetPolicyResponse(policy=to_pb(v1.OrgPolicy, got))


async def reset_policy(sk: skift.LocalSkift, r: v1.ResetPolicyRequest) -> v1.ResetPolicyResponse:
    return v1.ResetPolicyResponse(
        policy=to_pb(v1.OrgPolicy, await sk.reset_policy(reason=r.reason))
    )


async def create_org(sk: skift.LocalSkift, r: v1.CreateOrgRequest) -> v1.CreateOrgResponse:
    got = await sk.create_org(r.name, admin=r.admin, uid=r.uid)
    return to_pb(v1.CreateOrgResponse, got)


async def list_orgs(sk: skift.LocalSkift, r: v1.ListOrgsRequest) -> v1.ListOrgsResponse:
    token = paging.decode("ListOrgs", r)
    got = [to_pb(v1.Org, o) for o in await sk.list_orgs()]
    size = sk.engine.page_size(r.page_size or None)
    items, nxt = paging.slice_page("ListOrgs", got, token, size, r)
    return v1.ListOrgsResponse(orgs=items, next_page_token=nxt)
