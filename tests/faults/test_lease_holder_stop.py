"""SIGSTOP of a lease holder's process past its TTL, then SIGCONT: every write it then
makes under the old lease is refused as fenced, and none of them lands (issue 17,
fault suite). The holder is a real process (``holder.py``) over a real server."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import skift
import skift_server

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from serverproc import ServerProcess

pytestmark = pytest.mark.pg

HOLDER = Path(__file__).with_name("holder.py")


async def test_a_stopped_holder_is_fenced_after_its_ttl(
    fault_dsn: str, servers: Callable[..., Awaitable[ServerProcess]]
) -> None:
    server = await servers("--dsn", fault_dsn, "--test-hooks", "--sweep-every", "0.2")
    async with skift_server.connect(server.url, principal=skift.User("ada")) as sk:
        await sk.create_project("Stop")
        await sk.patch("stop", [skift.CreateNode(title="the work")])
    holder = await asyncio.create_subprocess_exec(
        sys.executable,
        str(HOLDER),
        server.url,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert holder.stdout is not None
        first = (await asyncio.wait_for(holder.stdout.readline(), 60)).decode()
        assert first.startswith("claimed "), first
        _, ref, lease = first.split()
        await asyncio.sleep(0.3)  # a few heartbeats go through
        holder.send_signal(signal.SIGSTOP)
        await asyncio.sleep(2.0)  # twice the TTL
        async with skift_server.connect(server.url, principal=skift.Agent("other")) as other:
            taken = await other.claim_next(ttl=timedelta(seconds=60))
            assert taken.node.ref == ref
            assert taken.lease.id != lease
            holder.send_signal(signal.SIGCONT)
            out, _ = await asyncio.wait_for(holder.communicate(), 60)
            assert holder.returncode == 0, out.decode()
            outcomes = [json.loads(line) for line in out.decode().splitlines() if line]
            node = await other.get(ref)
    finally:
        if holder.returncode is None:
            holder.send_signal(signal.SIGCONT)
            holder.kill()
            await holder.wait()
    print(outcomes)
    assert [o["write"] for o in outcomes] == [
        "heartbeat",
        "heartbeat again",
        "complete",
        "patch",
        "gate",
        "release",
    ]
    assert {o["outcome"] for o in outcomes} == {"FencingError"}, outcomes
    assert node.status is skift.Status.OPEN
    assert node.body != "late edit"
    assert node.lease is not None
    assert node.lease.id == taken.lease.id
