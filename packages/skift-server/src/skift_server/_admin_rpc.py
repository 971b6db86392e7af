"""skift.v1's organization RPCs: its own policy (GetPolicy, SetPolicy, ResetPolicy), its admins
(GrantAdmin, RevokeAdmin) and invitations (InviteIdentity, ListInvites, CancelInvite), and the server's organizations
(CreateOrg, ListOrgs). The messages both ways and the handlers (decode,
call the API, encode; the rules are the engine's, skift._org_policy and skift._orgs)."""

from __future__ import annotations

import skift

from . import _convert_records as rc
from . import _paging as paging
from ._convert import opt_ts, ts, utc
from ._proto.skift import v1


def org_policy_pb(p: skift.OrgPolicy) -> v1.OrgPolicy:
    return v1.OrgPolicy(
        modules=[v1.PolicyModule(name=m.name, source=m.source) for m in p.modules],
        updated_at=utc(p.updated_at),
        updated_by=p.updated_by or "",
    )


def org_policy_view(m: v1.OrgPolicy | None) -> skift.OrgPolicy:
    m = m or v1.OrgPolicy()
    return skift.OrgPolicy(
        modules=tuple(skift.PolicyModule(name=x.name, source=x.source) for x in m.modules),
        updated_at=opt_ts(m.updated_at),
        updated_by=m.updated_by or None,
    )


def org_pb(o: skift.OrgInfo) -> v1.Org:
    return v1.Org(name=o.name, created_at=utc(o.created_at), first=o.first)


def org_view(m: v1.Org) -> skift.OrgInfo:
    return skift.OrgInfo(name=m.name, created_at=ts(m.created_at), first=m.first)


def org_created_view(m: v1.CreateOrgResponse) -> skift.OrgCreated:
    return skift.OrgCreated(org=m.org, admin=m.admin, token=m.token, token_id=m.token_id, uid=m.uid)


def invite_pb(i: skift.InviteInfo) -> v1.IdentityInvite:
    return v1.IdentityInvite(
        id=i.id,
        principal=i.principal,
        scheme=i.scheme,
        value=i.value,
        invited_by=i.invited_by,
        created_at=utc(i.created_at),
        code=i.code,
    )


def invite_view(m: v1.IdentityInvite | None) -> skift.InviteInfo:
    m = m or v1.IdentityInvite()
    return skift.InviteInfo(
        id=m.id,
        principal=m.principal,
        scheme=m.scheme,
        value=m.value,
        invited_by=m.invited_by,
        created_at=ts(m.created_at),
        code=m.code,
    )


async def grant_admin(sk: skift.LocalSkift, r: v1.GrantAdminRequest) -> v1.GrantAdminResponse:
    got = await sk.grant_admin(r.principal, reason=r.reason)
    return v1.GrantAdminResponse(principal=rc.principal_pb(got))


async def revoke_admin(sk: skift.LocalSkift, r: v1.RevokeAdminRequest) -> v1.RevokeAdminResponse:
    got = await sk.revoke_admin(r.principal, reason=r.reason)
    return v1.RevokeAdminResponse(principal=rc.principal_pb(got))


async def invite_identity(
    sk: skift.LocalSkift, r: v1.InviteIdentityRequest
) -> v1.InviteIdentityResponse:
    got = await sk.invite_identity(r.principal, r.scheme, r.value)
    return v1.InviteIdentityResponse(invite=invite_pb(got))


async def list_invites(sk: skift.LocalSkift, r: v1.ListInvitesRequest) -> v1.ListInvitesResponse:
    return v1.ListInvitesResponse(invites=[invite_pb(i) for i in await sk.invites()])


async def cancel_invite(sk: skift.LocalSkift, r: v1.CancelInviteRequest) -> v1.CancelInviteResponse:
    return v1.CancelInviteResponse(invite=invite_pb(await sk.cancel_invite(r.invite)))


async def get_policy(sk: skift.LocalSkift, r: v1.GetPolicyRequest) -> v1.GetPolicyResponse:
    return v1.GetPolicyResponse(policy=org_policy_pb(await sk.policy()))


async def set_policy(sk: skift.LocalSkift, r: v1.SetPolicyRequest) -> v1.SetPolicyResponse:
    modules = [(m.name, m.source) for m in r.modules]
    names = [n for n, _ in modules]
    if len(set(names)) != len(names):  # a dict would quietly keep the last of two
        dup = next(n for n in names if names.count(n) > 1)
        raise skift.Invalid(
            f"two policy modules are named {dup!r}", next="Give each module its own name."
        )
    got = await sk.set_policy(dict(modules), reason=r.reason)
    return v1.SetPolicyResponse(policy=org_policy_pb(got))


async def reset_policy(sk: skift.LocalSkift, r: v1.ResetPolicyRequest) -> v1.ResetPolicyResponse:
    return v1.ResetPolicyResponse(policy=org_policy_pb(await sk.reset_policy(reason=r.reason)))


async def create_org(sk: skift.LocalSkift, r: v1.CreateOrgRequest) -> v1.CreateOrgResponse:
    got = await sk.create_org(r.name, admin=r.admin, uid=r.uid)
    return v1.CreateOrgResponse(
        org=got.org, admin=got.admin, token=got.token, token_id=got.token_id, uid=got.uid
    )


async def list_orgs(sk: skift.LocalSkift, r: v1.ListOrgsRequest) -> v1.ListOrgsResponse:
    token = paging.decode("ListOrgs", r)
    got = [org_pb(o) for o in await sk.list_orgs()]
    size = sk.engine.page_size(r.page_size or None)
    items, nxt = paging.slice_page("ListOrgs", got, token, size, r)
    return v1.ListOrgsResponse(orgs=items, next_page_token=nxt)
