"""docs/webhooks.md's receiver runs as printed, against a real ``skift serve``.

The block that starts ``# receiver.py`` is written to a file and run with this
interpreter (the command the docs give, ``uv run python receiver.py``, is this
environment's python), with ``SKIFT_WEBHOOK_SECRET`` from ``add_webhook`` and
``SKIFT_SERVER`` naming the test's server (the docs' receiver reaches the
user's default socket). The one change: a free port instead of 8787. The
server runs with ``--webhook-allow-private``, as the docs' first step says,
and delivers a real POST; the receiver verifies it and prints the events.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from serverproc import ServerProcess, free_port

import skift
import skift_server

ROOT = Path(__file__).resolve().parents[2]


def receiver_block() -> str:
    text = (ROOT / "docs" / "webhooks.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python[^\n]*\n(.*?)\n```", text, re.S)
    found = [b for b in blocks if b.startswith("# receiver.py")]
    assert len(found) == 1, "docs/webhooks.md has no (or two) `# receiver.py` blocks"
    return found[0] + "\n"


def test_the_receiver_in_the_docs_runs_as_printed(tmp_path: Path) -> None:
    source = receiver_block()
    assert "port=8787" in source
    assert "uv run python receiver.py" in source
    port = free_port()
    path = tmp_path / "receiver.py"
    path.write_text(source.replace("port=8787", f"port={port}"), encoding="utf-8")

    server = ServerProcess("--memory", "--webhook-allow-private")
    receiver: subprocess.Popen[str] | None = None

    async def register() -> tuple[str, str, str]:
        async with skift_server.connect(server.url) as sk:
            proj = await sk.create_project("Webhooks tour")
            hook = await sk.add_webhook(proj.slug, f"http://127.0.0.1:{port}/skift")
            assert hook.secret
            return proj.slug, hook.id, hook.secret

    async def change(slug: str) -> None:
        async with skift_server.connect(server.url) as sk:
            await sk.patch(slug, [skift.CreateNode(title="Hello, webhooks")])

    async def delivered(hook_id: str) -> list[int | None]:
        async with skift_server.connect(server.url) as sk:
            return [d.last_status for d in await sk.webhook_deliveries(hook_id)]

    try:
        asyncio.run(server.start())
        slug, hook_id, secret = asyncio.run(register())
        env = {**os.environ, "SKIFT_WEBHOOK_SECRET": secret, "SKIFT_SERVER": server.url}
        receiver = subprocess.Popen(
            [sys.executable, str(path)],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        asyncio.run(_listening(port))
        asyncio.run(change(slug))
        line = _first_line(receiver)
        assert line == f"{slug}: create_node {slug}#1", line
        assert 204 in asyncio.run(delivered(hook_id))
    finally:
        if receiver is not None:
            receiver.terminate()
            receiver.communicate(timeout=30)
        asyncio.run(server.stop())
        server.cleanup()


async def _listening(port: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.1)
            continue
        writer.close()
        await writer.wait_closed()
        return
    raise AssertionError("the receiver never listened")


def _first_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if line.strip():
            return line.strip()
    raise AssertionError("the receiver printed nothing")
