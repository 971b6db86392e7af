"""An organization's own Rego, stored with its data and set by its admin.

``skift policy set FILE… --reason R`` stores Rego modules for the caller's
organization; every request of that organization is then decided by the base
policy (the process's: the default, or the ``skift.Policy`` a program passed to
``skift.open``) with those modules layered on top, as
:meth:`skift.Policy.extended` layers modules. ``reset`` goes back to the base
alone. Both are events carrying the reason.

- A set is refused before it takes effect (Invalid, naming the error) when a
  module does not compile, when none of them is in package ``skift.authz``
  (they would decide nothing), or when the base with them on top does not
  evaluate every decision the engine asks for as a set, or when it takes longer
  than the evaluation budget (the ``policy_budget`` limit) on a benchmark set of
  requests (run in a child process, killed past the budget:
  skift._policy.benchmark). At run time the stored modules are evaluated in a
  worker process within the same budget (skift._policy_pool).
- The engine reads the stored digest in each transaction that asks the policy
  (:meth:`Context.policy_in`), so every server over the database applies a
  change from its next transaction; the compiled policy is kept per digest.
- Who may set or reset it is decided by the base policy alone (the default: a
  person), never by the stored modules: a mistaken module cannot lock the
  organization's admins out of fixing it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

from ._errors import Invalid
from ._intent import intent
from ._policy import EVAL_BUDGET, STORED_PREFIX, Policy, benchmark, compiled
from ._policy_records import OrgPolicy, PolicyModule, StoredPolicy

if TYPE_CHECKING:
    from ._context import Actor, Context
    from ._store import Tx

MAX_MODULES = 32
"""At most this many stored modules per organization."""

MAX_SOURCE_BYTES = 256 * 1024
"""Their sources together, in UTF-8 bytes."""

PACKAGE = "data.skift.authz"


def digest_of(modules: Sequence[tuple[str, str]]) -> str:
    if not modules:
        return ""
    return hashlib.sha256(json.dumps(list(modules)).encode()).hexdigest()


def _modules(modules: Mapping[str, str] | Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    pairs = list(modules.items()) if isinstance(modules, Mapping) else list(modules)
    if not pairs:
        raise Invalid(
            "a policy needs at least one module",
            next="Give one or more Rego modules; resetting the policy goes back to the default.",
            move={"do": "reset_policy"},
            field="modules",
        )
    if len(pairs) > MAX_MODULES:
        raise Invalid(
            f"a policy has at most {MAX_MODULES} modules, not {len(pairs)}",
            next="Merge the rules into fewer files.",
            field="modules",
        )
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for name, source in pairs:
        clean = str(name).strip()
        if not clean or len(clean) > 100 or any(c < " " for c in clean):
            raise Invalid(
                f"policy module name {name!r} is not 1 to 100 printable characters",
                next="Name each module after its file, e.g. private.rego.",
                field="modules",
            )
        if clean in seen:
            raise Invalid(
                f"two policy modules are named {clean!r}",
                next="Give each module its own name.",
                field="modules",
            )
        seen.add(clean)
        out.append((clean, str(source)))
    size = sum(len(s.encode()) for _, s in out)
    if size > MAX_SOURCE_BYTES:
        raise Invalid(
            f"the policy's modules are {size} bytes; at most {MAX_SOURCE_BYTES} are stored",
            next="Trim the modules (rules, not data: a list of names belongs in few lines).",
            field="modules",
        )
    return tuple(out)


async def check_modules(
    base: Policy, modules: Sequence[tuple[str, str]], budget: float = EVAL_BUDGET
) -> None:
    """Refuse modules that do not compile, decide nothing, break a decision, or take longer
    than the evaluation ``budget`` (CPU seconds) on the benchmark requests (Invalid; see
    skift._policy)."""
    packages = compiled(modules)[1]  # the engine is dropped here, never named by this frame
    if PACKAGE not in packages:
        raise Invalid(
            "no module is in package skift.authz, so the policy would decide nothing",
            next="Start the module with 'package skift.authz' and add denials to 'deny'.",
            field="modules",
        )
    candidate = Policy(
        [*base.modules, *((STORED_PREFIX + n, s) for n, s in modules)], budgeted=True
    )
    await benchmark(candidate, budget)


def view(stored: StoredPolicy | None, names: Mapping[UUID, str]) -> OrgPolicy:
    if stored is None:
        return OrgPolicy()
    return OrgPolicy(
        modules=tuple(PolicyModule(name=n, source=s) for n, s in stored.modules),
        updated_at=stored.updated_at,
        updated_by=names.get(stored.updated_by),
    )


async def _view(tx: Tx, stored: StoredPolicy | None) -> OrgPolicy:
    if stored is None:
        return OrgPolicy()
    who = await tx.principals_by_id([stored.updated_by])
    return view(stored, {i: p.name for i, p in who.items()})


async def show_policy(tx: Tx) -> OrgPolicy:
    """The organization's stored modules (any principal of it may read them)."""
    return await _view(tx, await tx.org_policy())


async def set_policy(
    e: Context,
    tx: Tx,
    actor: Actor,
    modules: Mapping[str, str] | Sequence[tuple[str, str]],
    reason: str | None,
) -> OrgPolicy:
    """Replace the organization's stored modules (checked first; an event with the reason)."""
    e.authorize_base(await e.current(tx, actor), [intent("set_policy")])
    why = e._reason(reason, "policy change")  # pyright: ignore[reportPrivateUsage]
    wanted = _modules(modules)
    await check_modules(e.base_policy, wanted, e.limits.policy_budget.total_seconds())
    return await _store(e, tx, actor, wanted, why, "set_policy")


async def reset_policy(e: Context, tx: Tx, actor: Actor, reason: str | None) -> OrgPolicy:
    """Drop the organization's stored modules: the base policy alone decides again."""
    e.authorize_base(await e.current(tx, actor), [intent("set_policy")])
    why = e._reason(reason, "policy reset")  # pyright: ignore[reportPrivateUsage]
    return await _store(e, tx, actor, (), why, "reset_policy")


async def _store(
    e: Context,
    tx: Tx,
    actor: Actor,
    modules: tuple[tuple[str, str], ...],
    reason: str,
    op: str,
) -> OrgPolicy:
    before = await tx.org_policy()
    digest = digest_of(modules)
    if (before.digest if before else "") == digest:
        return await _view(tx, before)  # nothing changes: no write, no event
    stored = StoredPolicy(
        modules=modules, digest=digest, updated_at=await tx.now(), updated_by=actor.id
    )
    await tx.set_org_policy(stored)
    if (layer := e.base_policy.cached_layer(digest)) is not None:
        layer.clear_trip(tx.org_id)  # set anew: evaluated again (and held to the budget)
    old: dict[str, Any] = {"modules": [n for n, _ in before.modules] if before else []}
    new: dict[str, Any] = {"modules": [{"name": n, "source": s} for n, s in modules]}
    await tx.append_events(
        [
            await e._event(  # pyright: ignore[reportPrivateUsage]
                tx, actor, op, reason=reason, before=old, after=new
            )
        ]
    )
    e.forget_policy(tx)
    return view(stored, {actor.id: actor.principal.name})
