"""Explain: for one node, why it is not ready, and whether it has any path to readiness."""

from __future__ import annotations

from datetime import timedelta

import skift


async def test_ready_node_has_no_reasons(sk: skift.LocalSkift) -> None:
    """Explain on a ready node says it is ready and gives no reasons."""
    p = await sk.create_project("X")
    await sk.patch(p.slug, [skift.CreateNode(title="Free")])
    ex = await sk.explain("x#1")
    assert ex.ready
    assert ex.reasons == ()


async def test_blocked_by_lists_the_open_blockers(sk: skift.LocalSkift) -> None:
    """Blocked by these open nodes: each unsatisfied blocker, with its ref, title and status,
    and nothing about blockers already done."""
    p = await sk.create_project("X")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(alias="a", title="Design"),
            skift.CreateNode(alias="b", title="Budget"),
            skift.CreateNode(alias="c", title="Legal"),
            skift.CreateNode(title="Build", blocked_by=("a", "b", "c")),
        ],
    )
    await sk.complete("x#2")
    ex = await sk.explain("x#4")
    assert not ex.ready
    assert ex.kinds() == ["blocked_by", "blocked_by"]
    assert [(r.detail["ref"], r.detail["title"], r.detail["status"]) for r in ex.reasons] == [
        ("x#1", "Design", "open"),
        ("x#3", "Legal", "open"),
    ]


async def test_open_children(sk: skift.LocalSkift) -> None:
    """Explain names the open children that keep a parent from being ready."""
    p = await sk.create_project("X")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(alias="e", title="Epic"),
            skift.CreateNode(title="one", parent="e"),
            skift.CreateNode(title="two", parent="e"),
        ],
    )
    await sk.complete("x#2")
    ex = await sk.explain("x#1")
    (reason,) = ex.reasons
    assert reason.kind == "open_children"
    assert reason.detail["count"] == 1
    assert reason.detail["refs"] == ["x#3"]


async def test_leased_until_and_by_whom(sk: skift.LocalSkift) -> None:
    """Leased until this time, and by whom."""
    p = await sk.create_project("X")
    await sk.patch(p.slug, [skift.CreateNode(title="Work")])
    bot = sk.acting_as(skift.Agent("bot"))
    claim = await bot.claim("x#1", ttl=timedelta(minutes=10), harness="claude-code")
    ex = await sk.explain("x#1")
    (reason,) = ex.reasons
    assert reason.kind == "leased"
    assert reason.detail["holder"] == "bot"
    assert reason.detail["harness"] == "claude-code"
    assert reason.detail["until"] == claim.lease.expires_at.isoformat()


async def test_held_by_which_hold_whom_and_why(sk: skift.LocalSkift) -> None:
    """Parked by this hold: which hold (on the node, an ancestor or the project), placed by whom, why."""
    p = await sk.create_project("X")
    await sk.patch(
        p.slug,
        [skift.CreateNode(alias="e", title="Epic"), skift.CreateNode(title="Leaf", parent="e")],
    )
    await sk.hold("x#1", reason="waiting for Q3 budget")
    ex = await sk.explain("x#2")
    (reason,) = ex.reasons
    assert reason.kind == "held"
    assert reason.detail["on"] == "x#1"
    assert reason.detail["by"] == "ada"
    assert reason.detail["reason"] == "waiting for Q3 budget"
    await sk.unhold("x#1", reason="budget approved")
    await sk.hold_project(p.slug, reason="freeze")
    (reason,) = (await sk.explain("x#2")).reasons
    assert reason.kind == "held"
    assert "x" in reason.detail["on"]
    assert reason.detail["reason"] == "freeze"


async def test_stalled_dependent_traces_to_the_upstream_hold(sk: skift.LocalSkift) -> None:
    """A held node still blocks its dependents, the cone is not itself held, and Explain on a
    stalled dependent traces to the hold rather than stopping at the blocker."""
    p = await sk.create_project("X")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(alias="a", title="Parked"),
            skift.CreateNode(alias="b", title="Middle", blocked_by=("a",)),
            skift.CreateNode(title="Far downstream", blocked_by=("b",)),
        ],
    )
    await sk.hold("x#1", reason="vendor contract pending")
    node = await sk.get("x#3")
    assert not node.held
    ex = await sk.explain("x#3")
    (reason,) = ex.reasons
    assert reason.kind == "blocked_by"
    assert reason.detail["ref"] == "x#2"
    held = reason.detail["held"]
    assert held["on"] == "x#1"
    assert held["reason"] == "vendor contract pending"
    assert held["by"] == "ada"


async def test_waiting_on_person_for_an_open_gate(sk: skift.LocalSkift) -> None:
    """Waiting on a person: an open gate (assignee_kind user) blocks the node."""
    p = await sk.create_project("X")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(
                alias="g", title="Sign the contract", assignee_kind=skift.AssigneeKind.USER
            ),
            skift.CreateNode(title="Deploy", blocked_by=("g",)),
        ],
    )
    ex = await sk.explain("x#2")
    assert ex.kinds() == ["blocked_by", "waiting_on_person"]
    assert ex.reasons[0].detail["gate"] is True
    assert ex.reasons[1].detail["ref"] == "x#1"
    assert ex.reasons[1].detail["title"] == "Sign the contract"
    assert "no_path" not in ex.kinds()


async def test_no_path_for_a_dropped_gate_blocker(sk: skift.LocalSkift) -> None:
    """A node with no possible path to readiness is detected: blocked by a dropped gate."""
    p = await sk.create_project("X")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(alias="g", title="Approve", assignee_kind=skift.AssigneeKind.USER),
            skift.CreateNode(alias="b", title="Build", blocked_by=("g",)),
            skift.CreateNode(title="Ship", blocked_by=("b",)),
        ],
    )
    await sk.drop("x#1", reason="nobody will approve")
    ex = await sk.explain("x#2")
    assert "no_path" in ex.kinds()
    assert "waiting_on_person" not in ex.kinds()
    # the doom propagates downstream: x#3 waits on x#2, which can never become ready
    far = await sk.explain("x#3")
    (no_path,) = [r for r in far.reasons if r.kind == "no_path"]
    assert "x#1" in no_path.detail["why"]


async def test_no_path_through_an_open_child(sk: skift.LocalSkift) -> None:
    """No path to readiness also when an open child can never become ready."""
    p = await sk.create_project("X")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(alias="g", title="Approve", assignee_kind=skift.AssigneeKind.USER),
            skift.CreateNode(alias="e", title="Epic"),
            skift.CreateNode(title="Child", parent="e", blocked_by=("g",)),
        ],
    )
    await sk.drop("x#1", reason="rejected")
    ex = await sk.explain("x#2")
    assert ex.kinds() == ["open_children", "no_path"]


async def test_no_path_for_an_archived_blocker(sk: skift.LocalSkift) -> None:
    """No path to readiness: blocked by an archived project's node that was never completed."""
    gone = await sk.create_project("Gone")
    live = await sk.create_project("Live")
    await sk.patch(gone.slug, [skift.CreateNode(title="Abandoned")])
    await sk.patch(live.slug, [skift.CreateNode(title="Waits", blocked_by=("gone#1",))])
    assert "no_path" not in (await sk.explain("live#1")).kinds()
    await sk.archive_project(gone.slug)
    ex = await sk.explain("live#1")
    assert ex.kinds() == ["blocked_by", "no_path"]
    assert "gone" in ex.reasons[1].detail["why"]


async def test_archived(sk: skift.LocalSkift) -> None:
    """Explain on a node of an archived project says its project is archived."""
    p = await sk.create_project("Gone")
    await sk.patch(p.slug, [skift.CreateNode(title="Left behind")])
    await sk.archive_project(p.slug)
    ex = await sk.explain("gone#1")
    assert not ex.ready
    (archived,) = [r for r in ex.reasons if r.kind == "archived"]
    assert archived.detail["project"] == "gone"


async def test_closed(sk: skift.LocalSkift) -> None:
    """A done or dropped node is not ready because it is closed, and has no no_path verdict."""
    p = await sk.create_project("X")
    await sk.patch(p.slug, [skift.CreateNode(title="a"), skift.CreateNode(title="b")])
    await sk.complete("x#1")
    await sk.drop("x#2", reason="superseded")
    for ref, status in (("x#1", "done"), ("x#2", "dropped")):
        ex = await sk.explain(ref)
        assert not ex.ready
        assert ex.kinds() == ["closed"]
        assert ex.reasons[0].detail["status"] == status


async def test_several_reasons_at_once(sk: skift.LocalSkift) -> None:
    """Explain gives every reason, not just the first: blocked, with open children, and held."""
    p = await sk.create_project("X")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(alias="a", title="Blocker"),
            skift.CreateNode(alias="n", title="Node", blocked_by=("a",)),
            skift.CreateNode(title="Child", parent="n"),
        ],
    )
    await sk.hold("x#2", reason="later")
    assert sorted((await sk.explain("x#2")).kinds()) == ["blocked_by", "held", "open_children"]


async def test_a_chain_deeper_than_pythons_recursion_is_explained(sk: skift.LocalSkift) -> None:
    """A blocker chain 1,200 deep (past Python's recursion limit) is explained: its tail is
    blocked by the node before it, and a dropped gate at the chain's head dooms it."""
    p = await sk.create_project("X")
    await sk.patch(
        p.slug,
        [skift.CreateNode(alias="gate", title="Sign-off", assignee_kind="user")]
        + [
            skift.CreateNode(alias=f"n{i}", title=f"step {i}", blocked_by=(f"n{i - 1}",))
            if i
            else skift.CreateNode(alias="n0", title="step 0", blocked_by=("gate",))
            for i in range(400)
        ],
    )
    for start in (400, 800):
        await sk.patch(
            p.slug,
            [
                skift.CreateNode(
                    alias=f"n{i}",
                    title=f"step {i}",
                    blocked_by=(f"x#{i + 1}" if i == start else f"n{i - 1}",),
                )
                for i in range(start, start + 400)
            ],
        )
    await sk.drop("x#1", reason="not needed")
    ex = await sk.explain("x#1201")
    assert not ex.ready
    assert ex.kinds() == ["blocked_by", "no_path"]
    assert ex.reasons[0].detail["ref"] == "x#1200"
    assert ex.reasons[1].detail["at"] == "x#1"


async def test_holds_above_the_cone_and_readiness_from_it(sk: skift.LocalSkift) -> None:
    """The parents above the cone are read with it: a hold on a blocker's grandparent (above
    the cone) stalls the blocker, and Explain's ready, derived from the cone, agrees with
    get's (a done blocker, a held ancestor, a leased node)."""
    p = await sk.create_project("X")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(alias="top", title="Top"),
            skift.CreateNode(alias="mid", title="Mid", parent="top"),
            skift.CreateNode(alias="up", title="Upstream", parent="mid"),
            skift.CreateNode(alias="done", title="Done first"),
            skift.CreateNode(alias="down", title="Downstream", blocked_by=("up", "done")),
            skift.CreateNode(alias="free", title="Free", blocked_by=("done",)),
        ],
    )
    await sk.complete("x#4", result="ok")
    await sk.hold("x#1", reason="parked")
    ex = await sk.explain("x#5")
    (blocked,) = ex.reasons
    assert blocked.detail["ref"] == "x#3"
    assert blocked.detail["held"]["on"] == "x#1"
    for ref in ("x#1", "x#2", "x#3", "x#5", "x#6"):
        assert (await sk.explain(ref)).ready == (await sk.get(ref)).ready, ref
    assert (await sk.explain("x#6")).ready
    await sk.unhold("x#1", reason="back")
    assert (await sk.explain("x#3")).ready
    agent = sk.acting_as(skift.Agent("bot"))
    claim = await agent.claim_next()
    ex = await sk.explain(claim.node.ref)
    assert not ex.ready
    assert "leased" in ex.kinds()
