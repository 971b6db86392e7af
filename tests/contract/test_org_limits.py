"""Size limits per organization: lowered under the server's, enforced on every write."""

from __future__ import annotations

import hashlib
import secrets
from typing import TYPE_CHECKING

import pytest

import skift

if TYPE_CHECKING:
    from conftest import Snap


async def test_lowered_limits_refuse_what_the_server_accepts(
    sk: skift.LocalSkift, snap: Snap
) -> None:
    """A comment, body, result or blob over the organization's own limit (far under the
    server's) is LimitExceeded naming the organization's value, and nothing is written."""
    await sk.create_project("L")
    await sk.create("l", "Work")
    got = await sk.set_org_limits(comment_bytes=10, body_bytes=20, result_bytes=30, blob_bytes=40)
    assert got.comment_bytes == 10
    before = await snap(sk)
    with pytest.raises(skift.LimitExceeded) as ei:
        await sk.add_comment("l#1", "x" * 11)
    assert ei.value.details["bound"] == 10
    assert "10" in ei.value.message
    with pytest.raises(skift.LimitExceeded) as ei:
        await sk.create("l", "Another", body="y" * 21)
    assert ei.value.details["bound"] == 20
    with pytest.raises(skift.LimitExceeded) as ei:
        await sk.patch("l", [skift.CompleteNode(node="#1", result="z" * 31)])
    assert ei.value.details["bound"] == 30
    data = b"b" * 41
    with pytest.raises(skift.LimitExceeded) as ei:
        await sk.put_blob(data, media_type="text/plain")
    assert ei.value.details["bound"] == 40
    assert await snap(sk) == before
    assert await sk.comments("l#1") == []
    with pytest.raises(skift.NotFound):
        await sk.get_blob("sha256:" + hashlib.sha256(data).hexdigest())
    # at the limit is within it
    await sk.add_comment("l#1", "x" * 10)
    await sk.put_blob(b"b" * 40, media_type="text/plain")


async def test_another_organization_keeps_the_servers_limits(sk: skift.LocalSkift) -> None:
    await sk.set_org_limits(comment_bytes=5)
    await sk.create_project("L")
    await sk.create("l", "Work")
    eve = sk.acting_as(skift.User("eve"), org=f"limits-{secrets.token_hex(4)}")
    await eve.create_project("L")
    await eve.create("l", "Work")
    await eve.add_comment("l#1", "a comment well over five bytes")
    assert (await eve.org_limits()).own == ()
    with pytest.raises(skift.LimitExceeded):
        await sk.add_comment("l#1", "a comment well over five bytes")


async def test_an_organization_may_only_lower_a_limit(sk: skift.LocalSkift, snap: Snap) -> None:
    """Above the server's value, zero or less, or a name that is not a size limit: Invalid
    (naming the server's value where there is one), and nothing changes."""
    server = await sk.org_limits()
    before = await snap(sk)
    with pytest.raises(skift.Invalid) as ei:
        await sk.set_org_limits(comment_bytes=server.server["comment_bytes"] + 1)
    assert str(server.server["comment_bytes"]) in ei.value.message
    with pytest.raises(skift.Invalid):
        await sk.set_org_limits(body_bytes=0)
    with pytest.raises(skift.Invalid):
        await sk.set_org_limits(ops_per_patch=1)
    assert await snap(sk) == before
    assert await sk.org_limits() == server


async def test_an_agent_may_not_set_limits(sk: skift.LocalSkift, snap: Snap) -> None:
    await sk.create_project("L")
    bot = sk.acting_as(skift.Agent("bot"))
    before = await snap(sk)
    with pytest.raises(skift.Refused) as ei:
        await bot.set_org_limits(comment_bytes=5)
    assert "person" in ei.value.message
    assert await snap(sk) == before
    assert (await bot.org_limits()).own == ()  # reading them is anyone's


async def test_org_limits_reports_effective_values(sk: skift.LocalSkift) -> None:
    """Each value is the one in force; `own` names the organization's; None unsets one;
    setting them is an event."""
    got = await sk.set_org_limits(comment_bytes=100, artifacts_per_node=3)
    assert got.own == ("comment_bytes", "artifacts_per_node")
    assert got.server["body_bytes"] == got.body_bytes  # unset: the server's
    assert await sk.org_limits() == got
    got = await sk.set_org_limits(comment_bytes=None)
    assert got.own == ("artifacts_per_node",)
    assert got.comment_bytes == got.server["comment_bytes"]
    assert got.artifacts_per_node == 3
    events = [e for e in await sk.events() if e.op == "set_org_limits"]
    assert [e.after for e in events] == [
        {"comment_bytes": 100, "artifacts_per_node": 3},
        {"comment_bytes": None},
    ]
