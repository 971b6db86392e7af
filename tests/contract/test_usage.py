"""Usage and cost: records per attempt, the current estimate, rollups, rates, budgets and caps."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

import pytest

import skift

if TYPE_CHECKING:
    from conftest import Snap


async def _tree(sk: skift.LocalSkift) -> None:
    """Project u: #1 Epic > (#2 Part one > #4 Detail), (#3 Part two); #5 Elsewhere at the root."""
    await sk.create_project("U")
    await sk.patch(
        "u",
        [
            skift.CreateNode(alias="epic", title="Epic"),
            skift.CreateNode(alias="one", title="Part one", parent="epic"),
            skift.CreateNode(alias="two", title="Part two", parent="epic"),
            skift.CreateNode(alias="detail", title="Detail", parent="one"),
            skift.CreateNode(title="Elsewhere"),
        ],
    )


async def test_usage_is_recorded_per_attempt_under_its_lease(
    sk: skift.LocalSkift, snap: Snap
) -> None:
    """Each attempt's actual names its own lease, so a retry never collapses into the
    original; a record under a lease that is no longer live is refused like any write."""
    await _tree(sk)
    bot = sk.acting_as(skift.Agent("bot"))
    first = await bot.claim("u#5")
    await bot.record_usage("u#5", model="m", input_tokens=100, lease=first.lease.id)
    await bot.release("u#5", lease=first.lease.id, reason="crash")
    second = await bot.claim("u#5")
    got = await bot.record_usage(
        "u#5", model="m", input_tokens=40, output_tokens=2, lease=second.lease.id
    )
    assert (got.lease, got.principal, got.kind) == (second.lease.id, "bot", "actual")

    before = await snap(sk)
    with pytest.raises(skift.FencingError):
        await bot.record_usage("u#5", model="m", input_tokens=1, lease=first.lease.id)
    assert await snap(sk) == before

    report = await sk.usage("u#5")
    assert [r.lease for r in report.records] == [second.lease.id, first.lease.id]  # newest first
    assert report.actual == skift.TokenTotals(input_tokens=140, output_tokens=2, total=142)
    assert [e.op for e in await sk.events(ref="u#5")].count("record_usage") == 2


async def test_who_may_record_what(sk: skift.LocalSkift, snap: Snap) -> None:
    """An agent records an actual only under a lease; anyone may estimate without one; a basis
    belongs to estimates; counts are non-negative whole numbers. Refusals write nothing."""
    await _tree(sk)
    bot = sk.acting_as(skift.Agent("bot"))
    before = await snap(sk)
    with pytest.raises(skift.Refused) as ei:
        await bot.record_usage("u#5", model="m", input_tokens=10)
    assert "lease" in ei.value.message
    with pytest.raises(skift.Invalid, match="basis"):
        await sk.record_usage("u#5", model="m", input_tokens=10, basis="a guess")
    with pytest.raises(skift.Invalid):
        await sk.record_usage("u#5", model="m", input_tokens=-1)
    with pytest.raises(skift.Invalid):
        await sk.record_usage("u#5", model=" ", input_tokens=1)
    assert await snap(sk) == before

    est = await bot.record_usage(
        "u#5", model="m", input_tokens=500, estimate=True, basis="like #4, twice the files"
    )
    assert (est.kind, est.basis, est.lease) == ("estimate", "like #4, twice the files", None)
    mine = await sk.record_usage("u#5", model="m", output_tokens=7)  # a person, no lease
    assert mine.kind == "actual"


async def test_current_estimate_and_rollups(sk: skift.LocalSkift) -> None:
    """A node's current estimate is its newest; subtree and project rollups sum actuals and
    current estimates over parent_id."""
    await _tree(sk)
    await sk.record_usage("u#2", model="m", input_tokens=100, estimate=True, basis="first look")
    await sk.record_usage("u#2", model="m", input_tokens=300, estimate=True, basis="after a spike")
    await sk.record_usage("u#4", model="m", output_tokens=50, estimate=True)
    await sk.record_usage("u#3", model="m", input_tokens=1000)
    await sk.record_usage("u#4", model="m", cache_read_tokens=20, cache_write_tokens=5)
    await sk.record_usage("u#5", model="m", input_tokens=7)

    own = await sk.usage("u#2")
    assert own.estimate.input_tokens == 300
    assert [r.basis for r in own.records] == ["after a spike", "first look"]  # both kept

    tree = await sk.usage("u#1", subtree=True)
    assert tree.subtree
    assert tree.estimate == skift.TokenTotals(input_tokens=300, output_tokens=50, total=350)
    assert tree.actual == skift.TokenTotals(
        input_tokens=1000, cache_read_tokens=20, cache_write_tokens=5, total=1025
    )
    assert {r.node for r in tree.records} == {"u#2", "u#3", "u#4"}
    assert (await sk.usage("u#1")).actual.total == 0  # without subtree: the node alone

    project = await sk.project_usage("u")
    assert (project.ref, project.actual.total, project.estimate.total) == ("u", 1032, 350)


async def test_sums_never_pass_what_a_report_can_hold(sk: skift.LocalSkift) -> None:
    """Two records of 2**63 - 1 tokens (issue 29: every report of the project was INTERNAL,
    "bigint out of range"): the second is refused naming the bound, a small one still lands,
    and every report answers, each sum at most 2**63 - 1."""
    big = 2**63 - 1
    await _tree(sk)
    await sk.set_rate("m", input=1, output=1, cache_read=1, cache_write=1, currency="EUR")
    await sk.record_usage("u#3", model="m", input_tokens=big)
    with pytest.raises(skift.LimitExceeded, match="past the most a report can sum") as ei:
        await sk.record_usage("u#4", model="m", input_tokens=big)
    assert ei.value.next
    with pytest.raises(skift.LimitExceeded, match="total"):
        await sk.record_usage("u#4", model="m", output_tokens=2**40)
    await sk.record_usage("u#4", model="m", output_tokens=7)  # small: never checked
    await sk.record_usage("u#2", model="m", cache_read_tokens=big, estimate=True)

    project = await sk.project_usage("u")
    assert project.actual == skift.TokenTotals(input_tokens=big, output_tokens=7, total=big)
    assert project.estimate.cache_read_tokens == big
    tree = await sk.usage("u#1", subtree=True)
    assert tree.actual.total == big
    assert (await sk.usage("u#4")).actual.output_tokens == 7
    assert project.cost_actual is not None
    assert project.cost_actual > 9 * 10**12  # priced from the sums as stored


async def test_rates_price_reports_at_query_time(sk: skift.LocalSkift) -> None:
    """A rate table prices tokens when a report is read; a model without a rate is listed as
    unpriced, not counted as free; only a person sets rates, in one currency."""
    await _tree(sk)
    await sk.record_usage("u#5", model="big", input_tokens=2_000_000, output_tokens=1_000)
    await sk.record_usage("u#5", model="mystery", input_tokens=10)
    await sk.record_usage("u#5", model="big", output_tokens=4_000, estimate=True)

    unpriced = await sk.usage("u#5")
    assert (unpriced.cost_actual, unpriced.currency) == (None, None)
    assert unpriced.unpriced_models == ("big", "mystery")

    rate = await sk.set_rate("big", input=Decimal("3"), output="15", cache_read="0.30")
    assert (rate.model, rate.output, rate.currency) == ("big", Decimal(15), "USD")
    priced = await sk.usage("u#5")
    assert priced.cost_actual == Decimal("6.015")  # 2M x 3 + 1k x 15, per million
    assert priced.cost_estimate == Decimal("0.06")
    assert (priced.currency, priced.unpriced_models) == ("USD", ("mystery",))

    await sk.set_rate("big", input=1, output=1)  # re-priced history: nothing stored on records
    assert (await sk.usage("u#5")).cost_actual == Decimal("2.001")
    assert [r.model for r in await sk.rates()] == ["big"]

    with pytest.raises(skift.Refused, match="USD"):
        await sk.set_rate("mystery", input=1, output=1, currency="EUR")
    with pytest.raises(skift.Refused, match="person"):
        await sk.acting_as(skift.Agent("bot")).set_rate("mystery", input=1, output=1)
    with pytest.raises(skift.Invalid):
        await sk.set_rate("mystery", input=-1, output=1)


async def test_budgets_are_reported_beside_rollups(sk: skift.LocalSkift) -> None:
    """A budget on a project or a node is reported beside its usage, and can be cleared."""
    await _tree(sk)
    await sk.update_project("u", budget=Decimal("250.00"))
    await sk.patch("u", [skift.UpdateNode(node="#1", budget="40")])
    await sk.patch("u", [{"op": "update_node", "node": "#2", "budget": 12.5}])
    assert (await sk.project_usage("u")).budget == Decimal("250.00")
    assert (await sk.usage("u#1", subtree=True)).budget == Decimal(40)
    assert (await sk.usage("u#2")).budget == Decimal("12.5")
    await sk.patch("u", [skift.UpdateNode(node="#2", budget="")])
    assert (await sk.usage("u#2")).budget is None
    assert "set_budget" in [e.op for e in await sk.events(ref="u#1")]
    with pytest.raises(skift.Invalid):
        await sk.patch("u", [skift.UpdateNode(node="#1", budget="-3")])


async def test_a_spent_cap_refuses_claims_and_claim_next_skips_it(
    sk: skift.LocalSkift, snap: Snap
) -> None:
    """A person's cap on a node is checked at Claim against the priced actual spend of its
    subtree: a claim under a spent cap is refused naming the spend, the cap and the next move,
    and ClaimNext hands out other work instead. Only a person may set a cap."""
    await _tree(sk)
    bot = sk.acting_as(skift.Agent("bot"))
    await sk.set_rate("m", input=1, output=1)
    await sk.patch("u", [skift.UpdateNode(node="#1", cap=Decimal("2"))])
    assert (await sk.usage("u#1")).cap == Decimal(2)
    await sk.record_usage("u#4", model="m", input_tokens=1_500_000)  # 1.5 of 2: still claimable
    claim = await bot.claim("u#4")
    await bot.record_usage("u#4", model="m", output_tokens=600_000, lease=claim.lease.id)
    await bot.release("u#4", lease=claim.lease.id, reason="budget")

    before = await snap(sk)
    for ref in ("u#4", "u#3"):  # the node that spent it, and its sibling under the same cap
        with pytest.raises(skift.Refused) as ei:
            await bot.claim(ref)
        assert "2.1 USD spent of a 2 USD cap" in ei.value.message
        assert "u#1" in ei.value.next
    assert await snap(sk) == before
    for _ in range(2):  # skipped, not stalled: the uncapped node is handed out
        got = await bot.claim_next(projects=["u"])
        assert got.node.ref == "u#5"
        await bot.release("u#5", lease=got.lease.id, reason="preempted")

    with pytest.raises(skift.Refused, match="only a person may set the cap"):
        await bot.patch("u", [skift.UpdateNode(node="#1", cap="100")])
    await sk.patch("u", [skift.UpdateNode(node="#1", cap="")])  # a person lifts it
    assert (await bot.claim("u#3")).node.ref == "u#3"
