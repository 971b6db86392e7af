"""Administrative RPCs are refused to non-administrators at the edge, before any work: an agent
with a valid token over TCP (a real ``skift serve``) gets the policy's refusal for each, and
nothing changes."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

import pytest
from serverproc import free_port

import skift
import skift_server

if TYPE_CHECKING:
    from conftest import Serve


async def test_admin_calls_are_refused_to_an_agent_before_any_work(serve: Serve) -> None:
    port = free_port()
    server = await serve("--memory", "--listen", f"127.0.0.1:{port}", "--sweep-every", "0")
    async with skift_server.connect(server.url) as owner:
        await owner.create_project("Edge")
        await owner.patch("edge", [skift.CreateNode(title="Work")])
        await owner.add_principal("ci-bot", "agent")
        secret = (await owner.create_token("ci-bot")).token
        await owner.claim("edge#1", ttl=timedelta(seconds=1))
        principals = await owner.list_principals()
        events = len(await owner.events())

        async with skift_server.connect(f"http://127.0.0.1:{port}", token=secret) as bot:
            assert [n.ref for n in (await bot.ready()).nodes] == []  # an ordinary call works
            for attempt in (
                bot.add_principal("mallory", "user"),
                bot.list_principals(),
                bot.attach_identity("ci-bot", "unix", "4242"),
                bot.create_token("ci-bot"),
                bot.revoke_token("01JD0000000000000000000000"),
                bot.sweep_expired(),
            ):
                with pytest.raises(skift.Refused) as ei:
                    await attempt
                assert "only a person administers" in ei.value.message
                assert ei.value.next
            with pytest.raises(skift.Refused, match="size limits"):
                await bot.set_org_limits(comment_bytes=10)
            with pytest.raises(skift.Refused, match="rates"):
                await bot.set_rate("m", input="1", output="1")
            for attempt in (
                bot.set_policy({"p.rego": "package skift.authz\n"}, reason="mine"),
                bot.reset_policy(reason="mine"),
            ):
                with pytest.raises(
                    skift.Refused, match="only an admin of the organization sets its policy"
                ):
                    await attempt
            for attempt in (bot.create_org("evil", admin="x"), bot.list_orgs()):
                with pytest.raises(skift.Refused, match="only an administrator of the server"):
                    await attempt

        assert await owner.list_principals() == principals
        assert len(await owner.events()) == events
        assert (await owner.org_limits()).own == ()
        assert (await owner.policy()).modules == ()
        assert [o.name for o in await owner.list_orgs()] == ["default"]
