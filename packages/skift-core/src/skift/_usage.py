"""Usage and cost: append-only token records, rates applied at query time, budgets and caps.

- A usage record is ``actual`` (what an attempt consumed) or ``estimate``
  (what someone expects; ``basis`` says from what). Records are never
  changed. A record made under a lease names it, so each attempt's spend
  stays its own; the lease is checked as a fencing token like every write.
- A node's current estimate is its most recent estimate (derived). Rollups
  sum actuals, and current estimates, over a node, its subtree or a project.
- Currency is a rate table per organization: per model, a price per million
  tokens for each token class, in one currency. It is applied when a report
  is read, never stored on a record; a model without a rate is listed as
  unpriced, never counted as free.
- ``budget`` (a project or a node) is reported beside the rollup. ``cap`` (a
  node, set by a person) is enforced at Claim: a node whose subtree, or whose
  capped ancestor's subtree, has spent its cap is refused, and ClaimNext
  skips it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any
from uuid import UUID

import attrs

from ._errors import Invalid, LimitExceeded, Refused
from ._inputs import shown
from ._intent import intent
from ._models import Node, Principal, PrincipalKind, Project
from ._pages import Page, cut, read_limit, read_position
from ._refs import format_ref, new_id, ulid_str
from ._usage_records import (
    TOKEN_FIELDS as TOKEN_FIELDS,
)
from ._usage_records import (
    Budget as Budget,
)
from ._usage_records import (
    Rate as Rate,
)
from ._usage_records import (
    RateInfo as RateInfo,
)
from ._usage_records import (
    TokenTotals as TokenTotals,
)
from ._usage_records import (
    UsageInfo as UsageInfo,
)
from ._usage_records import (
    UsageKind as UsageKind,
)
from ._usage_records import (
    UsageRecord as UsageRecord,
)
from ._usage_records import (
    UsageReport as UsageReport,
)
from ._usage_records import (
    UsageScope as UsageScope,
)
from ._usage_records import (
    UsageTotal as UsageTotal,
)

if TYPE_CHECKING:
    from ._context import Actor, Context
    from ._store import Tx

_MILLION = Decimal(1_000_000)
MAX_TOKENS = 2**63 - 1
"""A token count fits a signed 64-bit integer (PostgreSQL's bigint), and so does every sum
a report gives (see :func:`record_usage`)."""
_CHECKED_TOKENS = 2**32
"""A record whose counts add up to this or more is checked against its project's sums, so
no report's sum passes :data:`MAX_TOKENS` (no attempt spends four billion tokens; below
it, passing the bound takes two billion records, and reports then saturate)."""
MAX_MONEY = Decimal(10**12)
"""No price, budget or cap is over a trillion currency units."""
_CURRENCY = re.compile(r"^[A-Z]{3}$")
_MODEL_CHARS = 200
# ------------------------------------------------------------------ values


def money(value: object, what: str, field: str) -> Decimal:
    """A non-negative, finite amount of money from a Decimal, int, float or string
    (``what`` words it in a refusal, ``field`` names the argument)."""
    if isinstance(value, bool):
        raise Invalid(
            f"{what} {value!r} is not an amount", next="Give a number such as 12.50.", field=field
        )
    try:
        amount = value if isinstance(value, Decimal) else Decimal(str(value).strip())
    except InvalidOperation:
        raise Invalid(
            f"{what} {value!r} is not an amount", next="Give a number such as 12.50.", field=field
        ) from None
    if not amount.is_finite() or amount < 0:
        raise Invalid(
            f"{what} {value!r} must be zero or more",
            next="Give a number such as 12.50.",
            field=field,
        )
    if amount > MAX_MONEY:
        raise Invalid(
            f"{what} {shown(value)} is over {MAX_MONEY:,}",
            next="Give an amount in the currency's units, such as 12.50.",
            field=field,
        )
    return amount


def optional_money(value: object, what: str, field: str) -> Decimal | None:
    """``None`` for unset; an empty string also means "clear" to the caller, handled there."""
    return None if value is None else money(value, what, field)


def _tokens(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        raise Invalid(
            f"{name} is {shown(value)}; token counts are whole numbers from 0 to {MAX_TOKENS}",
            next="Report counts as integers (no currency: rates price them).",
            field=name,
        )
    return value


def _sums(rows: Iterable[UsageTotal], kind: UsageKind) -> dict[str, int]:
    sums: dict[str, int] = dict.fromkeys(TOKEN_FIELDS, 0)
    for r in rows:
        if r.kind is kind:
            for f in TOKEN_FIELDS:
                sums[f] += getattr(r, f)
    return sums


def totals(rows: Iterable[UsageTotal], kind: UsageKind) -> TokenTotals:
    """The sums of one kind, each at most :data:`MAX_TOKENS`.

    Writes keep sums under the bound (:func:`record_usage`); one that got past it
    anyway (records from an archive, two large writes at once) is reported as the
    bound rather than breaking every report of its scope.
    """
    sums = _sums(rows, kind)
    total = sum(sums.values())
    return TokenTotals(
        **{f: min(v, MAX_TOKENS) for f, v in sums.items()}, total=min(total, MAX_TOKENS)
    )


async def _check_headroom(
    tx: Tx, project: Project, kind: UsageKind, counts: dict[str, int]
) -> None:
    """Refuse a large record that would take a sum of its project's report past the bound.

    The project's report sums every record of every node in it, so its sums bound every
    other report's (a node's, a subtree's); ``total`` adds the four classes.
    """
    if sum(counts.values()) < _CHECKED_TOKENS:
        return
    sums = _sums(await tx.usage_totals(UsageScope(project=project.id)), kind)
    after = {f: sums[f] + counts[f] for f in TOKEN_FIELDS}
    after["total"] = sum(after.values())
    for name, value in after.items():
        if value > MAX_TOKENS:
            raise LimitExceeded(
                f"recording this would take {project.slug}'s {kind.value} {name} to "
                f"{value}, past the most a report can sum ({MAX_TOKENS})",
                next="Report the tokens an attempt really used; counts are never currency.",
            )


def price(
    rows: Iterable[UsageTotal], rates: dict[str, Rate], kind: UsageKind
) -> tuple[Decimal, set[str]]:
    """The cost of one kind's rows at these rates, and the models that have no rate."""
    cost = Decimal(0)
    unpriced: set[str] = set()
    for r in rows:
        if r.kind is not kind:
            continue
        rate = rates.get(r.model)
        if rate is None:
            if any(getattr(r, f) for f in TOKEN_FIELDS):
                unpriced.add(r.model)
            continue
        cost += (
            r.input_tokens * rate.input
            + r.output_tokens * rate.output
            + r.cache_read_tokens * rate.cache_read
            + r.cache_write_tokens * rate.cache_write
        ) / _MILLION
    return cost, unpriced


def rate_info(rate: Rate) -> RateInfo:
    return RateInfo(
        model=rate.model,
        input=rate.input,
        output=rate.output,
        cache_read=rate.cache_read,
        cache_write=rate.cache_write,
        currency=rate.currency,
        updated_at=rate.updated_at,
    )


# ------------------------------------------------------------------ rules


async def record_usage(
    e: Context,
    tx: Tx,
    actor: Actor,
    ref: str,
    project_ref: str | None,
    *,
    model: str,
    tokens: dict[str, object],
    estimate: bool,
    basis: str | None,
    lease: str | None,
) -> UsageInfo:
    from ._context import fence, node_facts  # _store imports this module's records

    name = model.strip()
    if not name or len(name) > _MODEL_CHARS:
        raise Invalid(
            f"model {model!r} must be 1 to {_MODEL_CHARS} characters",
            next="Name the model as your provider does, e.g. claude-sonnet-4.",
            field="model",
        )
    counts = {f: _tokens(f, tokens.get(f, 0)) for f in TOKEN_FIELDS}
    kind = UsageKind.ESTIMATE if estimate else UsageKind.ACTUAL
    text = basis.strip() if basis else None
    if text and kind is UsageKind.ACTUAL:
        raise Invalid(
            "basis belongs to estimates only; an actual is what was measured",
            next="Leave basis out, or record the usage as an estimate.",
            field="basis",
        )
    if text and len(text.encode()) > (cap := (await e.sizes(tx)).body_bytes):
        raise Invalid(
            f"basis is over {cap} bytes", next="Say briefly what it rests on.", field="basis"
        )
    node = await e.node_in(tx, ref, project_ref, lock=True)
    project = await tx.project_by_id(node.project_id)
    assert project is not None
    e._writable_project(project)  # pyright: ignore[reportPrivateUsage]
    ref_text = format_ref(project.slug, node.number)
    held = None
    if lease is not None:
        held = await fence(tx, actor, lease, node=node)
    await e.authorize(
        tx,
        actor,
        [
            intent(
                "record_usage",
                node=node_facts(node, ref_text, project.slug, actor, in_my_lease=held is not None),
                usage={"kind": kind.value, "leased": held is not None},
            )
        ],
        held,
    )
    await _check_headroom(tx, project, kind, counts)
    now = await tx.now()
    record = UsageRecord(
        id=new_id(),
        org_id=tx.org_id,
        project_id=node.project_id,
        node_id=node.id,
        lease_id=held.id if held else None,
        principal_id=actor.id,
        model=name,
        kind=kind,
        basis=text or None,
        created_at=now,
        **counts,
    )
    await tx.insert_usage(record)
    if held is not None:  # any write by the holder renews its lease
        await tx.update_lease(attrs.evolve(held, expires_at=max(held.expires_at, now + held.ttl)))
    await tx.append_events(
        [
            await e._event(  # pyright: ignore[reportPrivateUsage]
                tx,
                actor,
                "record_usage",
                project_id=node.project_id,
                node_id=node.id,
                after={
                    "usage": ulid_str(record.id),
                    "kind": kind.value,
                    "model": name,
                    "lease": ulid_str(held.id) if held else None,
                    **counts,
                },
            )
        ]
    )
    return (await usage_infos(tx, [record]))[0]


async def usage_infos(tx: Tx, records: Sequence[UsageRecord]) -> list[UsageInfo]:
    nodes = await tx.nodes_by_id({r.node_id for r in records})
    projects = await tx.projects_by_id({n.project_id for n in nodes.values()})
    people: dict[UUID, Principal] = await tx.principals_by_id({r.principal_id for r in records})
    out: list[UsageInfo] = []
    for r in records:
        n = nodes[r.node_id]
        who = people.get(r.principal_id)
        out.append(
            UsageInfo(
                id=ulid_str(r.id),
                node=format_ref(projects[n.project_id].slug, n.number),
                lease=ulid_str(r.lease_id) if r.lease_id else None,
                principal=who.name if who else ulid_str(r.principal_id),
                principal_kind=(who.kind if who else PrincipalKind.AGENT).value,
                model=r.model,
                input_tokens=r.input_tokens,
                output_tokens=r.output_tokens,
                cache_read_tokens=r.cache_read_tokens,
                cache_write_tokens=r.cache_write_tokens,
                kind=r.kind,
                basis=r.basis,
                created_at=r.created_at,
            )
        )
    return out


async def _report(
    e: Context,
    tx: Tx,
    scope: UsageScope,
    *,
    ref: str,
    title: str,
    budget: Budget | None,
) -> UsageReport:
    rows = await tx.usage_totals(scope)
    rates = {r.model: r for r in await tx.rates()}
    currency = next(iter(rates.values())).currency if rates else None
    cost_actual, unpriced_a = price(rows, rates, UsageKind.ACTUAL)
    cost_estimate, unpriced_e = price(rows, rates, UsageKind.ESTIMATE)
    records = await tx.usage_records(scope, e.limits.page_size)
    return UsageReport(
        ref=ref,
        title=title,
        subtree=scope.subtree,
        actual=totals(rows, UsageKind.ACTUAL),
        estimate=totals(rows, UsageKind.ESTIMATE),
        cost_actual=cost_actual if currency else None,
        cost_estimate=cost_estimate if currency else None,
        currency=currency,
        unpriced_models=tuple(sorted(unpriced_a | unpriced_e)),
        budget=budget.budget if budget else None,
        cap=budget.cap if budget else None,
        records=tuple(await usage_infos(tx, records)),
    )


async def node_usage(
    e: Context, tx: Tx, ref: str, project_ref: str | None, *, subtree: bool
) -> UsageReport:
    node = await e.node_in(tx, ref, project_ref)
    project = await tx.project_by_id(node.project_id)
    assert project is not None
    budgets = await tx.budgets([node.id])
    return await _report(
        e,
        tx,
        UsageScope(node=node.id, subtree=subtree),
        ref=format_ref(project.slug, node.number),
        title=node.title,
        budget=budgets.get(node.id),
    )


async def project_usage(e: Context, tx: Tx, project_ref: str) -> UsageReport:
    project = await e.resolve_project(tx, project_ref)
    budgets = await tx.budgets([project.id])
    return await _report(
        e,
        tx,
        UsageScope(project=project.id),
        ref=project.slug,
        title=project.title,
        budget=budgets.get(project.id),
    )


async def set_rate(
    e: Context,
    tx: Tx,
    actor: Actor,
    model: str,
    prices: dict[str, object],
    currency: str,
) -> RateInfo:
    await e.authorize(tx, actor, [intent("set_rate")])
    name = model.strip()
    if not name or len(name) > _MODEL_CHARS:
        raise Invalid(
            f"model {model!r} must be 1 to {_MODEL_CHARS} characters",
            next="Name the model exactly as usage records name it.",
            field="model",
        )
    cur = currency.strip().upper()
    if not _CURRENCY.match(cur):
        raise Invalid(
            f"currency {currency!r} is not a three-letter code",
            next="Use a code such as USD or EUR.",
            field="currency",
        )
    amounts = {k: money(v, f"the {k.replace('_', '-')} rate", k) for k, v in prices.items()}
    others = [r for r in await tx.rates() if r.model != name and r.currency != cur]
    if others:
        raise Refused(
            f"this organization's rates are in {others[0].currency}; {name} cannot be priced in {cur}",
            next=f"Give the rate in {others[0].currency}: one report sums every model in one currency.",
        )
    rate = Rate(
        org_id=tx.org_id,
        model=name,
        currency=cur,
        updated_by=actor.id,
        updated_at=await tx.now(),
        input=amounts["input"],
        output=amounts["output"],
        cache_read=amounts["cache_read"],
        cache_write=amounts["cache_write"],
    )
    await tx.upsert_rate(rate)
    await tx.append_events(
        [
            await e._event(  # pyright: ignore[reportPrivateUsage]
                tx,
                actor,
                "set_rate",
                after={"model": name, "currency": cur, **{k: str(v) for k, v in amounts.items()}},
            )
        ]
    )
    return rate_info(rate)


async def list_rates(tx: Tx, *, size: int | None = None, page: str | None = None) -> Page[RateInfo]:
    """The rate table by model: every rate when ``size`` is None, else ``size`` of them
    after ``page`` (keyset: a rate set or dropped meanwhile moves no other)."""
    after = read_position("rates", page, (str,))
    got = await tx.rate_page(after=None if after is None else after[0], limit=read_limit(size))
    rows, ends, more = cut("rates", got, size, lambda r: (r.model,))
    return Page([rate_info(r) for r in rows], ends=ends, more=more)


def _money_change(value: object, what: str) -> tuple[bool, Decimal | None]:
    """(changed?, new value) for an update field: None unchanged, "" clears, else an amount."""
    if value is None:
        return False, None
    if isinstance(value, str) and not value.strip():
        return True, None
    return True, money(value, what, what)


async def set_budget(
    tx: Tx, scope_id: UUID, scope: str, *, budget: object = None, cap: object = None
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """Write a budget and/or cap; returns (before, after) of what changed, or None."""
    set_b, new_b = _money_change(budget, "budget")
    set_c, new_c = _money_change(cap, "cap")
    if not (set_b or set_c):
        return None
    old = (await tx.budgets([scope_id])).get(scope_id)
    before = {"budget": old.budget if old else None, "cap": old.cap if old else None}
    after = {
        "budget": new_b if set_b else before["budget"],
        "cap": new_c if set_c else before["cap"],
    }
    changed = [k for k in ("budget", "cap") if before[k] != after[k]]
    if not changed:
        return None
    await tx.set_budget(
        Budget(
            org_id=tx.org_id,
            scope_id=scope_id,
            scope=scope,
            budget=after["budget"],
            cap=after["cap"],
            updated_at=await tx.now(),
        )
    )

    def text(v: object) -> str | None:
        return None if v is None else str(v)

    return {k: text(before[k]) for k in changed}, {k: text(after[k]) for k in changed}


async def _spend(tx: Tx, node_id: UUID, rates: dict[str, Rate]) -> Decimal:
    rows = await tx.usage_totals(UsageScope(node=node_id, subtree=True))
    return price(rows, rates, UsageKind.ACTUAL)[0]


async def check_cap(tx: Tx, node: Node, project: Project) -> None:
    """Refuse a claim of ``node`` when it, or a capped ancestor, has spent its cap."""
    chain = [node, *await tx.ancestors(node.id)]
    budgets = await tx.budgets([n.id for n in chain])
    capped = [(n, budgets[n.id].cap) for n in chain if n.id in budgets]
    capped = [(n, cap) for n, cap in capped if cap is not None]
    if not capped:
        return
    rates = {r.model: r for r in await tx.rates()}
    currency = next(iter(rates.values())).currency if rates else ""
    for holder, cap in capped:
        spend = await _spend(tx, holder.id, rates)
        if spend >= cap:
            on = format_ref(project.slug, holder.number)
            where = "its" if holder.id == node.id else f"{on}'s"
            ref = format_ref(project.slug, node.number)
            raise Refused(
                f"{ref} is over {where} cap: {spend} {currency} spent of a {cap} {currency} cap".replace(
                    "  ", " "
                ),
                next=f"Ask a person to raise the cap on {on}, or take other work; the usage of {on} "
                "and its subtree shows the spend.",
                move={"do": "show_usage", "ref": on},
                spend=str(spend),
                cap=str(cap),
                on=on,
            )


async def capped_out(tx: Tx) -> tuple[UUID, ...]:
    """Every node under a cap that has been spent: ClaimNext skips these."""
    caps = await tx.capped_nodes()
    if not caps:
        return ()
    rates = {r.model: r for r in await tx.rates()}
    out: list[UUID] = []
    for b in caps:
        assert b.cap is not None
        if await _spend(tx, b.scope_id, rates) >= b.cap:
            out.extend(await tx.subtree_ids(b.scope_id))
    return tuple(dict.fromkeys(out))
