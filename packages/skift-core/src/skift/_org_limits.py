"""Size limits an organization sets for itself, under the server's.

The server's :class:`~skift.Limits` are the ceiling: an organization may only
lower a size limit, never raise it (a structural ceiling protects the service,
and one tenant's data is not another's to spend). An unset size is the
server's. The engine reads the effective sizes once per transaction
(:meth:`Context.sizes`) and checks every body, result, comment, part, blob and
artifact against them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ._errors import Invalid
from ._intent import intent
from ._limits import SIZE_LIMITS, Limits, effective

if TYPE_CHECKING:
    from ._context import Actor, Context
    from ._store import Tx


@attrs.frozen(kw_only=True)
class OrgLimits:
    """The size limits in force for an organization.

    Each value is the effective one (the server's, lowered by the
    organization's); ``own`` names those the organization set itself, and
    ``server`` holds the server's values, the ceiling of each.
    """

    body_bytes: int
    result_bytes: int
    comment_bytes: int
    inline_part_bytes: int
    blob_bytes: int
    artifacts_per_node: int
    parts_per_artifact: int
    artifact_metadata_bytes: int
    own: tuple[str, ...] = ()
    server: Mapping[str, int] = attrs.field(factory=dict[str, int])
    # The server's structural limit on operations per patch (not the organization's to
    # set): a client refuses a larger patch before building it. 0 when not known.
    ops_per_patch: int = 0


def view(limits: Limits, own: Mapping[str, int]) -> OrgLimits:
    eff = effective(limits, own)
    return OrgLimits(
        **{k: getattr(eff, k) for k in SIZE_LIMITS},
        own=tuple(k for k in SIZE_LIMITS if k in own),
        server={k: getattr(limits, k) for k in SIZE_LIMITS},
        ops_per_patch=limits.ops_per_patch,
    )


def _value(name: str, value: object, ceiling: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Invalid(
            f"{name} must be a whole number, not {value!r}",
            next=f"Give {name} in its unit, at most {ceiling}; or None for the server's.",
            field=name,
        )
    if value <= 0:
        raise Invalid(
            f"{name} must be more than 0; {value} would refuse everything",
            next=f"Give a value from 1 to {ceiling}, or None to use the server's ({ceiling}).",
            field=name,
        )
    if value > ceiling:
        raise Invalid(
            f"{name} {value} is over the server's limit of {ceiling}; an organization may only lower it",
            next=f"Give at most {ceiling}, or None to use the server's.",
            field=name,
        )
    return value


async def set_org_limits(
    e: Context, tx: Tx, actor: Actor, sizes: Mapping[str, object]
) -> OrgLimits:
    """Set (an int) or unset (None) some of the organization's size limits."""
    await e.authorize(tx, actor, [intent("set_org_limits")])
    unknown = sorted(k for k in sizes if k not in SIZE_LIMITS)
    if unknown:
        raise Invalid(
            f"{', '.join(unknown)} is not a size limit an organization sets",
            next=f"Use one of: {', '.join(SIZE_LIMITS)}.",
            field="limits",
        )
    before = await tx.org_limits()
    after: dict[str, int] = dict(before)
    for name, value in sizes.items():
        if value is None:
            after.pop(name, None)
        else:
            after[name] = _value(name, value, getattr(e.limits, name))
    after = {k: after[k] for k in SIZE_LIMITS if k in after}
    if after != before:
        await tx.set_org_limits(after)
        changed = sorted(k for k in SIZE_LIMITS if before.get(k) != after.get(k))
        old: dict[str, Any] = {k: before.get(k) for k in changed}
        new: dict[str, Any] = {k: after.get(k) for k in changed}
        await tx.append_events(
            [
                await e._event(  # pyright: ignore[reportPrivateUsage]
                    tx, actor, "set_org_limits", before=old, after=new
                )
            ]
        )
        e.forget_sizes(tx)
    return view(e.limits, after)


async def org_limits(e: Context, tx: Tx) -> OrgLimits:
    return view(e.limits, await tx.org_limits())
