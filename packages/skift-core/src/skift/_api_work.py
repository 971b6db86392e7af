"""The API for the work protocol: claim, claim-next (with waiting), heartbeat, complete,
release (and preemption), gates, holds and focus.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from . import _leasing
from ._api_graph import GraphApi, request_id_or_new
from ._artifacts import Artifact
from ._artifacts import as_artifact as artifacts_as_artifact
from ._engine import Actor, NodeFilter, filter_from
from ._errors import Invalid, NothingReady
from ._models import AssigneeKind, ReleaseReason
from ._ops import AddEdge, CompleteNode, CreateNode, HoldNode, Op, UnholdNode
from ._refs import ulid_str
from ._session import no_delegation
from ._store import Tx
from ._views import Claim, FocusResult, LeaseInfo, NodeInfo, PatchResult

# How often ClaimNext retries after losing a race for a node to a concurrent claimer.
_CLAIM_ATTEMPTS = 50


class WorkApi(GraphApi):
    """Claims and leases, gates, holds and focus."""

    # ----------------------------------------------------------- work protocol

    async def claim(
        self,
        ref: str,
        *,
        project: str | None = None,
        ttl: timedelta | None = None,
        harness: str = "",
        agent_ref: str = "",
        session_ref: str = "",
        on_behalf_of: str | None = None,
    ) -> Claim:
        no_delegation(on_behalf_of)
        return await self._run(
            lambda tx, a: self.engine.claim(
                tx,
                a,
                ref,
                project,
                ttl=ttl,
                harness=harness,
                agent_ref=agent_ref,
                session_ref=session_ref,
            )
        )

    async def claim_next(
        self,
        *,
        ttl: timedelta | None = None,
        wait: timedelta | None = None,
        harness: str = "",
        agent_ref: str = "",
        session_ref: str = "",
        on_behalf_of: str | None = None,
        **filters: Any,
    ) -> Claim:
        no_delegation(on_behalf_of)
        flt: NodeFilter = filter_from(**filters)
        self.engine.ttl(ttl)
        ceiling = self.engine.limits.claim_wait_ceiling
        deadline = time.monotonic() + min(wait, ceiling).total_seconds() if wait else None
        await self._whoami()
        org_id = self._org_id
        assert org_id is not None
        async with self._long_poll(deadline is not None) as poll:
            while True:
                try:
                    # A claimer that loses a node to a concurrent claim (TransientError) lost it to
                    # a claim that committed, so retrying makes progress; many claimers racing for
                    # the head of one queue need more attempts than other writes.
                    return await self._run(
                        lambda tx, a: self.engine.claim_next(
                            tx,
                            a,
                            flt,
                            ttl=ttl,
                            harness=harness,
                            agent_ref=agent_ref,
                            session_ref=session_ref,
                        ),
                        attempts=_CLAIM_ATTEMPTS,
                    )
                except NothingReady:
                    remaining = (deadline - time.monotonic()) if deadline is not None else 0.0
                    if remaining <= 0:
                        raise
                    await poll.wait(org_id, remaining)

    async def heartbeat(
        self, ref: str, *, lease: str, ttl: timedelta | None = None, project: str | None = None
    ) -> LeaseInfo:
        return await self._run(lambda tx, a: self.engine.heartbeat(tx, a, ref, project, lease, ttl))

    async def complete(
        self,
        ref: str,
        *,
        lease: str | None = None,
        result: str = "",
        artifacts: Sequence[Artifact | Mapping[str, Any]] = (),
        project: str | None = None,
        request_id: str | None = None,
    ) -> PatchResult:
        parts = tuple(artifacts_as_artifact(x, f"artifacts[{i}]") for i, x in enumerate(artifacts))
        return await self._node_patch(
            ref,
            project,
            [CompleteNode(node=ref, result=result, artifacts=parts)],
            lease=lease,
            request_id=request_id,
        )

    async def release(
        self,
        ref: str,
        *,
        lease: str | None = None,
        reason: ReleaseReason | str = ReleaseReason.CRASH,
        project: str | None = None,
        preempt: bool = False,
    ) -> NodeInfo:
        """End the lease on ``ref``: the holder's own (``lease``, a release reason), or, with
        ``preempt=True``, whoever's live lease it is, as a person: ``reason`` is then the
        person's explanation, the release reason is ``preempted``, and the old lease is fenced."""
        if preempt:
            why = str(reason.value if isinstance(reason, ReleaseReason) else reason)
            return await self._run(
                lambda tx, a: _leasing.preempt(self.engine, tx, a, ref, project, why)
            )
        if not lease:
            raise Invalid(
                "a release names the lease it ends",
                next="Pass the lease id the claim returned; a person taking someone else's lease "
                "back preempts it, with a reason.",
                move={"do": "pass_lease"},
                field="lease",
            )
        try:
            why = ReleaseReason(reason)
        except ValueError:
            raise Invalid(
                f"release reason {reason!r} is not one of crash, budget, preempted",
                next="Release with crash, budget or preempted.",
                field="reason",
            ) from None
        if why in (ReleaseReason.COMPLETE, ReleaseReason.EXPIRED, ReleaseReason.GATE):
            raise Invalid(
                f"release reason {why.value!r} is set by skift itself",
                next="Release with crash, budget or preempted; complete with 'complete', file a gate with 'gate'.",
                field="reason",
            )
        return await self._run(lambda tx, a: self.engine.release(tx, a, ref, project, lease, why))

    async def gate(
        self,
        ref: str,
        *,
        lease: str,
        title: str,
        body: str = "",
        project: str | None = None,
        request_id: str | None = None,
    ) -> PatchResult:
        """File a gate (a node a person must complete) blocking ``ref`` and release the lease, atomically."""
        ops: list[Op] = [
            CreateNode(alias="gate", title=title, body=body, assignee_kind=AssigneeKind.USER),
            AddEdge(from_="gate", to=ref),
        ]
        rid = request_id_or_new(request_id)

        async def go(tx: Tx, a: Actor) -> PatchResult:
            proj = await self.engine.resolve_project(tx, project) if project else None
            node = await self.engine.resolve_node(tx, ref, proj)
            fixed: list[Op] = [ops[0], AddEdge(from_="gate", to=ulid_str(node.id))]
            return await self.engine.patch(
                tx,
                a,
                ulid_str(node.project_id),
                fixed,
                request_id=rid,
                lease=lease,
                release_after=ReleaseReason.GATE,
            )

        return await self._run(go, graph_lock=True)

    async def hold(
        self,
        ref: str,
        *,
        reason: str,
        project: str | None = None,
        request_id: str | None = None,
    ) -> PatchResult:
        """Park a node; a retry with the same ``request_id`` returns the first answer."""
        return await self._node_patch(
            ref, project, [HoldNode(node=ref, reason=reason)], lease=None, request_id=request_id
        )

    async def unhold(
        self,
        ref: str,
        *,
        reason: str,
        project: str | None = None,
        request_id: str | None = None,
    ) -> PatchResult:
        """Release a node's hold; a retry with the same ``request_id`` returns the first answer."""
        return await self._node_patch(
            ref, project, [UnholdNode(node=ref, reason=reason)], lease=None, request_id=request_id
        )

    async def focus(
        self,
        keep: Sequence[str],
        *,
        reason: str,
        project: str | None = None,
        request_id: str | None = None,
    ) -> FocusResult:
        """Hold everything outside ``keep``: projects (org scope) or, with ``project``, its nodes.

        Calling it again in a scope replaces that scope's previous sweep in the
        same transaction; holds placed by hand are never touched. A retry with the
        same ``request_id`` returns the first answer and sweeps nothing again.
        """
        rid = request_id_or_new(request_id)
        return await self._run(
            lambda tx, a: self.engine.focus(tx, a, list(keep), reason, project, request_id=rid),
            graph_lock=True,
        )

    async def clear_focus(
        self, *, reason: str, project: str | None = None, request_id: str | None = None
    ) -> FocusResult:
        """Release what the scope's focus sweep held (and nothing else)."""
        rid = request_id_or_new(request_id)
        return await self._run(
            lambda tx, a: self.engine.clear_focus(tx, a, reason, project, request_id=rid),
            graph_lock=True,
        )
