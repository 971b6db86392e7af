"""A revocation ends what is in flight: a ClaimNext or a change-stream read waiting when its token
is revoked ends UNAUTHENTICATED when it wakes, instead of answering with work or events written
after the revocation. Through a real ``skift serve`` over TCP."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import TYPE_CHECKING

import pytest
from serverproc import free_port

import skift
import skift_server

if TYPE_CHECKING:
    from conftest import Serve


async def _token_id(owner: skift_server.RemoteSkift, principal: str) -> str:
    (tid,) = [
        i.id
        for p in await owner.list_principals()
        if p.name == principal
        for i in p.identities
        if i.scheme == "token" and not i.revoked
    ]
    return tid


async def _until_waiting(owner: skift_server.RemoteSkift, task: asyncio.Task[object]) -> None:
    """Give the call time to reach the server and start waiting (it has nothing to answer)."""
    for _ in range(20):
        await asyncio.sleep(0.1)
        assert not task.done(), "the call answered before anything was written"
    await owner.list_projects()


async def test_revoking_a_token_ends_a_waiting_claim_and_a_waiting_stream(serve: Serve) -> None:
    port = free_port()
    server = await serve("--memory", "--listen", f"127.0.0.1:{port}")
    url = f"http://127.0.0.1:{port}"
    async with skift_server.connect(server.url) as owner:
        await owner.create_project("Quiet")
        await owner.add_principal("ci-bot", "agent")
        secret = (await owner.create_token("ci-bot")).token
        cursor = (await owner.watch_events()).cursor

        async with skift_server.connect(url, token=secret, attempts=1, timeout=60) as bot:
            claiming = asyncio.create_task(bot.claim_next(wait=timedelta(seconds=40)))
            watching = asyncio.create_task(
                bot.watch_events(after=cursor, wait=timedelta(seconds=40))
            )
            await _until_waiting(owner, claiming)  # pyright: ignore[reportArgumentType]
            await owner.revoke_token(await _token_id(owner, "ci-bot"))
            await owner.patch("quiet", [skift.CreateNode(title="Written after the revocation")])

            with pytest.raises(skift.Unauthenticated, match="revoked while it waited") as ei:
                await claiming
            assert ei.value.next
            with pytest.raises(skift.Unauthenticated, match="revoked while it waited"):
                await watching

        node = await owner.get("quiet#1")
        assert (node.claimed, node.ready) == (False, True)
        assert not [e for e in await owner.events() if e.op == "claim"]
