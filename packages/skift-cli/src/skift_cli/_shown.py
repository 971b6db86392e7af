"""What ``skift ready`` and ``skift show`` print, given what the server answered.

One place for both ways a command runs: through click (``_commands``) and
through the fast path (``_fast``), which calls the same functions with the
same views, so the two print the same bytes. No click here: the fast path
does not import it. ``emit`` writes a JSON document (``App.emit``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import skift

Emit = Callable[[Any], None]
_NARROW = 80  # _render.NARROW: a narrower table drops and crops columns (rich draws it)


def lease_json(lease: Any) -> dict[str, Any]:
    """SURFACE's lease shape: ``id`` only when the caller holds it."""
    out: dict[str, Any] = {
        "node": lease.node,
        "title": lease.title,
        "holder": lease.holder,
        "harness": lease.harness,
        "agent_ref": lease.agent_ref,
        "expires_at": lease.expires_at.isoformat(),
    }
    if lease.id:
        out["id"] = lease.id
    return out


def ready(pg: skift.ReadyPage, *, as_json: bool, emit: Emit) -> None:
    """A page of ready work: its JSON, or the table and its footer."""
    if as_json:
        import skift

        emit(skift.to_json(pg))
        return
    from . import _plain

    cols = _plain.width()
    if cols is not None and cols >= _NARROW and _plain.ready_table(pg, cols):
        return
    from . import _render

    if pg.nodes:
        _render.out().print(_render.node_table(pg.nodes, turn=True))
    _render.page_footer(pg, what="ready work")


def show(
    n: skift.NodeInfo,
    arts: list[skift.ArtifactInfo],
    blockers: list[str],
    cs: Sequence[skift.CommentInfo],
    *,
    as_json: bool,
    emit: Emit,
) -> None:
    """A node with its artifacts, blockers and comment counts."""
    unresolved = sum(1 for c in cs if c.resolved_at is None)
    if as_json:
        import skift

        lease = None if n.lease is None else lease_json(n.lease)
        if lease is not None:
            lease = {k: lease[k] for k in ("holder", "expires_at", "id") if k in lease}
        emit(
            {
                **skift.to_json(n),
                "lease": lease,
                "blocked_by": blockers,
                "artifacts": skift.to_json(arts),
                "comments": {"count": len(cs), "unresolved": unresolved},
            }
        )
        return
    from . import _plain

    cols = _plain.width()
    if cols is not None and _plain.node_panel(n, arts, blockers, cs, cols):
        return
    from . import _render

    _render.out().print(_render.node_panel(n, blockers=blockers, artifacts=arts))
    if n.lease is not None:
        own = f", lease {n.lease.id}" if n.lease.id else ""
        _render.out().print(
            f"[dim]leased by {n.lease.holder} until "
            f"{n.lease.expires_at:%Y-%m-%d %H:%M:%S}{own}[/dim]"
        )
    if cs:
        _render.out().print(
            f"[dim]{len(cs)} comment(s), {unresolved} unresolved: 'skift comments {n.ref}'[/dim]"
        )
    if n.status == "open" and not n.ready:
        _render.out().print(f"[dim]not ready: 'skift explain {n.ref}' says why[/dim]")
