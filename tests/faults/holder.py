"""A lease holder as a process of its own (``python holder.py URL``), for the SIGSTOP test.

It claims the one ready node as agent ``holder`` with a one-second TTL, prints
``claimed REF LEASE``, and heartbeats every 0.1 s. Stopped (SIGSTOP) past its TTL
and continued, it finds out on its next write; it then tries every write a holder
makes under its lease and prints one JSON line per write with the error class it
met (or ``ok``), and exits.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable
from datetime import timedelta

import skift
import skift_server


async def attempt(name: str, call: Awaitable[object]) -> None:
    try:
        await call
        outcome = "ok"
    except skift.SkiftError as exc:
        outcome = type(exc).__name__
    print(json.dumps({"write": name, "outcome": outcome}), flush=True)


async def main(url: str) -> None:
    async with skift_server.connect(url, principal=skift.Agent("holder")) as sk:
        claim = await sk.claim_next(ttl=timedelta(seconds=1))
        ref, lease = claim.node.ref, claim.lease.id
        print(f"claimed {ref} {lease}", flush=True)
        while True:
            await asyncio.sleep(0.1)
            try:
                await sk.heartbeat(ref, lease=lease, ttl=timedelta(seconds=1))
            except skift.SkiftError as exc:
                print(json.dumps({"write": "heartbeat", "outcome": type(exc).__name__}), flush=True)
                break
        await attempt("heartbeat again", sk.heartbeat(ref, lease=lease))
        await attempt(
            "complete", sk.complete(ref, lease=lease, result="late", request_id=f"late-{lease}")
        )
        await attempt(
            "patch",
            sk.patch(
                ref.split("#")[0],
                [skift.UpdateNode(node=ref, body="late edit")],
                lease=lease,
                request_id=f"late-patch-{lease}",
            ),
        )
        await attempt("gate", sk.gate(ref, lease=lease, title="late gate"))
        await attempt("release", sk.release(ref, lease=lease, reason="crash"))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
