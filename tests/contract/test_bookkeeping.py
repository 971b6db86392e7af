"""A tool's bookkeeping node (kind ``sweep-state``) is neither ready work nor a gate.

The ce-sweep keeps its state, and its write lock, in a node of skift's one
bookkeeping kind (``skift.BOOKKEEPING_KIND``). Ready, ClaimNext and a
person's *Waiting on me* (Ready for gates) leave it out unless the filter's
kinds name it; a listing shows it, and claiming it by reference (the sweep's
lock) works as for any node.
"""

from __future__ import annotations

import pytest

import skift

BK = skift.BOOKKEEPING_KIND


async def _project(sk: skift.LocalSkift) -> str:
    p = await sk.create_project("Sweep")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(
                alias="state", title="sweep state", kind=BK, assignee_kind=skift.AssigneeKind.USER
            ),
            skift.CreateNode(alias="ask", title="Approve", assignee_kind=skift.AssigneeKind.USER),
            skift.CreateNode(alias="work", title="Triage"),
        ],
    )
    return p.slug


async def test_ready_leaves_bookkeeping_out_unless_its_kind_is_asked_for(
    sk: skift.LocalSkift,
) -> None:
    slug = await _project(sk)
    assert sorted(n.title for n in (await sk.ready()).nodes) == ["Approve", "Triage"]
    # a person's Waiting on me: ready gates
    gates = await sk.ready(assignee_kind="user", projects=[slug])
    assert [n.title for n in gates.nodes] == ["Approve"]
    asked = await sk.ready(kinds=[BK])
    assert [n.title for n in asked.nodes] == ["sweep state"]
    both = await sk.ready(kinds=[BK, "task"])
    assert sorted(n.title for n in both.nodes) == ["Approve", "Triage", "sweep state"]
    # it is still ready in its own right, and listed
    assert (await sk.get(f"{slug}#1")).ready
    listed = await sk.list_nodes(projects=[slug])
    assert [n.title for n in listed.nodes] == ["sweep state", "Approve", "Triage"]


async def test_claim_next_never_hands_out_bookkeeping_but_a_ref_claims_it(
    sk: skift.LocalSkift,
) -> None:
    slug = await _project(sk)
    got = [await sk.claim_next(projects=[slug]) for _ in range(2)]
    assert sorted(c.node.title for c in got) == ["Approve", "Triage"]
    with pytest.raises(skift.NothingReady):
        await sk.claim_next(projects=[slug])
    # the sweep's lock: claimed by reference
    lock = await sk.claim(f"{slug}#1")
    assert lock.node.kind == BK
    await sk.release(f"{slug}#1", lease=lock.lease.id, reason="budget")
    # asked for by kind, ClaimNext takes it
    again = await sk.claim_next(projects=[slug], kinds=[BK])
    assert again.node.title == "sweep state"


async def test_a_held_bookkeeping_node_is_not_counted_as_parked_work(
    sk: skift.LocalSkift,
) -> None:
    slug = await _project(sk)
    await sk.hold(f"{slug}#1", reason="sweep paused")
    page = await sk.ready(projects=[slug])
    assert page.held_count == 0
    assert (await sk.ready(projects=[slug], kinds=[BK])).held_count == 1


async def test_claim_next_with_no_filter_at_all_leaves_bookkeeping_out(
    sk: skift.LocalSkift,
) -> None:
    """A filter of nothing (every project, kind and label) takes its own path in PostgreSQL;
    the rule holds there too."""
    p = await sk.create_project("Only state")
    await sk.patch(p.slug, [skift.CreateNode(title="sweep state", kind=BK)])
    assert (await sk.ready()).nodes == ()
    with pytest.raises(skift.NothingReady):
        await sk.claim_next()
    await sk.patch(p.slug, [skift.CreateNode(title="Real work")])
    assert (await sk.claim_next()).node.title == "Real work"


async def test_agent_work_leaves_gates_out_of_a_persons_ready_and_claim_next(
    sk: skift.LocalSkift,
) -> None:
    """``agent_work``: only what an agent may take, whoever asks. A person's Ready and
    ClaimNext include gates; with it they do not (MCP's claim without a ref)."""
    p = await sk.create_project("Gates")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(title="Approve", assignee_kind=skift.AssigneeKind.USER),
            skift.CreateNode(title="Build"),
        ],
    )
    assert sorted(n.title for n in (await sk.ready(projects=[p.slug])).nodes) == [
        "Approve",
        "Build",
    ]
    only = await sk.ready(projects=[p.slug], agent_work=True)
    assert [n.title for n in only.nodes] == ["Build"]
    got = await sk.claim_next(projects=[p.slug], agent_work=True)
    assert got.node.title == "Build"
    with pytest.raises(skift.NothingReady):
        await sk.claim_next(projects=[p.slug], agent_work=True)
    gate = await sk.claim_next(projects=[p.slug])  # asked without it, a person takes the gate
    assert gate.node.title == "Approve"
