"""The in-memory store's people: principals, identities, invitations and who wrote what.

A mixin of the reference store's transaction (`_memory.MemoryTx`), kept apart so
each module stays small; the rules are in the engine, never here.
"""

from __future__ import annotations

from collections.abc import Collection
from uuid import UUID

import attrs

from ._errors import Conflict
from ._memory_content import MemoryContentTx
from ._models import Event, Identity, IdentityInvite, Principal, PrincipalKind
from ._refs import ulid_str
from ._store import Authors, Writer


class MemoryPeopleTx(MemoryContentTx):
    """Principals, identities and invitations of one organization, in memory."""

    # principals
    async def principal_by_name(self, name: str) -> Principal | None:
        for p in self._s.principals.values():
            if p.org_id == self._org and p.name == name:
                return p
        return None

    async def principals_by_id(self, ids: Collection[UUID]) -> dict[UUID, Principal]:
        return {i: p for i in ids if (p := self._s.principals.get(i)) and p.org_id == self._org}

    async def insert_principal(self, principal: Principal) -> None:
        self._set(self._s.principals, principal.id, principal)

    async def list_principals(self) -> list[Principal]:
        rows = [p for p in self._s.principals.values() if p.org_id == self._org]
        return sorted(rows, key=lambda p: p.name)

    async def insert_identity(self, identity: Identity) -> None:
        for other in self._s.identities.values():
            if (
                other.scheme == identity.scheme
                and other.value == identity.value
                and other.revoked_at is None
            ):
                raise Conflict(
                    f"that {identity.scheme.value} identity already belongs to a principal",
                    next="Revoke it there first, or attach another identity.",
                )
        self._set(self._s.identities, identity.id, identity)

    async def identities_of(self, principal_id: UUID) -> list[Identity]:
        rows = [
            i
            for i in self._s.identities.values()
            if i.org_id == self._org and i.principal_id == principal_id
        ]
        return sorted(rows, key=lambda i: (i.created_at, i.id))

    async def identity_by_id(self, identity_id: UUID) -> Identity | None:
        found = self._s.identities.get(identity_id)
        return found if found is not None and found.org_id == self._org else None

    async def revoke_identity(self, identity_id: UUID) -> bool:
        found = await self.identity_by_id(identity_id)
        if found is None or found.revoked_at is not None:
            return False
        self._set(self._s.identities, identity_id, attrs.evolve(found, revoked_at=self._now))
        return True

    async def set_admin(self, principal_id: UUID, admin: bool) -> None:
        found = self._s.principals.get(principal_id)
        if found is not None and found.org_id == self._org:
            self._set(self._s.principals, principal_id, attrs.evolve(found, admin=admin))

    async def lock_principals(self) -> None:
        return None  # the store's transactions are serial already

    async def admins(self, *, lock: bool = False) -> list[UUID]:
        rows = [p for p in self._s.principals.values() if p.org_id == self._org and p.admin]
        return [p.id for p in sorted(rows, key=lambda p: p.name)]

    async def put_invite(self, invite: IdentityInvite) -> None:
        for other in list(self._s.invites.values()):
            if (
                other.org_id == self._org
                and other.scheme == invite.scheme
                and other.value == invite.value
            ):
                self._pop(self._s.invites, other.id)
        self._set(self._s.invites, invite.id, invite)

    async def invites(self) -> list[IdentityInvite]:
        rows = [i for i in self._s.invites.values() if i.org_id == self._org]
        return sorted(rows, key=lambda i: (i.created_at, i.id))

    async def take_invite(self, invite_id: UUID) -> bool:
        found = self._s.invites.get(invite_id)
        if found is None or found.org_id != self._org:
            return False
        return self._pop(self._s.invites, invite_id)

    async def human_written(self, ids: Collection[UUID]) -> set[UUID]:
        wanted = set(ids)
        out: set[UUID] = set()
        for e in self._s.events:
            nid = e.node_id
            if (
                e.org_id == self._org
                and nid is not None
                and nid in wanted
                and e.principal_kind is PrincipalKind.USER
            ):
                out.add(nid)
        return out

    async def authors(self, ids: Collection[UUID]) -> dict[UUID, Authors]:
        wanted = set(ids)
        body: dict[UUID, Event] = {}
        result: dict[UUID, Event] = {}
        for e in self._s.events:
            nid = e.node_id
            if e.org_id != self._org or nid is None or nid not in wanted:
                continue
            if e.op == "complete_node":
                newest = result
            elif e.op == "create_node" or (e.op == "update_node" and "body" in (e.after or {})):
                newest = body
            else:
                continue
            if nid not in newest or newest[nid].id < e.id:  # newest by id, as PostgreSQL orders
                newest[nid] = e

        def writer(e: Event | None) -> Writer | None:
            if e is None:
                return None
            p = self._s.principals.get(e.principal_id)
            name = p.name if p is not None else ulid_str(e.principal_id)
            return Writer(principal_id=e.principal_id, name=name, kind=e.principal_kind)

        return {i: Authors(body=writer(body.get(i)), result=writer(result.get(i))) for i in wanted}
