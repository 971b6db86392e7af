"""The installed version of skift-mcp, as ``serverInfo.version`` names it."""

from __future__ import annotations


def server_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("skift-mcp")
    except PackageNotFoundError:
        return "0"
