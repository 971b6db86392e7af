"""skift's MCP server: the work graph as tools an agent calls.

    import skift, skift_mcp
    async with skift.open("memory:", principal=skift.Agent("bot")) as sk:
        server = skift_mcp.build_server(sk)      # an mcp MCPServer

``skift-mcp`` (and ``skift mcp``) run it over stdio against ``skift serve``'s
unix socket, so the agent acts as the principal of its uid; ``--server`` and
``SKIFT_TOKEN`` reach a remote server; ``--transport streamable-http`` serves
HTTP instead of stdio. See docs/mcp.md.

The names load on first use: ``skift-mcp`` answers an agent harness before
the MCP SDK has finished importing (see ``skift_mcp._front``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._cli import main
    from ._server import INSTRUCTIONS, build_server

__all__ = ["INSTRUCTIONS", "build_server", "main"]

_WHERE = {"INSTRUCTIONS": "_server", "build_server": "_server", "main": "_cli"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'skift_mcp' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
