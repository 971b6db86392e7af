"""skift's MCP server: the work graph as tools an agent calls.

    import skift, skift_mcp
    async with skift.open("memory:", principal=skift.Agent("bot")) as sk:
        server = skift_mcp.build_server(sk)      # an mcp MCPServer

``skift-mcp`` (and ``skift mcp``) run it over stdio against ``skift serve``'s
unix socket, so the agent acts as the principal of its uid; ``--server`` and
``SKIFT_TOKEN`` reach a remote server; ``--transport streamable-http`` serves
HTTP instead of stdio. See docs/mcp.md.
"""

from __future__ import annotations

from ._api import Api
from ._cli import main
from ._server import INSTRUCTIONS, build_server

__all__ = ["INSTRUCTIONS", "Api", "build_server", "main"]
