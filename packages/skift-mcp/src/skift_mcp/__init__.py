"""skift's MCP server for agents (being built: issue 7)."""


def main() -> None:
    raise SystemExit("skift-mcp: the MCP server is being built")
