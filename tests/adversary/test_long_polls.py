"""Long polls from one token do not starve anyone (issue 29's "1,000 WatchEvents + 200
ClaimNext long polls from one token" row).

Past ``long_polls_per_principal`` (32) a principal's waiting calls are answered
RESOURCE_EXHAUSTED with RetryInfo; those that wait hold no pooled connection
while they wait, and re-read from the part of the pool long polls may use, so a
bystander in another organization is served from the part kept for ordinary calls.
"""

from __future__ import annotations

from datetime import timedelta

from adversary_harness import (
    CLAIMS,
    WATCHES,
    Target,
    assert_unharmed,
    long_poll_flood,
    while_watched,
)

import skift
from skift_server._errors import details_of
from skift_server._proto.google.rpc import RetryInfo

FLOOD_P95 = 2.5
"""Seconds: the bystander's p95 bound during the flood. The flood's 1,200 calls and their
refusals take the two cores from everyone for its first and last moments (100-800 ms calls
on a busy machine, with no stall of the server's loop), so the suite's 1 s bound failed
there in earlier CI runs on a loaded machine. What this test is for still fails well above it: long polls
that hold pooled connections while they wait leave the bystander waiting the pool's 5 s and
answered UNAVAILABLE (issue 29), a refusal any status fails on."""


async def test_a_flood_of_long_polls_is_capped_and_the_bystander_served(target: Target) -> None:
    got, stats = await while_watched(target, lambda: long_poll_flood(target))
    capped = got["RESOURCE_EXHAUSTED long_polls_per_principal"]
    assert capped >= (WATCHES + CLAIMS) // 2, got
    assert set(got) <= {"RESOURCE_EXHAUSTED long_polls_per_principal", "waited", "answered"}, got
    assert_unharmed(stats, p95=FLOOD_P95)


def test_the_refusal_carries_retry_info() -> None:
    exc = skift.LimitExceeded("too many", limit="long_polls_per_principal", retry_after=1)
    (retry,) = [d for d in details_of(exc) if isinstance(d, RetryInfo)]
    assert retry.retry_delay == timedelta(seconds=1)
