"""The unix socket names the caller: SO_PEERCRED, checked with a client running as another uid.

The test process (root) owns the server, so its uid is the owner's identity.
A client started with ``setpriv --reuid 65534`` is a different process of a
different user: the server must see uid 65534, refuse it until a principal
holds that uid, and then act as that principal, never as the owner.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest

import skift
import skift_server

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import Serve

NOBODY = 65534

CLIENT = """
import asyncio, json, sys
import skift, skift_server

async def main(url: str) -> None:
    out = {}
    try:
        async with skift_server.connect(url, attempts=1) as sk:
            out["ready"] = [n.ref for n in (await sk.ready()).nodes]
            claim = await sk.claim_next()
            out["claimed"] = claim.node.ref
            out["holder"] = claim.lease.holder
    except skift.SkiftError as e:
        out["error"] = {"class": type(e).__name__, "message": e.message, "next": e.next}
    print(json.dumps(out))

asyncio.run(main(sys.argv[1]))
"""

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to run a client as another uid",
)


def as_nobody(script_dir: Path, url: str) -> dict[str, Any]:
    """Run the client as uid/gid 65534 with no supplementary groups; its JSON answer."""
    script = script_dir / "client.py"
    script.write_text(CLIENT)
    script.chmod(0o644)
    done = subprocess.run(
        [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            sys.executable,
            str(script),
            url,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


async def test_peer_uid_identifies_the_caller(serve: Serve) -> None:
    """An unregistered uid is refused with the command that registers it; once a principal
    holds the uid, that process acts as that principal (its lease, its events)."""
    server = await serve("--memory", "--socket-mode", "0666")

    refused = as_nobody(server.dir, server.url)
    assert refused["error"]["class"] == "Unauthenticated"
    assert "65534" in refused["error"]["message"]
    assert f"uid {NOBODY}" in refused["error"]["next"]  # the CLI words it as --uid

    async with skift_server.connect(server.url) as owner:
        await owner.create_project("Shared")
        await owner.patch("shared", [skift.CreateNode(title="Work for the other user")])
        added = await owner.add_principal("nobody-bot", "agent", uid=NOBODY)
        assert [(i.scheme, i.value) for i in added.identities] == [("unix", str(NOBODY))]

        answer = as_nobody(server.dir, server.url)
        assert answer == {"ready": ["shared#1"], "claimed": "shared#1", "holder": "nobody-bot"}

        claims = [e for e in await owner.events() if e.op == "claim"]
        assert [(e.principal, e.principal_kind, e.identity_scheme) for e in claims] == [
            ("nobody-bot", "agent", "unix")
        ]
        owners = {e.principal for e in await owner.events() if e.op == "create_project"}
        assert owners == {_os_user()}


async def test_socket_mode_keeps_other_users_out(serve: Serve) -> None:
    """The default socket is 0660: a process of another user (not in the group) cannot connect."""
    server = await serve("--memory")
    mode = stat.S_IMODE(server.socket.stat().st_mode)
    assert mode == 0o660
    answer = as_nobody(server.dir, server.url)
    # permission denied naming the socket, not "unavailable … Retry" (issue 17 point 8)
    assert answer["error"]["class"] == "Unauthenticated"
    assert (
        f"permission denied opening the skift server's socket {server.socket}"
        in (answer["error"]["message"])
    )


async def test_stale_socket_is_replaced_and_a_live_one_is_not(serve: Serve) -> None:
    """A socket file left by a dead server is removed at start; a live server's is not stolen."""
    first = await serve("--memory")
    code = await first.stop(sig=9)  # SIGKILL: the socket file stays behind
    assert code == -9
    assert first.socket.exists()
    again = await serve("--memory", socket=first.socket)
    async with skift_server.connect(again.url) as sk:
        assert await sk.list_projects() == []
    argv = [
        sys.executable,
        "-m",
        "skift_server",
        "serve",
        "--memory",
        "--socket",
        str(again.socket),
    ]
    thief = await asyncio.to_thread(
        subprocess.run, argv, capture_output=True, text=True, timeout=60, check=False
    )
    assert thief.returncode == 1  # refused, naming the socket (SURFACE.md)
    assert f"another server is listening on {again.socket}" in thief.stderr
    async with skift_server.connect(again.url) as sk:
        assert await sk.list_projects() == []


def _os_user() -> str:
    import getpass

    return getpass.getuser()
