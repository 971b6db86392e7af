"""Helpers of the process-fault suite: HTTP readiness polls, workers that claim and
complete through faults, and the audit that counts what was lost or done twice."""

from __future__ import annotations

import asyncio
import time
import urllib.error
import urllib.request
from collections import Counter
from datetime import timedelta

import attrs

import skift
import skift_server


def http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return e.code
    except (urllib.error.URLError, OSError):
        return 0


async def until_status(url: str, want: int, timeout: float = 15.0) -> float:
    """Poll ``url`` every 20 ms until it answers ``want``; the time (monotonic) it did."""
    deadline = time.monotonic() + timeout
    while True:
        if await asyncio.to_thread(http_status, url) == want:
            return time.monotonic()
        assert time.monotonic() < deadline, f"{url} never answered {want}"
        await asyncio.sleep(0.02)


@attrs.define
class Tally:
    """What the workers saw: completions acknowledged (ref -> request id), answers that
    were Unavailable, completes refused as fenced, and claims made."""

    acked: dict[str, str] = attrs.field(factory=dict[str, str])
    claims: list[str] = attrs.field(factory=list[str])
    unavailable: int = 0
    fenced: int = 0


async def worker(
    url: str,
    name: str,
    tally: Tally,
    *,
    ttl: timedelta = timedelta(seconds=2),
    idle: timedelta = timedelta(seconds=3),
    attempts: int = 80,
) -> None:
    """Claim and complete until nothing is ready for ``idle`` (longer than ``ttl``, so a
    lease orphaned by a fault expires and is claimed again before the worker gives up).

    A claim is not idempotent: when its answer is lost the lease is orphaned until it
    expires. A complete carries a request id made from the lease, so the client's
    retries (and this loop's) apply it once.
    """
    async with skift_server.connect(url, principal=skift.Agent(name), attempts=attempts) as bot:
        while True:
            try:
                claim = await bot.claim_next(ttl=ttl, wait=idle)
            except skift.NothingReady:
                return
            except skift.Unavailable:
                tally.unavailable += 1
                await asyncio.sleep(0.1)
                continue
            tally.claims.append(claim.node.ref)
            request_id = f"done-{claim.lease.id}"
            while True:
                try:
                    await bot.complete(claim.node.ref, lease=claim.lease.id, request_id=request_id)
                except skift.FencingError:
                    tally.fenced += 1  # the lease ran out during the fault: claimable again
                    break
                except skift.Unavailable:
                    tally.unavailable += 1
                    await asyncio.sleep(0.1)
                    continue
                tally.acked[claim.node.ref] = request_id
                break


async def all_events(sk: skift_server.RemoteSkift) -> list[skift.EventInfo]:
    """Every event of the organization, oldest first, through the change stream."""
    out: list[skift.EventInfo] = []
    cursor: str | None = None
    while True:
        page = await sk.watch_events(after=cursor, limit=500)
        out.extend(page.events)
        if not page.events:
            return out
        cursor = page.cursor


@attrs.frozen
class Audit:
    nodes: int
    done: int
    claimable: int
    lost: list[str]
    doubled: list[str]
    stuck: list[str]


async def audit(sk: skift_server.RemoteSkift, project: str, tally: Tally) -> Audit:
    """Every node of ``project``: done, claimable (ready, no live lease), or stuck; an
    acknowledged completion whose node is not done is lost; a node completed twice (two
    ``complete_node`` events) is doubled."""
    nodes: list[skift.NodeInfo] = []
    page: str | None = None
    while True:
        got = await sk.list_nodes(projects=[project], limit=500, page=page)
        nodes.extend(got.nodes)
        page = got.next_page
        if page is None:
            break
    ready: set[str] = set()
    page = None
    while True:
        got = await sk.ready(projects=[project], limit=500, page=page)
        ready.update(n.ref for n in got.nodes)
        page = got.next_page
        if page is None:
            break
    done = {n.ref for n in nodes if n.status is skift.Status.DONE}
    completions = Counter(
        e.node for e in await all_events(sk) if e.op == "complete_node" and e.node is not None
    )
    return Audit(
        nodes=len(nodes),
        done=len(done),
        claimable=len(ready - done),
        lost=sorted(set(tally.acked) - done),
        doubled=sorted(ref for ref, k in completions.items() if k > 1),
        stuck=sorted({n.ref for n in nodes} - done - ready),
    )
