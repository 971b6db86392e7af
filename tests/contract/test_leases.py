"""Leases: claim, fencing, heartbeat, complete, release, gate-and-release, ClaimNext and its turn order."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

import skift

if TYPE_CHECKING:
    from conftest import Snap

MIN = timedelta(minutes=1)


async def ready_refs(sk: skift.LocalSkift, **filters: Any) -> list[str]:
    return sorted(n.ref for n in (await sk.ready(**filters)).nodes)


@pytest.fixture
async def bot(sk: skift.LocalSkift) -> skift.LocalSkift:
    """An agent on the same store, with a project w holding two independent nodes."""
    await sk.create_project("W")
    await sk.patch("w", [skift.CreateNode(title="First"), skift.CreateNode(title="Second")])
    return sk.acting_as(skift.Agent("bot"))


async def test_claim_returns_a_lease(sk: skift.LocalSkift, bot: skift.LocalSkift) -> None:
    """Claim returns a lease whose id is the fencing token, with holder, TTL-bounded expiry and
    placement (harness, agent_ref, session_ref); the node leaves Ready."""
    claim = await bot.claim(
        "w#1",
        ttl=5 * MIN,
        harness="claude-code",
        agent_ref="https://agents.example/a",
        session_ref="s-1",
    )
    assert claim.node.ref == "w#1"
    assert claim.node.claimed
    assert not claim.node.ready
    lease = claim.lease
    assert skift.parse_node_ref(lease.id).id is not None  # a ULID
    assert lease.holder == "bot"
    assert lease.node == "w#1"
    assert lease.expires_at - lease.created_at == 5 * MIN
    assert (lease.harness, lease.agent_ref, lease.session_ref) == (
        "claude-code",
        "https://agents.example/a",
        "s-1",
    )
    assert lease.released_at is None
    assert claim.comments.unresolved == 0
    assert await ready_refs(sk) == ["w#2"]


async def test_claim_default_ttl(sk: skift.LocalSkift, bot: skift.LocalSkift) -> None:
    """Without a requested TTL, a lease gets the default."""
    claim = await bot.claim("w#1")
    assert claim.lease.expires_at - claim.lease.created_at == skift.DEFAULT_LIMITS.lease_ttl_default


async def test_ttl_not_positive_is_invalid(
    sk: skift.LocalSkift, bot: skift.LocalSkift, snap: Snap
) -> None:
    """A TTL of zero or less is invalid input, naming the bounds; nothing is claimed."""
    before = await snap(sk)
    for ttl in (timedelta(0), -MIN):
        with pytest.raises(skift.Invalid) as ei:
            await bot.claim("w#1", ttl=ttl)
        assert "TTL" in ei.value.message
        with pytest.raises(skift.Invalid):
            await bot.claim_next(ttl=ttl)
    assert await snap(sk) == before


async def test_huge_ttl_clamped_to_the_ceiling(sk: skift.LocalSkift, bot: skift.LocalSkift) -> None:
    """An unbounded TTL defeats expiry: the server clamps a huge TTL to its ceiling."""
    claim = await bot.claim("w#1", ttl=timedelta(days=365))
    assert claim.lease.expires_at - claim.lease.created_at == skift.DEFAULT_LIMITS.lease_ttl_ceiling


async def test_one_live_lease_per_node(sk: skift.LocalSkift, bot: skift.LocalSkift) -> None:
    """One live lease per node: a second claim is refused while the first lives, saying who holds it."""
    await bot.claim("w#1")
    with pytest.raises(skift.Refused) as ei:
        await sk.claim("w#1")
    assert "leased by bot" in ei.value.message
    assert ei.value.next


async def test_claim_of_a_blocked_node_says_why(
    sk: skift.LocalSkift, bot: skift.LocalSkift, snap: Snap
) -> None:
    """Claiming one named node that is not ready is a refusal that says why and names the next move."""
    await sk.patch("w", [skift.CreateNode(title="Third", blocked_by=("#1",))])
    before = await snap(sk)
    with pytest.raises(skift.Refused) as ei:
        await bot.claim("w#3")
    assert "blocked by w#1" in ei.value.message
    assert "w#1" in ei.value.next
    assert await snap(sk) == before


async def test_claim_of_a_closed_node_is_refused(
    sk: skift.LocalSkift, bot: skift.LocalSkift
) -> None:
    """A done node cannot be claimed; the refusal says to reopen it if the work must be redone."""
    await sk.complete("w#1")
    with pytest.raises(skift.Refused) as ei:
        await bot.claim("w#1")
    assert "done" in ei.value.message
    assert "reopen" in ei.value.next.lower()


async def test_agent_may_not_claim_a_gate(
    sk: skift.LocalSkift, bot: skift.LocalSkift, snap: Snap
) -> None:
    """An agent may not claim a gate, and the refusal says a person must act on it; ClaimNext never
    hands a gate to an agent, so an agent whose only work is gates gets nothing ready."""
    await sk.patch(
        "w",
        [skift.UpdateNode(node="#1", assignee_kind="user"), skift.DropNode(node="#2", reason="x")],
    )
    before = await snap(sk)
    with pytest.raises(skift.Refused) as ei:
        await bot.claim("w#1")
    assert "person" in ei.value.message
    with pytest.raises(skift.NothingReady):
        await bot.claim_next()
    assert await snap(sk) == before
    assert (await sk.claim_next()).node.ref == "w#1"


async def test_claim_next_on_nothing(sk: skift.LocalSkift, bot: skift.LocalSkift) -> None:
    """ClaimNext with nothing matching ready is NothingReady, naming the next move."""
    with pytest.raises(skift.NothingReady) as ei:
        await bot.claim_next(projects=["w"], kinds=["bug"])
    assert ei.value.next
    await bot.claim_next()
    await bot.claim_next()
    with pytest.raises(skift.NothingReady):
        await bot.claim_next()


async def test_claim_next_takes_priority_then_age(
    sk: skift.LocalSkift, bot: skift.LocalSkift
) -> None:
    """Within a project, ClaimNext takes priority then age."""
    await sk.patch("w", [skift.CreateNode(title="Urgent", priority=skift.Priority.P0)])
    assert [(await bot.claim_next()).node.ref for _ in range(3)] == ["w#3", "w#1", "w#2"]


async def test_claim_next_alternates_projects(sk: skift.LocalSkift) -> None:
    """Across two projects, consecutive ClaimNext calls alternate projects (one node per project
    per pass), and Ready presents the same order the claims then follow."""
    await sk.create_project("Alpha")
    await sk.create_project("Beta")
    await sk.patch("alpha", [skift.CreateNode(title=f"a{i}") for i in range(3)])
    await sk.patch("beta", [skift.CreateNode(title=f"b{i}") for i in range(3)])
    bot = sk.acting_as(skift.Agent("bot"))
    order = [n.ref for n in (await bot.ready()).nodes]
    claimed = [(await bot.claim_next()).node.ref for _ in range(6)]
    assert claimed == order
    projects = [r.split("#")[0] for r in claimed]
    assert all(projects[i] != projects[i + 1] for i in range(5))


async def test_claim_next_one_project_filter(sk: skift.LocalSkift) -> None:
    """A one-project filter takes only from that project."""
    await sk.create_project("Alpha")
    await sk.create_project("Beta")
    await sk.patch("alpha", [skift.CreateNode(title="a")])
    await sk.patch("beta", [skift.CreateNode(title=f"b{i}") for i in range(2)])
    bot = sk.acting_as(skift.Agent("bot"))
    assert [(await bot.claim_next(projects=["beta"])).node.ref for _ in range(2)] == [
        "beta#1",
        "beta#2",
    ]
    with pytest.raises(skift.NothingReady):
        await bot.claim_next(projects=["beta"])


async def test_claim_next_with_wait_returns_work_that_appears(
    sk: skift.LocalSkift, bot: skift.LocalSkift
) -> None:
    """With wait, ClaimNext blocks until matching work is available and returns it already claimed."""
    await bot.claim_next()
    await bot.claim_next()
    waiter = asyncio.create_task(bot.claim_next(wait=timedelta(seconds=5)))
    await asyncio.sleep(0.05)
    assert not waiter.done()
    await sk.patch("w", [skift.CreateNode(title="New work")])
    claim = await asyncio.wait_for(waiter, timeout=5)
    assert claim.node.ref == "w#3"
    assert claim.lease.holder == "bot"


async def test_claim_next_wait_runs_out(sk: skift.LocalSkift, bot: skift.LocalSkift) -> None:
    """A ClaimNext whose wait runs out is NothingReady."""
    with pytest.raises(skift.NothingReady):
        await bot.claim_next(kinds=["bug"], wait=timedelta(milliseconds=100))


async def test_heartbeat_renews(sk: skift.LocalSkift, bot: skift.LocalSkift) -> None:
    """Heartbeat renews the lease explicitly: a heartbeating holder keeps the node past its first TTL."""
    claim = await bot.claim("w#1", ttl=5 * MIN)
    sk.store.set_clock_offset(4 * MIN)
    renewed = await bot.heartbeat("w#1", lease=claim.lease.id)
    assert renewed.id == claim.lease.id
    assert renewed.expires_at > claim.lease.expires_at
    sk.store.set_clock_offset(8 * MIN)
    assert (await sk.get("w#1")).claimed
    await bot.complete("w#1", lease=claim.lease.id, result="finished in time")
    assert (await sk.get("w#1")).status is skift.Status.DONE


async def test_heartbeat_renews_by_the_ttl_not_more(
    sk: skift.LocalSkift, bot: skift.LocalSkift
) -> None:
    """TTL is requested per claim and bounded by the server: each heartbeat renews for that TTL,
    so a worker that stops heartbeating loses its lease one TTL later, however long it ran."""
    claim = await bot.claim("w#1", ttl=5 * MIN)
    sk.store.set_clock_offset(4 * MIN)
    first = await bot.heartbeat("w#1", lease=claim.lease.id)
    sk.store.set_clock_offset(8 * MIN)
    second = await bot.heartbeat("w#1", lease=claim.lease.id)
    assert second.expires_at - first.expires_at <= 4 * MIN + timedelta(seconds=5)


async def test_heartbeat_with_a_new_ttl(sk: skift.LocalSkift, bot: skift.LocalSkift) -> None:
    """A heartbeat may ask for a new TTL, bounded like any other."""
    claim = await bot.claim("w#1", ttl=5 * MIN)
    renewed = await bot.heartbeat("w#1", lease=claim.lease.id, ttl=20 * MIN)
    assert renewed.expires_at - claim.lease.created_at >= 20 * MIN
    with pytest.raises(skift.Invalid):
        await bot.heartbeat("w#1", lease=claim.lease.id, ttl=timedelta(0))


async def test_write_by_the_holder_renews(sk: skift.LocalSkift, bot: skift.LocalSkift) -> None:
    """Any write to the node by the holder renews the lease."""
    claim = await bot.claim("w#1", ttl=5 * MIN)
    sk.store.set_clock_offset(4 * MIN)
    await bot.patch("w", [skift.UpdateNode(node="#1", body="progress notes")], lease=claim.lease.id)
    sk.store.set_clock_offset(8 * MIN)
    await bot.heartbeat("w#1", lease=claim.lease.id)


async def test_expired_lease_is_fenced_off(
    sk: skift.LocalSkift, bot: skift.LocalSkift, snap: Snap
) -> None:
    """The store checks the lease is current and unexpired: after expiry, heartbeat, complete,
    release and a patch under it are FencingErrors, even if nobody reclaimed the node."""
    claim = await bot.claim("w#1", ttl=MIN)
    sk.store.set_clock_offset(2 * MIN)
    lease = claim.lease.id
    before = await snap(sk)
    with pytest.raises(skift.FencingError) as ei:
        await bot.heartbeat("w#1", lease=lease)
    assert "expired" in ei.value.message
    assert "claim" in ei.value.next
    with pytest.raises(skift.FencingError):
        await bot.complete("w#1", lease=lease, result="too late")
    with pytest.raises(skift.FencingError):
        await bot.release("w#1", lease=lease)
    with pytest.raises(skift.FencingError):
        await bot.patch("w", [skift.UpdateNode(node="#1", title="late")], lease=lease)
    assert await snap(sk) == before
    assert (await sk.get("w#1")).ready


async def test_stale_token_after_reclaim(sk: skift.LocalSkift, bot: skift.LocalSkift) -> None:
    """Fencing, not the principal, decides: after expiry and a reclaim by the same principal, a late
    write from the abandoned attempt is rejected and the new attempt's work stands."""
    old = await bot.claim("w#1", ttl=MIN)
    sk.store.set_clock_offset(2 * MIN)
    new = await bot.claim("w#1", ttl=10 * MIN)
    assert new.lease.id != old.lease.id
    for call in (
        bot.heartbeat("w#1", lease=old.lease.id),
        bot.complete("w#1", lease=old.lease.id, result="stale result"),
        bot.release("w#1", lease=old.lease.id),
        bot.patch("w", [skift.UpdateNode(node="#1", title="stale")], lease=old.lease.id),
    ):
        with pytest.raises(skift.FencingError):
            await call
    await bot.complete("w#1", lease=new.lease.id, result="fresh result")
    assert (await sk.get("w#1")).result == "fresh result"
    history = await sk.leases("w#1")
    assert [lease.id for lease in history] == [old.lease.id, new.lease.id]
    assert [lease.release_reason for lease in history] == [
        skift.ReleaseReason.EXPIRED,
        skift.ReleaseReason.COMPLETE,
    ]


async def test_lease_of_another_node_is_fenced_off(
    sk: skift.LocalSkift, bot: skift.LocalSkift
) -> None:
    """A lease fences one node: it does not let its holder heartbeat or complete another."""
    claim = await bot.claim("w#1")
    with pytest.raises(skift.FencingError):
        await bot.heartbeat("w#2", lease=claim.lease.id)
    with pytest.raises(skift.FencingError):
        await bot.heartbeat("w#1", lease="not-a-lease")


async def test_complete_under_the_lease_releases_it(
    sk: skift.LocalSkift, bot: skift.LocalSkift
) -> None:
    """Complete carries the lease; it records the result and ends the lease with reason complete."""
    claim = await bot.claim("w#1")
    res = await bot.complete("w#1", lease=claim.lease.id, result="## Done")
    assert res.nodes[0].status is skift.Status.DONE
    assert not res.nodes[0].claimed
    (lease,) = await sk.leases("w#1")
    assert lease.release_reason is skift.ReleaseReason.COMPLETE
    assert lease.released_at is not None


async def test_retried_complete_under_a_lease(sk: skift.LocalSkift, bot: skift.LocalSkift) -> None:
    """A patch carries its request id, so a retried complete returns the original response even
    though the lease has since ended."""
    claim = await bot.claim("w#1")
    first = await bot.complete("w#1", lease=claim.lease.id, result="r", request_id="c-1")
    again = await bot.complete("w#1", lease=claim.lease.id, result="r", request_id="c-1")
    assert again.nodes[0].ref == first.nodes[0].ref
    assert again.request_id == "c-1"


async def test_release(sk: skift.LocalSkift, bot: skift.LocalSkift) -> None:
    """Release ends the lease with a reason (crash, budget, preempted); the node returns to Ready
    and the release is an event."""
    claim = await bot.claim("w#1")
    node = await bot.release("w#1", lease=claim.lease.id, reason="budget")
    assert node.ready
    assert await ready_refs(sk) == ["w#1", "w#2"]
    (lease,) = await sk.leases("w#1")
    assert lease.release_reason is skift.ReleaseReason.BUDGET
    last = (await sk.events(ref="w#1"))[-1]
    assert (last.op, last.reason, last.principal) == ("release", "budget", "bot")
    with pytest.raises(skift.FencingError):
        await bot.release("w#1", lease=claim.lease.id)


async def test_release_reasons_set_by_skift_are_refused(
    sk: skift.LocalSkift, bot: skift.LocalSkift
) -> None:
    """complete, gate and expired are release reasons skift sets itself; a caller cannot claim them."""
    claim = await bot.claim("w#1")
    for reason in ("complete", "gate", "expired"):
        with pytest.raises(skift.Invalid):
            await bot.release("w#1", lease=claim.lease.id, reason=reason)
    assert (await sk.get("w#1")).claimed


async def test_unknown_release_reason_is_invalid(
    sk: skift.LocalSkift, bot: skift.LocalSkift, snap: Snap
) -> None:
    """A release reason outside the list is bad input: Invalid, naming the reasons a caller may
    give, and the lease stays."""
    claim = await bot.claim("w#1")
    before = await snap(sk)
    with pytest.raises(skift.Invalid) as info:
        await bot.release("w#1", lease=claim.lease.id, reason="bored")
    assert "crash" in info.value.next
    assert await snap(sk) == before


async def test_write_to_a_leased_node_without_its_lease(
    sk: skift.LocalSkift, bot: skift.LocalSkift, snap: Snap
) -> None:
    """A readiness-changing mutation against a leased node without its lease is a Conflict (from
    anyone, its holder included), and nothing is written."""
    await bot.claim("w#1")
    before = await snap(sk)
    for ops in (
        [skift.CompleteNode(node="#1")],
        [skift.DropNode(node="#1", reason="x")],
        [skift.AddEdge(from_="#2", to="#1")],
        [skift.CreateNode(title="child", parent="#1")],
    ):
        with pytest.raises(skift.Conflict) as ei:
            await sk.patch("w", ops)
        assert "leased by bot" in ei.value.message
        assert ei.value.next
    with pytest.raises(skift.Conflict):
        await bot.patch("w", [skift.CompleteNode(node="#1")])
    assert await snap(sk) == before


async def test_holder_decomposes_under_its_lease(
    sk: skift.LocalSkift, bot: skift.LocalSkift
) -> None:
    """The lease holder's own writes under its lease may change its node's readiness: filing
    children under it (decomposition)."""
    claim = await bot.claim("w#1")
    res = await bot.patch(
        "w",
        [
            skift.CreateNode(alias="x", title="Part x", parent="#1"),
            skift.CreateNode(title="Part y", parent="#1"),
        ],
        lease=claim.lease.id,
    )
    assert res.created == {"x": "w#3"}
    assert "w#3" in await ready_refs(sk)


async def test_gate_and_release(sk: skift.LocalSkift, bot: skift.LocalSkift) -> None:
    """Filing a gate and releasing the lease is one atomic operation: it creates a user node
    blocking the leased node and releases the lease with reason gate."""
    claim = await bot.claim("w#1")
    res = await bot.gate(
        "w#1", lease=claim.lease.id, title="Put the API key in the vault", body="For staging."
    )
    assert res.created == {"gate": "w#3"}
    gate = await sk.get("w#3")
    assert gate.assignee_kind is skift.AssigneeKind.USER
    assert gate.body == "For staging."
    assert gate.ready
    node = await sk.get("w#1")
    assert not node.claimed
    assert node.blocked
    (lease,) = await sk.leases("w#1")
    assert lease.release_reason is skift.ReleaseReason.GATE
    ex = await sk.explain("w#1")
    assert "waiting_on_person" in ex.kinds()
    assert await ready_refs(bot) == ["w#2"]
    assert await ready_refs(sk) == ["w#2", "w#3"]
    await sk.complete("w#3", result="Key placed")
    again = await bot.claim("w#1")
    assert again.node.context_id == claim.node.context_id
    assert [(i.ref, i.result, i.author) for i in again.inputs] == [("w#3", "Key placed", "ada")]


async def test_gate_with_a_stale_lease_writes_nothing(
    sk: skift.LocalSkift, bot: skift.LocalSkift, snap: Snap
) -> None:
    """Gate-and-release is fenced like any write: with an expired lease nothing is filed."""
    claim = await bot.claim("w#1", ttl=MIN)
    sk.store.set_clock_offset(2 * MIN)
    before = await snap(sk)
    with pytest.raises(skift.FencingError):
        await bot.gate("w#1", lease=claim.lease.id, title="Too late")
    assert await snap(sk) == before


async def test_context_id_shared_by_every_attempt(
    sk: skift.LocalSkift, bot: skift.LocalSkift
) -> None:
    """A node accumulates many leases, one per attempt, and every attempt shares the node's context id."""
    first = await bot.claim("w#1", harness="h1", agent_ref="a1")
    await bot.release("w#1", lease=first.lease.id, reason="crash")
    second = await bot.claim("w#1", harness="h2", agent_ref="a2")
    assert first.node.context_id == second.node.context_id
    history = await sk.leases("w#1")
    assert [(lease.holder, lease.harness, lease.agent_ref) for lease in history] == [
        ("bot", "h1", "a1"),
        ("bot", "h2", "a2"),
    ]


async def test_sweep_records_expiry(sk: skift.LocalSkift, bot: skift.LocalSkift) -> None:
    """An expired lease stops counting at once; a sweep records the expiry as an event."""
    await bot.claim("w#1", ttl=MIN)
    await bot.claim("w#2", ttl=10 * MIN)
    sk.store.set_clock_offset(2 * MIN)
    assert await ready_refs(sk) == ["w#1"]
    assert await sk.sweep_expired() == 1
    assert [e.op for e in await sk.events(ref="w#1")][-1] == "expire_lease"
    (lease,) = await sk.leases("w#1")
    assert lease.release_reason is skift.ReleaseReason.EXPIRED
    assert await sk.sweep_expired() == 0


async def test_inputs_are_predecessors_results(sk: skift.LocalSkift, bot: skift.LocalSkift) -> None:
    """Results of all blocking predecessors are the inputs a downstream claim receives,
    attributed to who completed them."""
    await sk.patch("w", [skift.CreateNode(title="Synthesis", blocked_by=("#1", "#2"))])
    c1 = await bot.claim("w#1")
    await bot.complete("w#1", lease=c1.lease.id, result="finding one")
    await sk.complete("w#2", result="finding two")
    claim = await bot.claim("w#3")
    assert [(i.ref, i.title, i.result, i.author) for i in claim.inputs] == [
        ("w#1", "First", "finding one", "bot"),
        ("w#2", "Second", "finding two", "ada"),
    ]


async def test_turn_rotates_per_principal(sk: skift.LocalSkift) -> None:
    """The turn rotates per principal: one agent's claims do not advance another's turn."""
    await sk.create_project("Alpha")
    await sk.create_project("Beta")
    await sk.patch("alpha", [skift.CreateNode(title=f"a{i}") for i in range(2)])
    await sk.patch("beta", [skift.CreateNode(title=f"b{i}") for i in range(2)])
    one = sk.acting_as(skift.Agent("one"))
    two = sk.acting_as(skift.Agent("two"))
    first = (await one.claim_next()).node.project
    assert (await two.claim_next()).node.project == first
    assert (await one.claim_next()).node.project != first


async def test_gate_with_another_nodes_lease_writes_nothing(
    sk: skift.LocalSkift, bot: skift.LocalSkift, snap: Snap
) -> None:
    """Gate-and-release files the gate against the leased node and releases that node's lease;
    a lease on another node is a FencingError, and nothing is filed or released."""
    claim = await bot.claim("w#1")
    before = await snap(sk)
    with pytest.raises(skift.FencingError):
        await bot.gate("w#2", lease=claim.lease.id, title="Wrong node")
    assert await snap(sk) == before
    assert (await sk.get("w#1")).claimed
