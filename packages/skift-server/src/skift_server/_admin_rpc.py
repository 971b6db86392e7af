"""skift.v1's organization RPCs written by hand: SetPolicy (two modules of one name are
refused before a dict keeps the last) and ListOrgs (paged). The others (GetPolicy,
ResetPolicy, GrantAdmin, RevokeAdmin, InviteIdentity, ListInvites, CancelInvite, CreateOrg) are made from their
declarations (``_simple``); the rules are the engine's, skift._org_policy and skift._orgs."""

from __future__ import annotations

import skift

from . import _paging as paging
from ._convert_types import to_pb
from ._proto.skift import v1


async def set_policy(sk: skift.LocalSkift, r: v1.SetPolicyRequest) -> v1.SetPolicyResponse:
    modules = [(m.name, m.source) for m in r.modules]
    names = [n for n, _ in modules]
    if len(set(names)) != len(names):  # a dict would quietly keep the last of two
        again = next(i for i, n in enumerate(names) if n in names[:i])
        raise skift.Invalid(
            f"two policy modules are named {names[again]!r}",
            next="Give each module its own name.",
            field=f"modules[{again}].name",
        )
    got = await sk.set_policy(dict(modules), reason=r.reason)
    return v1.SetPolicyResponse(policy=to_pb(v1.OrgPolicy, got))


async def list_orgs(sk: skift.LocalSkift, r: v1.ListOrgsRequest) -> v1.ListOrgsResponse:
    token = paging.decode("ListOrgs", r)
    size = sk.engine.page_size(r.page_size or None)
    got = await sk.list_orgs(limit=size, page=token.core if token else None)
    items, nxt = paging.core_page(got, v1.Org, r)
    return v1.ListOrgsResponse(orgs=items, next_page_token=nxt)
