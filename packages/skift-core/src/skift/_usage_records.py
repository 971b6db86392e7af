"""The shapes of usage and cost: records as a store keeps them, rates, budgets, and reports.

No rules here: recording usage, pricing and caps are ``_usage``.
"""

from __future__ import annotations

import enum
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING
from uuid import UUID

from ._lazy import frozen, on_first_use

TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


class UsageKind(enum.StrEnum):
    ACTUAL = "actual"
    ESTIMATE = "estimate"


# ------------------------------------------------------------------ stored


@frozen(kw_only=True)
class UsageRecord:
    """One append-only record: counts, never currency."""

    id: UUID
    org_id: UUID
    project_id: UUID
    node_id: UUID
    lease_id: UUID | None = None
    principal_id: UUID
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    kind: UsageKind
    basis: str | None = None
    created_at: datetime


@frozen(kw_only=True)
class UsageScope:
    """What a rollup covers: one node (``subtree``: and its descendants), or a project."""

    node: UUID | None = None
    project: UUID | None = None
    subtree: bool = False


@frozen(kw_only=True)
class UsageTotal:
    """Token sums of one kind and model in a scope (estimates: current ones only)."""

    kind: UsageKind
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@frozen(kw_only=True)
class Rate:
    """A model's price per million tokens, per token class, in ``currency``."""

    org_id: UUID
    model: str
    input: Decimal
    output: Decimal
    cache_read: Decimal
    cache_write: Decimal
    currency: str
    updated_by: UUID
    updated_at: datetime


@frozen(kw_only=True)
class Budget:
    """A budget (reported) and a cap (enforced at Claim) on a node, or a budget on a project."""

    org_id: UUID
    scope_id: UUID
    scope: str  # "node" | "project"
    budget: Decimal | None = None
    cap: Decimal | None = None
    updated_at: datetime


# ------------------------------------------------------------------ views


@frozen(kw_only=True)
class UsageInfo:
    """A usage record as a caller sees it."""

    id: str
    node: str
    lease: str | None
    principal: str
    principal_kind: str
    model: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    kind: UsageKind
    basis: str | None
    created_at: datetime


@frozen(kw_only=True)
class TokenTotals:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    total: int = 0


@frozen(kw_only=True)
class UsageReport:
    """A rollup: actual and current-estimate tokens, their cost at today's rates, the budget."""

    ref: str
    title: str
    subtree: bool
    actual: TokenTotals
    estimate: TokenTotals
    cost_actual: Decimal | None
    cost_estimate: Decimal | None
    currency: str | None
    unpriced_models: tuple[str, ...]
    budget: Decimal | None
    cap: Decimal | None
    records: tuple[UsageInfo, ...]


@frozen(kw_only=True)
class RateInfo:
    """A model's rate: price per million tokens of each class."""

    model: str
    input: Decimal
    output: Decimal
    cache_read: Decimal
    cache_write: Decimal
    currency: str
    updated_at: datetime


if not TYPE_CHECKING:
    __getattr__ = on_first_use(globals())
