"""Board sign-in codes and sessions in PostgreSQL (``skift.SigninStore``; queries/signin.sql)."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from datetime import timedelta
from typing import Any, Protocol
from uuid import UUID

import skift

from ._queries import q
from ._rows import Conn


class _Pooled(Protocol):
    """What sign-in uses of the store (a ``PgStore``): a pooled connection (an outage
    answered Unavailable) and its clock."""

    _offset: timedelta

    def _connection(self) -> AbstractAsyncContextManager[Conn]: ...


def _record(row: dict[str, Any]) -> skift.SigninRecord:
    return skift.SigninRecord(
        digest=row["digest"],
        kind=skift.SigninKind(row["kind"]),
        principal=skift.Principal(
            id=row["id"],
            org_id=row["org_id"],
            name=row["name"],
            kind=skift.PrincipalKind(row["principal_kind"]),
            created_at=row["principal_created_at"],
        ),
        org=row["org_name"],
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        id=row["signin_id"],
        identity_id=row["identity_id"],
    )


class PgSignins:
    """:class:`skift.SigninStore` over the store's pool, each call one statement."""

    def __init__(self, store: _Pooled) -> None:
        self._store = store

    async def _rows(self, name: str, **params: Any) -> list[dict[str, Any]]:
        store = self._store
        async with store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
            cur = await conn.execute(
                q(name),
                {**params, "offset": store._offset},  # pyright: ignore[reportPrivateUsage]
            )
            return await cur.fetchall()

    async def _one(self, name: str, **params: Any) -> skift.SigninRecord | None:
        rows = await self._rows(name, **params)
        return _record(rows[0]) if rows else None

    async def insert(
        self,
        *,
        digest: str,
        kind: skift.SigninKind,
        principal: skift.Principal,
        org: str,
        ttl: timedelta,
        identity_id: UUID | None = None,
    ) -> skift.SigninRecord:
        got = await self._one(
            "signin_insert",
            digest=digest,
            kind=kind.value,
            org=principal.org_id,
            principal=principal.id,
            ttl=ttl,
            id=skift.new_id(),
            identity=identity_id,
        )
        assert got is not None
        return got

    async def spend(self, digest: str, kind: skift.SigninKind) -> skift.SigninRecord | None:
        return await self._one("signin_spend", digest=digest, kind=kind.value)

    async def live(self, digest: str, kind: skift.SigninKind) -> skift.SigninRecord | None:
        return await self._one("signin_live", digest=digest, kind=kind.value)

    async def sessions(self, principal_id: UUID) -> list[skift.SigninRecord]:
        return [_record(r) for r in await self._rows("signin_sessions", principal=principal_id)]

    async def end_all(self, principal_id: UUID) -> int:
        rows = await self._rows("signin_end_all", principal=principal_id)
        return int(rows[0]["n"]) if rows else 0
