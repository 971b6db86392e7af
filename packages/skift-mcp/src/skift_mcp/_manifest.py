"""The answers ``skift-mcp``'s stdio front gives before the MCP SDK has loaded, computed by the SDK.

For every protocol version of the initialize handshake, the SDK's own server
(``build_server``) is asked ``initialize`` and ``tools/list`` over its stdio
transport, and the wire results are kept in ``_manifest.json`` (skift-mcp's
version among them: reading it at start-up would cost the front more than
the rest of its answer). A test computes them again and compares: after
changing a tool, its description, the instructions or the version,
regenerate with

    uv run python -m skift_mcp._manifest
"""

from __future__ import annotations

import json
import math
from typing import Any, cast

import anyio
import anyio.streams.memory
from mcp.server.stdio import stdio_server
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

import skift

from ._server import build_server
from ._stdio import MANIFEST, ClientLines


class _Collect:
    """The server's output; ends its input once the tool list is answered."""

    def __init__(self, end: anyio.streams.memory.MemoryObjectSendStream[str]) -> None:
        self.lines: list[str] = []
        self._end = end

    async def write(self, text: str) -> None:
        self.lines.append(text)
        if json.loads(text).get("id") == 2:
            self._end.close()

    async def flush(self) -> None:
        return None


async def _answers(version: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The SDK server's initialize result and tool list when a client asks for ``version``."""
    server = build_server(cast(skift.Skift, object()))  # the tools only call it when run
    lowlevel = server._lowlevel_server  # pyright: ignore[reportPrivateUsage]
    send, receive = anyio.create_memory_object_stream[str](math.inf)
    hello = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "skift-manifest", "version": "0"},
    }
    for msg in (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ):
        await send.send(json.dumps(msg))
    out = _Collect(send)
    lines: Any = ClientLines(receive)
    output: Any = out
    with receive:
        async with stdio_server(stdin=lines, stdout=output) as (read, write):
            await lowlevel.run(read, write, lowlevel.create_initialization_options())
    answers = {a["id"]: a for a in map(json.loads, out.lines) if "id" in a}
    return answers[1]["result"], answers[2]["result"]["tools"]


async def compute() -> dict[str, Any]:
    """The manifest as the installed SDK and the current tools make it."""
    versions: dict[str, Any] = {}
    tool_lists: list[list[dict[str, Any]]] = []
    for version in HANDSHAKE_PROTOCOL_VERSIONS:
        init, tools = await _answers(version)
        if tools not in tool_lists:
            tool_lists.append(tools)
        versions[version] = {"initialize": init, "tools": tool_lists.index(tools)}
    return {"latest": LATEST_HANDSHAKE_VERSION, "versions": versions, "tool_lists": tool_lists}


def render(manifest: dict[str, Any]) -> str:
    return json.dumps(manifest, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def main() -> None:
    MANIFEST.write_text(render(anyio.run(compute)), encoding="utf-8")
    print(f"wrote {MANIFEST}")


if __name__ == "__main__":
    main()
