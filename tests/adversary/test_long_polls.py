"""Long polls from one token do not starve anyone (issue 29's "1,000 WatchEvents + 200
ClaimNext long polls from one token" row).

Past ``long_polls_per_principal`` (32) a principal's waiting calls are answered
RESOURCE_EXHAUSTED with RetryInfo; those that wait hold no pooled connection
while they wait, and re-read from the part of the pool long polls may use, so a
bystander in another organization is served from the part kept for ordinary calls.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import timedelta

from adversary_harness import Target, assert_unharmed, while_watched

import skift
from skift_server._errors import details_of
from skift_server._proto.google.rpc import RetryInfo

WATCHES = 1000
CLAIMS = 200
WAIT = timedelta(seconds=4)


async def _flood(target: Target) -> Counter[str]:
    clients = [target.attacker(pool_size=4) for _ in range(6)]
    for c in clients:
        await c.__aenter__()
    try:
        await asyncio.gather(*(c.list_projects() for c in clients))  # connected
        page = await clients[0].watch_events()
        while page.events:
            page = await clients[0].watch_events(after=page.cursor)
        head = page.cursor  # nothing after it: a watch from here waits

        async def one(i: int) -> str:
            c = clients[i % len(clients)]
            try:
                if i < WATCHES:
                    got = await c.watch_events(wait=WAIT, after=head)
                    return "answered" if got.events else "waited"
                else:
                    await c.claim_next(wait=WAIT)
            except skift.LimitExceeded as exc:
                return f"RESOURCE_EXHAUSTED {exc.details.get('limit')}"
            except skift.NothingReady:
                return "waited"
            except skift.SkiftError as exc:
                return f"{type(exc).__name__}: {exc}"[:150]
            return "answered"

        got = await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(WATCHES + CLAIMS))), 60)
        return Counter(got)
    finally:
        for c in clients:
            await c.__aexit__(None, None, None)


async def test_a_flood_of_long_polls_is_capped_and_the_bystander_served(target: Target) -> None:
    got, stats = await while_watched(target, lambda: _flood(target))
    capped = got["RESOURCE_EXHAUSTED long_polls_per_principal"]
    assert capped >= (WATCHES + CLAIMS) // 2, got
    assert set(got) <= {"RESOURCE_EXHAUSTED long_polls_per_principal", "waited", "answered"}, got
    assert_unharmed(stats)


def test_the_refusal_carries_retry_info() -> None:
    exc = skift.LimitExceeded("too many", limit="long_polls_per_principal", retry_after=1)
    (retry,) = [d for d in details_of(exc) if isinstance(d, RetryInfo)]
    assert retry.retry_delay == timedelta(seconds=1)
