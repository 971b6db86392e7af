"""kill -9 of ``skift serve`` mid-load, then a new server on the same socket: claimers
that retry by request id lose nothing and do nothing twice, and every node ends done
(or claimable, when a claim's answer died with the server) (issue 17, fault suite)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from typing import TYPE_CHECKING

import pytest
from faultload import Tally, audit, worker

import skift
import skift_server

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from serverproc import ServerProcess

pytestmark = pytest.mark.pg

NODES = 300
CLAIMERS = 8


async def test_kill_9_of_the_server_mid_load(
    fault_dsn: str, servers: Callable[..., Awaitable[ServerProcess]]
) -> None:
    flags = ("--dsn", fault_dsn, "--test-hooks", "--sweep-every", "0.5")
    server = await servers(*flags)
    async with skift_server.connect(server.url, principal=skift.User("ada")) as sk:
        await sk.create_project("Load")
        for start in range(0, NODES, 100):
            await sk.patch(
                "load", [skift.CreateNode(title=f"n{k}") for k in range(start, start + 100)]
            )
    tally = Tally()
    began = time.monotonic()
    workers = [asyncio.create_task(worker(server.url, f"a{n}", tally)) for n in range(CLAIMERS)]
    while len(tally.acked) < NODES // 3:
        await asyncio.sleep(0.01)
        assert not any(w.done() for w in workers), [w.exception() for w in workers if w.done()]
    os.kill(server.pid, signal.SIGKILL)
    killed = time.monotonic()
    done_at_kill = len(tally.acked)
    await asyncio.sleep(0.3)  # the claimers meet a dead socket for a moment
    again = await servers(*flags, socket=server.socket)
    back = time.monotonic() - killed
    await asyncio.wait_for(asyncio.gather(*workers), 120)
    took = time.monotonic() - began

    async with skift_server.connect(again.url, principal=skift.User("ada")) as sk:
        found = await audit(sk, "load", tally)
    print(
        f"{NODES} nodes in {took:.1f}s; killed at {done_at_kill} done; serving again after {back:.2f}s; "
        f"{tally.unavailable} Unavailable, {tally.fenced} fenced; {found}"
    )
    assert done_at_kill < NODES, "the kill came after the load"
    assert found.nodes == NODES
    assert found.lost == [], "acknowledged completions lost"
    assert found.doubled == [], "nodes completed twice"
    assert found.stuck == [], "nodes neither done nor claimable"
    assert found.done + found.claimable == NODES
