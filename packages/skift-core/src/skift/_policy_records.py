"""The records of an organization's stored policy (``skift._org_policy``): what the API shows
and what a store keeps. No engine here, so a remote client loads them without regorus."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import attrs


@attrs.frozen(kw_only=True)
class PolicyModule:
    """One Rego module of an organization's policy: its name (a file name) and source."""

    name: str
    source: str


@attrs.frozen(kw_only=True)
class OrgPolicy:
    """The organization's own Rego modules, layered on the server's base policy.

    No modules: the base policy alone (never set, or reset). ``updated_at`` and
    ``updated_by`` (a principal's name) say who last set or reset it.
    """

    modules: tuple[PolicyModule, ...] = ()
    updated_at: datetime | None = None
    updated_by: str | None = None


@attrs.frozen(kw_only=True)
class StoredPolicy:
    """The store's record of an organization's policy."""

    modules: tuple[tuple[str, str], ...]
    digest: str
    """Names the modules (empty when there are none); what a transaction reads to know
    whether its cached policy is current."""
    updated_at: datetime
    updated_by: UUID
