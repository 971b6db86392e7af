"""Content, credentials and policy a hostile organization brings cannot stall another's
calls (issue 29's rows "one gate whose body is 64 KiB of ``![``", "3,000 ``>``", "one
organization's stored policy with a heavy rule" and "two usage records of 2^63-1 tokens";
"a huge ``exp`` in an OIDC token" is tests/adversary/test_oidc_expiry.py, a server with
``--oidc-issuer`` of its own).

Each attack runs against the module's real ``skift serve`` (``target``: gRPC on loopback
TCP, the board on loopback HTTP, PostgreSQL) from the ``attackers`` organization, bounded
in count and time, while the harness's bystander (a person of ``bystanders``, in a process
of its own) reads ListProjects every 50 ms (``while_watched``); its p95 stays under a
second and nothing answers INTERNAL (``assert_unharmed``). (The kill -9 of the embedded
PostgreSQL is tests/faults/test_embedded_supervision.py: it needs a cluster the server
starts.)
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from adversary_harness import Target, assert_unharmed, while_watched

import skift


async def timed(call: Callable[[], Awaitable[Any]]) -> tuple[Any, float]:
    started = time.perf_counter()
    got = await call()
    return got, time.perf_counter() - started


async def test_markdown_bombs_render_in_bounded_time(target: Target) -> None:
    """64 KiB of ``![`` (49.8 s on the loop before, every other call waiting) and 3,000
    ``>`` (an HTTP 500 RecursionError before): the page answers within seconds, the
    bystander does not wait."""
    async with target.attacker() as mallory:
        res = await mallory.patch(
            "noise",
            [
                skift.CreateNode(alias="img", title="Images", body="![" * 32 * 1024),
                skift.CreateNode(alias="quote", title="Quotes", body=">" * 3000),
                skift.CreateNode(alias="brk", title="Brackets", body="[" * 64 * 1024),
            ],
        )
        await mallory.add_comment(res.created["img"], "![" * 32 * 1024)
        code = (await mallory.mint_signin_code()).code

    paths = [f"/n/{res.created[a].replace('#', '/')}" for a in ("img", "quote", "brk")]
    async with httpx.AsyncClient(base_url=target.http_url, timeout=60) as web:
        signed = await web.post("/signin", data={"code": code}, headers={"origin": target.http_url})
        assert signed.status_code == 303, signed.text

        async def pages() -> list[tuple[int, float, str]]:
            out: list[tuple[int, float, str]] = []
            for path in paths * 2:
                got, took = await timed(lambda p=path: web.get(p))
                out.append((got.status_code, took, got.text))
            return out

        got, stats = await while_watched(target, pages)
    assert_unharmed(stats)
    for status, took, text in got:
        assert status == 200, text[-2000:]
        assert took < 10, f"a page took {took:.1f}s"
    # each rendered, or (the Markdown worker busy past the page's budget) shown as text
    for _, _, text in got:
        assert "<blockquote>" in text or 'class="md-plain"' in text or "<p>" in text
    rendered = sum("<blockquote>" in text for _, _, text in got[1::3])
    assert rendered == 2  # short texts render beside the worker, however busy it is
    print(f"pages {[round(t, 2) for _, t, _ in got]} s; bystander {stats.summary()}")


# ~0.5-1.5 s of CPU per evaluation, every request: refused when set
SLOW_ALWAYS = """package skift.authz

import rego.v1

unreadable contains "nothing" if {
    some i in numbers.range(1, 400)
    some j in numbers.range(1, 400)
    some k in numbers.range(1, 4)
    i + j + k < 0
}
"""

# as slow, but only for mallory's own requests: the benchmark misses it, run time trips it
SLOW_FOR_MALLORY = SLOW_ALWAYS.replace(
    'unreadable contains "nothing" if {',
    'unreadable contains "nothing" if {\n    input.principal.name == "mallory"',
)


async def test_a_heavy_policy_slows_no_other_organization(target: Target) -> None:
    """The heavy rule is refused when set (its benchmark runs in a child process, killed past
    the budget); one slow only at run time is evaluated in a worker process (killed past its
    budget) and then fails its own organization closed, without evaluating again. The
    bystander's organization notices nothing."""

    async def attack() -> list[str]:
        async with target.attacker() as mallory:
            with pytest.raises(skift.Invalid, match="over its budget"):
                await mallory.set_policy({"slow.rego": SLOW_ALWAYS}, reason="slow")
            await mallory.set_policy({"trap.rego": SLOW_FOR_MALLORY}, reason="a trap")
            for _ in range(20):
                with pytest.raises(skift.Refused, match="over its budget"):
                    await mallory.list_projects()
            await mallory.reset_policy(reason="it tripped")
            assert "noise" in [p.slug for p in await mallory.list_projects()]
            return [e.op for e in await mallory.events()]

    events, stats = await while_watched(target, attack)
    assert events.count("policy_over_budget") == 1
    assert_unharmed(stats)
    print(f"bystander {stats.summary()}")


async def test_usage_sums_never_overflow(target: Target) -> None:
    """Two records of 2^63-1 tokens made every usage report INTERNAL ("bigint out of
    range"): the second is refused as a limit, and every report answers."""
    big = 2**63 - 1

    async def attack() -> None:
        async with target.attacker() as mallory:
            project = await mallory.create_project("Usage")
            res = await mallory.patch(
                project.slug,
                [skift.CreateNode(alias="a", title="A"), skift.CreateNode(alias="b", title="B")],
            )
            one, two = res.created["a"], res.created["b"]
            await mallory.record_usage(one, model="m", input_tokens=big)
            with pytest.raises(skift.LimitExceeded):
                await mallory.record_usage(two, model="m", input_tokens=big)
            await mallory.record_usage(two, model="m", output_tokens=big // 2**40)
            report = await mallory.project_usage(project.slug)
            assert report.actual.total == big
            assert (await mallory.usage(one)).actual.input_tokens == big

    _, stats = await while_watched(target, attack)
    assert_unharmed(stats)
