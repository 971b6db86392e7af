"""Refusals give the next move twice: in prose (``next``) and structured (``move``).

Each surface words the structured move in its own vocabulary (the CLI its
flags, the MCP tools their parameters), so the rule stays here and the
wording in the adapter. The structured move crosses the wire in the error's
details, and ``str(exc)`` keeps the message and the next move apart.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

import skift


@pytest.fixture
async def bot(sk: skift.LocalSkift) -> skift.LocalSkift:
    await sk.create_project("Moves")
    await sk.patch("moves", [skift.CreateNode(title="First"), skift.CreateNode(title="Second")])
    return sk.acting_as(skift.Agent("bot"))


async def test_nothing_ready_moves_to_waiting(bot: skift.LocalSkift) -> None:
    with pytest.raises(skift.NothingReady) as caught:
        await bot.claim_next(projects=["moves"], kinds=["no-such-kind"])
    assert caught.value.move == {"do": "wait_for_work", "held": 0}
    assert "Next: " in str(caught.value)
    assert str(caught.value).startswith(caught.value.message)


async def test_a_bare_number_moves_to_naming_the_project(bot: skift.LocalSkift) -> None:
    with pytest.raises(skift.Invalid) as caught:
        await bot.get("#1")
    assert caught.value.move == {"do": "name_project", "ref": "#1"}


async def test_claiming_blocked_work_moves_to_its_blocker(
    sk: skift.LocalSkift, bot: skift.LocalSkift
) -> None:
    await sk.patch("moves", [skift.AddEdge(from_="moves#1", to="moves#2")])
    with pytest.raises(skift.Refused) as caught:
        await bot.claim("moves#2")
    assert caught.value.move == {"do": "finish_blocker", "ref": "moves#2", "blocker": "moves#1"}


async def test_a_gated_lease_says_the_gate_is_pending_not_claim_again(
    bot: skift.LocalSkift,
) -> None:
    claim = await bot.claim("moves#1", ttl=timedelta(minutes=5))
    await bot.gate("moves#1", lease=claim.lease.id, title="Mint an OAuth app")
    with pytest.raises(skift.FencingError) as caught:
        await bot.complete("moves#1", lease=claim.lease.id, result="done anyway")
    assert caught.value.move == {"do": "await_gate"}
    assert "claim the node again" not in caught.value.next
    assert "gate" in caught.value.next


async def test_a_crashed_lease_moves_to_stopping(bot: skift.LocalSkift) -> None:
    claim = await bot.claim("moves#1")
    await bot.release("moves#1", lease=claim.lease.id, reason="crash")
    with pytest.raises(skift.FencingError) as caught:
        await bot.heartbeat("moves#1", lease=claim.lease.id)
    assert caught.value.move == {"do": "stop_attempt"}


async def test_a_cascade_over_its_bound_moves_to_a_larger_bound(
    sk: skift.LocalSkift,
) -> None:
    await sk.create_project("Moves")
    await sk.patch("moves", [skift.CreateNode(title="a"), skift.CreateNode(title="b")])
    await sk.patch("moves", [skift.AddEdge(from_="moves#1", to="moves#2")])
    with pytest.raises(skift.Refused) as caught:
        await sk.drop("moves#1", reason="gone", cascade=1)
    assert caught.value.move == {"do": "raise_cascade_bound", "count": 2}


def test_a_bad_enum_in_an_operation_is_invalid_not_a_value_error() -> None:
    for make in (
        lambda: skift.CreateNode(title="x", priority="urgent"),  # pyright: ignore[reportArgumentType]
        lambda: skift.CreateNode(title="x", assignee_kind="bot"),  # pyright: ignore[reportArgumentType]
        lambda: skift.UpdateNode(node="x", priority="p9"),  # pyright: ignore[reportArgumentType]
    ):
        with pytest.raises(skift.Invalid) as caught:
            make()
        assert caught.value.next
