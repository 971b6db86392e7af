"""The in-memory store's state and the part every transaction mixin shares.

One :class:`MemoryState` holds every organization's rows; a transaction writes
through ``_set``/``_add``/``_discard`` so a failure undoes it from a log.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime
from typing import Any
from uuid import UUID

from . import _memory_webhooks as webhooks
from ._models import (
    Comment,
    Edge,
    Event,
    Identity,
    IdentityInvite,
    Lease,
    Node,
    NodeOrigin,
    Org,
    Principal,
    Project,
)
from ._parts import ArtifactRecord, BlobRecord
from ._policy_records import StoredPolicy
from ._store import (
    StoredRequest,
)
from ._store_records import PruneReport
from ._usage_records import Budget, Rate, UsageRecord

Undo = Callable[[], None]


class MemoryState:
    """Every organization's rows, as the in-memory store keeps them."""

    def __init__(self) -> None:
        self.orgs: dict[UUID, Org] = {}
        self.principals: dict[UUID, Principal] = {}
        self.projects: dict[UUID, Project] = {}
        self.slugs: dict[tuple[UUID, str], UUID] = {}
        self.nodes: dict[UUID, Node] = {}
        self.numbers: dict[tuple[UUID, int], UUID] = {}
        self.edges: dict[tuple[UUID, UUID, str], Edge] = {}
        self.into: dict[UUID, set[UUID]] = {}
        self.out: dict[UUID, set[UUID]] = {}
        self.children: dict[UUID, set[UUID]] = {}
        self.leases: dict[UUID, Lease] = {}
        self.node_leases: dict[UUID, list[UUID]] = {}
        self.requests: dict[tuple[UUID, UUID, str], StoredRequest] = {}
        self.cursors: dict[tuple[UUID, UUID, str], UUID] = {}
        # when each request record was made and each claim cursor last moved (retention)
        self.request_times: dict[tuple[UUID, UUID, str], datetime] = {}
        self.cursor_times: dict[tuple[UUID, UUID, str], datetime] = {}
        self.last_prune: PruneReport | None = None
        self.events: list[Event] = []
        self.identities: dict[UUID, Identity] = {}
        self.invites: dict[UUID, IdentityInvite] = {}
        # usage and cost, artifacts and blob metadata (bytes: MemoryStore.blobs)
        self.usage: dict[UUID, UsageRecord] = {}
        self.rates: dict[tuple[UUID, str], Rate] = {}
        self.org_limits: dict[UUID, dict[str, int]] = {}
        self.org_policies: dict[UUID, StoredPolicy] = {}
        self.budgets: dict[UUID, Budget] = {}
        self.artifacts: dict[UUID, ArtifactRecord] = {}
        self.blobs: dict[tuple[UUID, str], BlobRecord] = {}
        self.comments: dict[UUID, Comment] = {}
        self.secrets: dict[str, bytes] = {}
        self.origins: dict[tuple[UUID, str], NodeOrigin] = {}
        self.webhooks = webhooks.WebhookState()


class MemoryTxBase(webhooks.MemoryWebhooksTx):
    """What every part of a :class:`~skift.MemoryStore` transaction shares: the state,
    the organization, the clock and the undo log."""

    def __init__(self, state: MemoryState, org_id: UUID, now: datetime) -> None:
        self._s = state
        self._org = org_id
        self._now = now
        self._undo: list[Undo] = []
        self.wrote = False
        self._wstate = state
        self._remember = self._set

    @property
    def org_id(self) -> UUID:
        return self._org

    async def expect_identity(
        self, scheme: str, value: str, check: Callable[[Principal | None], None]
    ) -> None:
        for ident in self._s.identities.values():
            if ident.scheme == scheme and ident.value == value and ident.revoked_at is None:
                check(self._s.principals.get(ident.principal_id))
                return
        check(None)

    async def secret(self, name: str) -> bytes:
        return self._s.secrets.setdefault(name, secrets.token_bytes(32))

    def rollback(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()
        self.wrote = False

    def _set(self, mapping: dict[Any, Any], key: Any, value: Any) -> None:
        missing = key not in mapping
        old = mapping.get(key)
        mapping[key] = value
        self.wrote = True
        if missing:
            self._undo.append(lambda: mapping.pop(key, None))
        else:
            self._undo.append(lambda: mapping.__setitem__(key, old))

    def _pop(self, mapping: dict[Any, Any], key: Any) -> bool:
        if key not in mapping:
            return False
        old = mapping.pop(key)
        self.wrote = True
        self._undo.append(lambda: mapping.__setitem__(key, old))
        return True

    def _add(self, index: dict[UUID, set[UUID]], key: UUID, value: UUID) -> None:
        members = index.setdefault(key, set())
        if value not in members:
            members.add(value)
            self._undo.append(lambda: members.discard(value))

    def _discard(self, index: dict[UUID, set[UUID]], key: UUID, value: UUID) -> None:
        members = index.get(key)
        if members is not None and value in members:
            members.discard(value)
            self._undo.append(lambda: members.add(value))

    async def now(self) -> datetime:
        return self._now

    def _project(self, project_id: UUID) -> Project | None:
        p = self._s.projects.get(project_id)
        return p if p is not None and p.org_id == self._org else None

    def _node(self, node_id: UUID) -> Node | None:
        n = self._s.nodes.get(node_id)
        return n if n is not None and n.org_id == self._org else None
