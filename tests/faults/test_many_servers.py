"""Three ``skift serve`` processes over one database, 32 claimers spread across them:
every node claimed once and completed once, and a claimer waiting on one server is woken
by a completion on another (issue 17, fault suite; docs/operations.md)."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import Counter
from datetime import timedelta
from typing import TYPE_CHECKING

import pytest
from faultload import Tally, audit, worker

import skift
import skift_server

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from serverproc import ServerProcess

pytestmark = pytest.mark.pg

NODES = 320
CLAIMERS = 32


async def test_three_servers_thirty_two_claimers(
    fault_dsn: str, servers: Callable[..., Awaitable[ServerProcess]]
) -> None:
    three = [await servers("--dsn", fault_dsn, "--test-hooks") for _ in range(3)]
    async with skift_server.connect(three[0].url, principal=skift.User("ada")) as sk:
        await sk.create_project("Storm")
        for start in range(0, NODES, 160):
            await sk.patch(
                "storm", [skift.CreateNode(title=f"n{k}") for k in range(start, start + 160)]
            )
    tally = Tally()
    began = time.monotonic()
    await asyncio.wait_for(
        asyncio.gather(
            *(
                worker(
                    three[n % 3].url,
                    f"a{n}",
                    tally,
                    ttl=timedelta(seconds=120),  # no expiry: a second claim would be a bug
                    idle=timedelta(seconds=1),
                )
                for n in range(CLAIMERS)
            )
        ),
        180,
    )
    took = time.monotonic() - began
    async with skift_server.connect(three[1].url, principal=skift.User("ada")) as sk:
        found = await audit(sk, "storm", tally)
    twice = [ref for ref, k in Counter(tally.claims).items() if k > 1]
    print(f"{NODES} nodes by {CLAIMERS} claimers over 3 servers in {took:.1f}s; {found}")
    assert tally.fenced == 0
    assert twice == [], "nodes claimed twice"
    assert len(tally.claims) == NODES
    assert found.lost == []
    assert found.doubled == []
    assert found.done == NODES


async def test_a_completion_on_one_server_wakes_a_claimer_on_another(
    fault_dsn: str, servers: Callable[..., Awaitable[ServerProcess]]
) -> None:
    a = await servers("--dsn", fault_dsn, "--test-hooks")
    b = await servers("--dsn", fault_dsn, "--test-hooks")
    rounds = 4
    async with (
        skift_server.connect(b.url, principal=skift.User("ada")) as on_b,
        skift_server.connect(a.url, principal=skift.Agent("waiter")) as on_a,
    ):
        await on_b.create_project("Wake")
        latencies: list[float] = []
        for i in range(rounds):
            # a blocker, and work that waits on it: nothing is ready for the waiter
            await on_b.patch(
                "wake",
                [
                    skift.CreateNode(title=f"blocker {i}", alias="b", assignee_kind="user"),
                    skift.CreateNode(title=f"then {i}", assignee_kind="agent", blocked_by=("b",)),
                ],
            )
            blocker = await on_b.claim_next(assignee_kind="user")
            waiting = asyncio.create_task(
                on_a.claim_next(assignee_kind="agent", wait=timedelta(seconds=20))
            )
            await asyncio.sleep(0.5)  # the waiter is parked on server A
            assert not waiting.done()
            await on_b.complete(blocker.node.ref, lease=blocker.lease.id)
            completed = time.monotonic()
            got = await asyncio.wait_for(waiting, 20)
            latencies.append(time.monotonic() - completed)
            assert got.node.title == f"then {i}"
            await on_a.complete(got.node.ref, lease=got.lease.id)
    print("wake-up across servers:", [f"{x:.3f}s" for x in latencies])
    # Without a cross-server wake-up the waiter finds the work on its next poll, up to a
    # second later; NOTIFY reaches it in milliseconds.
    assert statistics.median(latencies) < 0.5, latencies
