"""``skift-mcp`` / ``skift mcp``: serve skift's MCP tools over stdio or streamable HTTP.

The process reaches ``skift serve`` as a client: by default over the server's
unix socket, so the kernel names the caller and the agent acts as the
principal of its uid; ``--server`` / ``SKIFT_SERVER`` (then the config file's
``server``) and ``SKIFT_TOKEN`` reach a remote server as the token's principal.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from ._front import Early, Lines


def parser(prog: str = "skift-mcp") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Serve skift's MCP tools (ready, claim, complete, gate, patch...) to an agent.",
    )
    p.add_argument(
        "--server",
        default=os.environ.get("SKIFT_SERVER"),
        help="the skift server: unix:///path.sock, http://host:port or https://host:port "
        "(default: SKIFT_SERVER, then the config file's server, then the user's default "
        "socket, as the CLI resolves it; `skift mcp config` writes it out). Over TCP the "
        "token comes from SKIFT_TOKEN.",
    )
    p.add_argument(
        "--transport",
        choices=["stdio", "streamable-http"],
        default="stdio",
        help="how the agent reaches this MCP server (default: stdio)",
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="streamable-http: address to listen on (default 127.0.0.1). Every caller of the "
        "HTTP endpoint acts as this process's skift principal.",
    )
    p.add_argument("--port", type=int, default=8765, help="streamable-http: port (default 8765)")
    return p


def _serve(url: str | None, transport: str, host: str, port: int) -> None:
    if transport == "stdio":
        from ._front import serve  # anyio and the SDK load once the session needs them

        serve(url, _hand_over)
        return
    import anyio

    anyio.run(_serve_http, url, host, port)


def _hand_over(early: Early, lines: Lines) -> None:
    """The session after ``_front``'s part: anyio, the SDK loading, the SDK's server."""
    import anyio

    from ._stdio import resume

    anyio.run(resume, early, lines)


async def _serve_http(url: str | None, host: str, port: int) -> None:
    import skift_server

    from ._server import build_server

    async with skift_server.connect(url) as sk:
        await build_server(sk).run_streamable_http_async(host=host, port=port)


def main(argv: list[str] | None = None, *, prog: str | None = None) -> None:
    """Run the MCP server until its transport closes (stdin ends, or a signal).

    ``prog`` is the name its usage shows: by default ``SKIFT_MCP_PROG`` (``skift mcp``
    sets it when it runs this program), else ``skift-mcp``."""
    prog = prog or os.environ.pop("SKIFT_MCP_PROG", None) or "skift-mcp"
    ns = parser(prog).parse_args(sys.argv[1:] if argv is None else argv)
    if not ns.server:
        from skift_server._paths import configured_server

        ns.server = configured_server()
    try:
        _serve(ns.server, ns.transport, ns.host, ns.port)
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except Exception as exc:
        import skift

        err = _skift_error(exc)
        if err is None:
            raise
        print(f"{prog}: {err}", file=sys.stderr)
        raise SystemExit(4 if isinstance(err, skift.Unavailable) else 1) from None


def _skift_error(exc: BaseException) -> BaseException | None:
    """The skift error behind ``exc``, also from inside the task group's exception group."""
    import skift

    if isinstance(exc, skift.SkiftError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        group = cast("BaseExceptionGroup[BaseException]", exc)
        for inner in group.exceptions:
            found = _skift_error(inner)
            if found is not None:
                return found
    return None
