"""The ``adversary`` scenario (issue 29): a bystander's reads, quiet and under each attack.

One ``skift serve`` (``tests/adversary/adversary_harness.start_target``: a fresh
database, gRPC on TCP, HTTP); a person of another organization reads
ListProjects every 50 ms from a process of its own. Each attack is measured in
a window of at least :data:`WINDOW` seconds: the attack, exactly as the
adversary suite runs it, is started again as soon as it ends until the window
is over (a sustained attack; a single rapid reset lasts about a second, so a
p95 over it rested on 7-9 calls). Beside each attack window is a quiet window
of the same length, just before it, in :data:`ROUNDS` rounds in this one run:
the figures are ratios to those quiet windows (the pooled p95 over the pooled
p95 of the quiet windows beside it, and the median of each round's ratio),
never absolute claims. The goal: within 2x of the quiet p95.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from ._env import ROOT, Server, scratch
from ._stats import Result

sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "adversary")]

import adversary_harness as ah  # noqa: E402

WINDOW = 6.0
"""Seconds of each window, quiet or attacked (an attack is run again until it is over)."""
ROUNDS = 3


ALIASES = {"flood": "WatchEvents", "reset": "rapid reset", "patch": "Patch with no token"}
"""Short words for ``--attacks`` (any other word is matched against the attacks' names)."""


def pick(
    attacks: list[tuple[str, Callable[[], Awaitable[Any]]]], words: tuple[str, ...]
) -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
    """The attacks whose name holds one of ``words`` (case-insensitive; :data:`ALIASES`
    first); every attack when ``words`` is empty. A word matching none is an error."""
    if not words:
        return attacks
    out: list[tuple[str, Callable[[], Awaitable[Any]]]] = []
    for word in words:
        key = ALIASES.get(word.strip().lower(), word.strip()).lower()
        found = [a for a in attacks if key in a[0].lower() and a not in out]
        if not found and not any(key in a[0].lower() for a in out):
            names = "; ".join(name for name, _ in attacks)
            raise SystemExit(f"--attacks: {word!r} names no attack (of: {names})")
        out += found
    return out


def _attacks(t: Any) -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
    open_block = b"\x00\x00\x01\x01\x00\x00\x00\x00\x01\x82"
    out: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
        ("rapid reset: 20,000 HEADERS+RST_STREAM", lambda: ah.rapid_reset(t.grpc_port)),
        (
            "500 connections without a preface",
            lambda: ah.silent_connections(t.grpc_port, count=500, wait=8),
        ),
        (
            "100 connections inside a header block",
            lambda: ah.silent_connections(
                t.grpc_port, count=100, send=preface + open_block, wait=8
            ),
        ),
        (
            "200 HTTP requests without the end of their head",
            lambda: ah.silent_connections(
                t.http_port, count=200, send=b"GET / HTTP/1.1\r\nhost: x\r\n", wait=8
            ),
        ),
        ("1,000 WatchEvents + 200 ClaimNext from one token", lambda: ah.long_poll_flood(t)),
        ("one 4.1 MB Patch with no token", lambda: ah.no_token_patch(t.grpc_port)),
    ]
    extra = getattr(ah, "EXTRA_ATTACKS", None)  # attacks other modules add
    if extra:
        out += [(name, (lambda f=f: f(t))) for name, f in extra]
    return out


async def _quiet(t: Any, seconds: float) -> ah.Stats:
    async with ah.Bystander(t) as b:
        await asyncio.sleep(seconds)
    return b.stats()


async def _sustained(
    t: Any, attack: Callable[[], Awaitable[Any]], seconds: float
) -> tuple[Any, int, ah.Stats]:
    """``attack`` again and again until ``seconds`` have passed (at least once) while the
    bystander reads, and half a second after: what the last run got, how many ran, and
    what the bystander saw."""
    runs, got = 0, None
    async with ah.Bystander(t) as b:
        started = time.monotonic()
        while runs == 0 or time.monotonic() - started < seconds:
            got = await attack()
            runs += 1
        await asyncio.sleep(0.5)
    return got, runs, b.stats()


def _pooled(stats: list[ah.Stats]) -> ah.Stats:
    return ah.Stats(
        tuple(x for s in stats for x in s.latencies), sum((s.statuses for s in stats), Counter())
    )


def _row(case: str, runs: list[ah.Stats], quiet: list[ah.Stats], extra: dict[str, Any]) -> Result:
    """One attack over every round: the bystander's pooled p50/p95, the pooled p95 over the
    pooled quiet p95, and the median of each round's p95 over that round's quiet p95."""
    s, q = _pooled(runs), _pooled(quiet)
    per_round = [r.p95 / qr.p95 for r, qr in zip(runs, quiet, strict=True) if qr.p95]
    metrics: dict[str, Any] = {
        "n": s.n,
        "p50_ms": round(s.p50 * 1000, 1),
        "p95_ms": round(s.p95 * 1000, 1),
        "p95_vs_quiet": round(s.p95 / q.p95, 2) if q.p95 else None,
        "median_round_ratio": round(statistics.median(per_round), 2) if per_round else None,
        "round_ratios": [round(x, 2) for x in per_round],
        "statuses": dict(s.statuses),
        **extra,
    }
    return Result("adversary", case, metrics, "bystander ListProjects; goal p95 within 2x quiet")


async def scenario(
    srv: Server, *, smoke: bool = False, rounds: int = ROUNDS, attacks: tuple[str, ...] = ()
) -> list[Result]:
    """``rounds`` rounds, each a quiet window then an attack window for every attack (those
    ``attacks`` names, :func:`pick`; ``--attacks flood``); ``smoke``: one short round with
    the first attack only (tests the harness)."""
    async with scratch(srv, "adversary") as dsn:
        t = await ah.start_target(dsn)
        try:
            seconds = 2.0 if smoke else WINDOW
            chosen = pick(_attacks(t), attacks)[: 1 if smoke else None]
            quiet: dict[str, list[ah.Stats]] = {name: [] for name, _ in chosen}
            runs: dict[str, list[ah.Stats]] = {name: [] for name, _ in chosen}
            repeats: dict[str, list[int]] = {name: [] for name, _ in chosen}
            shown: dict[str, str] = {}
            for _ in range(1 if smoke else rounds):
                for name, attack in chosen:
                    quiet[name].append(await _quiet(t, seconds))
                    got, n, stats = await _sustained(t, attack, seconds)
                    runs[name].append(stats)
                    repeats[name].append(n)
                    answer = {k: v for k, v in dict(got).items() if k != "a_reply"} if got else {}
                    shown[name] = str(answer)[:200]
            every_quiet = [q for name, _ in chosen for q in quiet[name]]
            results = [_row("quiet", every_quiet, every_quiet, {})]
            for name, _ in chosen:
                extra = {
                    "quiet_p95_ms": round(_pooled(quiet[name]).p95 * 1000, 1),
                    "attacks_per_window": repeats[name],
                    "attack (last run)": shown[name],
                }
                results.append(_row(name, runs[name], quiet[name], extra))
        finally:
            await ah.stop_target(t)
    return results
