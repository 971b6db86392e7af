"""The two stores agree: a hypothesis state machine drives random work through both.

Readiness and the turn order are the only rules allowed to exist twice (the
reference Python of the in-memory store and the SQL of PostgreSQL). This
machine applies the same random operations — creates with parents and
blockers, edges, reparenting, drops with and without cascade, completes,
reopens, gates, holds, claims, releases and expiry by a moved clock — to both
stores at once and asserts after every step that:

* every operation succeeds on both or fails on both with the same error class;
* the graph stays acyclic over the combined wait relation;
* ready sets (for a person and for an agent), their turn order, held counts,
  every node's derived flags and every node's Explain answer are equal;
* ClaimNext hands both stores' agents the same node.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, ClassVar, TypeVar

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import skift
from skift._engine import _find_cycle  # pyright: ignore[reportPrivateUsage]

T = TypeVar("T")

EXAMPLES = int(os.environ.get("SKIFT_STATE_MACHINE_EXAMPLES", "200"))
PROJECTS = ("alpha", "beta")


def _norm(value: Any) -> Any:
    """Drop what legitimately differs between stores: times, lease ids and sweep ids."""
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items() if k not in ("until", "at", "lease", "group")}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list | tuple):
        return [_norm(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


class TwoStores(RuleBasedStateMachine):
    dsn: str = ""
    counter = 0
    outcomes: ClassVar[Counter[str]] = Counter()

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        TwoStores.counter += 1
        org = f"sm-{os.getpid()}-{TwoStores.counter}"
        self.user: list[skift.LocalSkift] = []
        self.agent: list[skift.LocalSkift] = []
        self.bounded: list[skift.LocalSkift] = []
        for url in ("memory:", self.dsn):
            sk = skift.open(url, principal=skift.User("ada"), org=org)
            self.run(sk.__aenter__())
            self.user.append(sk)
            self.agent.append(sk.acting_as(skift.Agent("bot")))
            # the same store with a tiny held_count bound: bounded counts must agree too
            self.bounded.append(
                skift.LocalSkift(
                    sk.store,
                    principal=skift.User("ada"),
                    org=org,
                    limits=skift.Limits(held_count_bound=1),
                    owns_store=False,
                )
            )
        for slug in PROJECTS:
            self.both(lambda sk, s=slug: sk.create_project(s))
        self.refs: list[str] = []
        self.leases: dict[str, list[str]] = {}
        self.offset = timedelta()
        self.steps = 0

    def run(self, coro: Awaitable[T]) -> T:
        return self.loop.run_until_complete(coro)  # pyright: ignore[reportArgumentType]

    def both(
        self,
        call: Callable[[skift.LocalSkift], Awaitable[T]],
        *,
        agent: bool = False,
        label: str = "read",
    ) -> list[T] | None:
        """Apply one call to both stores; both must succeed, or both fail alike."""
        results: list[T] = []
        errors: list[type[BaseException] | None] = []
        for sk in self.agent if agent else self.user:
            try:
                results.append(self.run(call(sk)))
                errors.append(None)
            except skift.SkiftError as exc:
                errors.append(type(exc))
        assert errors[0] == errors[1], f"memory raised {errors[0]}, postgresql raised {errors[1]}"
        self.tally(f"{label}: {errors[0].__name__ if errors[0] else 'ok'}")
        return results if errors[0] is None else None

    def tally(self, outcome: str) -> None:
        if not outcome.startswith("read"):
            event(outcome)
            TwoStores.outcomes[outcome] += 1

    def teardown(self) -> None:
        for sk in self.user:
            self.run(sk.close())
        self.loop.close()

    # ------------------------------------------------------------------ rules

    def _ref(self, data: st.DataObject, label: str) -> str:
        return data.draw(st.sampled_from(self.refs), label=label)

    @rule(
        data=st.data(),
        count=st.integers(1, 3),
        project=st.sampled_from(PROJECTS),
        gate=st.booleans(),
        priority=st.sampled_from(list(skift.Priority)),
    )
    def create(
        self, data: st.DataObject, count: int, project: str, gate: bool, priority: skift.Priority
    ) -> None:
        ops: list[dict[str, Any]] = []
        for i in range(count):
            op: dict[str, Any] = {
                "op": "create_node",
                "alias": f"n{i}",
                "title": f"work {len(self.refs) + i}",
            }
            if i == 0 and gate:
                op["assignee_kind"] = "user"
            if i == 0:
                op["priority"] = priority.value
            candidates = [f"n{j}" for j in range(i)] + [
                r for r in self.refs if r.startswith(project + "#")
            ]
            if candidates and data.draw(st.booleans(), label="parent?"):
                op["parent"] = data.draw(st.sampled_from(candidates), label="parent")
            all_refs = [f"n{j}" for j in range(i)] + self.refs
            if all_refs and data.draw(st.integers(0, 3), label="blocked?"):
                op["blocked_by"] = [data.draw(st.sampled_from(all_refs), label="blocker")]
            ops.append(op)
        out = self.both(lambda sk: sk.patch(project, ops), label="create")
        if out is not None:
            assert out[0].created == out[1].created
            self.refs.extend(out[0].created.values())

    @precondition(lambda self: len(self.refs) >= 2)  # pyright: ignore[reportUnknownLambdaType, reportUnknownMemberType]
    @rule(data=st.data())
    def add_edge(self, data: st.DataObject) -> None:
        a = self._ref(data, "from")
        b = data.draw(st.sampled_from([r for r in self.refs if r != a]), label="to")
        self.both(
            lambda sk: sk.patch(a.split("#")[0], [{"op": "add_edge", "from": a, "to": b}]),
            label="add_edge",
        )

    @precondition(lambda self: len(self.refs) >= 2)  # pyright: ignore[reportUnknownLambdaType, reportUnknownMemberType]
    @rule(data=st.data())
    def remove_edge(self, data: st.DataObject) -> None:
        a, b = self._ref(data, "from"), self._ref(data, "to")
        self.both(
            lambda sk: sk.patch(a.split("#")[0], [{"op": "remove_edge", "from": a, "to": b}]),
            label="remove_edge",
        )

    @precondition(lambda self: len(self.refs) >= 2)  # pyright: ignore[reportUnknownLambdaType, reportUnknownMemberType]
    @rule(data=st.data(), detach=st.booleans())
    def reparent(self, data: st.DataObject, detach: bool) -> None:
        node = self._ref(data, "node")
        parent = "" if detach else self._ref(data, "parent")
        self.both(
            lambda sk: sk.patch(
                node.split("#")[0], [{"op": "update_node", "node": node, "parent": parent}]
            ),
            label="reparent",
        )

    @precondition(lambda self: bool(self.refs))  # pyright: ignore[reportUnknownLambdaType, reportUnknownMemberType]
    @rule(data=st.data(), cascade=st.none() | st.integers(0, 6))
    def drop(self, data: st.DataObject, cascade: int | None) -> None:
        node = self._ref(data, "node")
        out = self.both(
            lambda sk: sk.drop(node, reason="not needed", cascade=cascade), label="drop"
        )
        if out is not None:
            assert out[0].dropped == out[1].dropped

    @precondition(lambda self: bool(self.refs))  # pyright: ignore[reportUnknownLambdaType, reportUnknownMemberType]
    @rule(data=st.data())
    def complete(self, data: st.DataObject) -> None:
        node = self._ref(data, "node")
        out = self.both(lambda sk: sk.complete(node, result=f"done {node}"), label="complete")
        if out is not None:
            assert [_flags(n) for n in out[0].nodes] == [_flags(n) for n in out[1].nodes]

    @precondition(lambda self: bool(self.refs))  # pyright: ignore[reportUnknownLambdaType, reportUnknownMemberType]
    @rule(data=st.data())
    def reopen(self, data: st.DataObject) -> None:
        node = self._ref(data, "node")
        self.both(lambda sk: sk.reopen(node, reason="review feedback"), label="reopen")

    @precondition(lambda self: bool(self.refs))  # pyright: ignore[reportUnknownLambdaType, reportUnknownMemberType]
    @rule(
        data=st.data(), hold=st.booleans(), project=st.sampled_from([None, None, None, *PROJECTS])
    )
    def hold(self, data: st.DataObject, hold: bool, project: str | None) -> None:
        if project is not None:
            if hold:
                self.both(
                    lambda sk: sk.hold_project(project, reason="parked"), label="hold_project"
                )
            else:
                self.both(
                    lambda sk: sk.unhold_project(project, reason="live again"),
                    label="unhold_project",
                )
            return
        node = self._ref(data, "node")
        if hold:
            self.both(lambda sk: sk.hold(node, reason="not this week"), label="hold")
        else:
            self.both(lambda sk: sk.unhold(node, reason="back on"), label="unhold")

    @precondition(lambda self: bool(self.refs))  # pyright: ignore[reportUnknownLambdaType, reportUnknownMemberType]
    @rule(data=st.data(), scope=st.sampled_from([None, *PROJECTS]), clear=st.booleans())
    def focus(self, data: st.DataObject, scope: str | None, clear: bool) -> None:
        if clear:
            self.both(
                lambda sk: sk.clear_focus(reason="week over", project=scope), label="clear_focus"
            )
            return
        if scope is None:
            keep = data.draw(
                st.lists(st.sampled_from(PROJECTS), max_size=2, unique=True), label="keep"
            )
        else:
            mine = [r for r in self.refs if r.startswith(scope + "#")] or ["#1"]
            keep = data.draw(st.lists(st.sampled_from(mine), max_size=2, unique=True), label="keep")
        out = self.both(lambda sk: sk.focus(keep, reason="this week", project=scope), label="focus")
        if out is not None:
            assert (out[0].held, out[0].released, out[0].parked) == (
                out[1].held,
                out[1].released,
                out[1].parked,
            )

    @precondition(lambda self: bool(self.refs))  # pyright: ignore[reportUnknownLambdaType, reportUnknownMemberType]
    @rule(projects=st.sampled_from([(), ("alpha",), ("beta",), PROJECTS]))
    def claim_next(self, projects: tuple[str, ...]) -> None:
        out = self.both(
            lambda sk: sk.claim_next(projects=list(projects), ttl=timedelta(seconds=60)),
            agent=True,
            label="claim_next",
        )
        if out is not None:
            assert out[0].node.ref == out[1].node.ref, "the stores handed out different nodes"
            # PostgreSQL takes a node with no filter in one step (Tx.take_next_ready) and
            # reads what it hands over before its writes: the same claim as the reference
            assert _handed(out[0]) == _handed(out[1]), "the stores handed it over differently"
            self.leases[out[0].node.ref] = [c.lease.id for c in out]

    @precondition(lambda self: bool(self.refs))  # pyright: ignore[reportUnknownLambdaType, reportUnknownMemberType]
    @rule(data=st.data())
    def claim(self, data: st.DataObject) -> None:
        node = self._ref(data, "node")
        out = self.both(
            lambda sk: sk.claim(node, ttl=timedelta(seconds=60)), agent=True, label="claim"
        )
        if out is not None:
            self.leases[node] = [c.lease.id for c in out]

    @precondition(lambda self: bool(self.leases))  # pyright: ignore[reportUnknownLambdaType, reportUnknownMemberType]
    @rule(data=st.data(), action=st.sampled_from(["release", "complete", "heartbeat", "gate"]))
    def under_lease(self, data: st.DataObject, action: str) -> None:
        node = data.draw(st.sampled_from(sorted(self.leases)), label="leased")
        ids = self.leases[node]
        results: list[type[BaseException] | None] = []
        completed: list[tuple[tuple[Any, ...], ...]] = []
        for i, sk in enumerate(self.agent):
            try:
                if action == "release":
                    self.run(sk.release(node, lease=ids[i], reason="crash"))
                elif action == "complete":
                    done = self.run(sk.complete(node, lease=ids[i], result="agent result"))
                    completed.append(tuple(_flags(n) for n in done.nodes))
                elif action == "heartbeat":
                    self.run(sk.heartbeat(node, lease=ids[i]))
                else:
                    out = self.run(sk.gate(node, lease=ids[i], title="Need a credential"))
                    if i == 0:
                        self.refs.extend(n.ref for n in out.nodes if n.ref not in self.refs)
                results.append(None)
            except skift.SkiftError as exc:
                results.append(type(exc))
        assert results[0] == results[1], f"{action}: memory {results[0]}, postgresql {results[1]}"
        # PostgreSQL reads a lone complete's derived facts with its first reads, before its
        # writes (Tx.expect_complete): the answer must be the reference's
        assert len(set(completed)) <= 1, (
            f"the stores answered the complete differently: {completed}"
        )
        self.tally(f"lease {action}: {results[0].__name__ if results[0] else 'ok'}")

    @rule(minutes=st.sampled_from([0, 2]))
    def move_clock(self, minutes: int) -> None:
        self.offset += timedelta(minutes=minutes)
        for sk in self.user:
            sk.store.set_clock_offset(self.offset)

    # ------------------------------------------------------------- invariants

    @invariant()
    def stores_agree(self) -> None:
        lists = [self.run(sk.list_nodes(limit=500)).nodes for sk in self.user]
        self.check_acyclic(lists)
        flags = [
            [(n.ref, n.status, n.blocked, n.held, n.claimed, n.ready, n.parent) for n in nodes]
            for nodes in lists
        ]
        assert flags[0] == flags[1]
        for agent in (False, True):
            for projects in ((), ("alpha",)):
                pages = self.both(
                    lambda sk, p=projects: sk.ready(projects=list(p), limit=100), agent=agent
                )
                assert pages is not None
                assert [n.ref for n in pages[0].nodes] == [n.ref for n in pages[1].nodes]
                assert pages[0].held_count == pages[1].held_count
                assert (pages[0].held_count_exact, pages[1].held_count_exact) == (True, True)
        full = self.run(self.user[0].ready(limit=1)).held_count
        bounded = [self.run(sk.ready(limit=1)) for sk in self.bounded]
        for b in bounded:
            assert (b.held_count, b.held_count_exact) == (min(full, 1), full <= 1)
        self.tally("held_count " + ("over the bound" if full > 1 else "within the bound"))
        # Explain is the costliest read: a rotating window of nodes per step, so
        # every node is compared often over a run without paying for all each step.
        self.steps += 1
        window = self.refs[-3:] + self.refs[self.steps % max(len(self.refs), 1) :][:3]
        for ref in dict.fromkeys(window):
            ex = self.both(lambda sk, r=ref: sk.explain(r))
            assert ex is not None
            a, b = (_norm(skift.to_json(e)) for e in ex)
            assert a == b, f"Explain of {ref} differs"

    def check_acyclic(self, lists: list[tuple[skift.NodeInfo, ...]]) -> None:
        for sk, nodes in zip(self.user, lists, strict=True):

            async def arcs(
                sk: skift.LocalSkift = sk, nodes: tuple[skift.NodeInfo, ...] = nodes
            ) -> list[tuple[Any, Any]]:
                org = sk._org_id  # pyright: ignore[reportPrivateUsage]
                assert org is not None
                async with sk.store.transaction(org) as tx:
                    ids = [skift.parse_node_ref(n.id).id for n in nodes]
                    return await tx.wait_arcs_from([i for i in ids if i is not None])

            adj: dict[Any, list[Any]] = {}
            for waiter, waited in self.run(arcs()):
                adj.setdefault(waiter, []).append(waited)
            assert _find_cycle(adj) is None


def _flags(n: Any) -> tuple[Any, ...]:
    """A node as a response shows it, but for its times."""
    return (n.ref, n.status, n.blocked, n.held, n.claimed, n.ready, n.parent, n.human_written)


def _handed(c: Any) -> tuple[Any, ...]:
    """What a claim hands over, but for its lease's id and times."""
    n = c.node
    return (
        _flags(n),
        (n.body_author, n.result_author),
        tuple((i.ref, i.result, i.author) for i in c.inputs),
        c.comments.unresolved,
        (c.lease.node, c.lease.holder, c.lease.released_at, c.lease.harness),
    )


@pytest.mark.pg
@pytest.mark.slow
def test_memory_and_postgresql_agree(pg_dsn: str) -> None:
    """Readiness, Explain and claim order are equal on both stores after every random step."""
    TwoStores.dsn = pg_dsn
    run_state_machine_as_test(
        TwoStores,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=12,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            derandomize=False,
        ),
    )
    print("state machine outcomes:", dict(sorted(TwoStores.outcomes.items())))
