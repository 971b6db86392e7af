"""``skift mcp config [--harness NAME]``: a registration block for an agent harness.

A harness starts its MCP servers with a minimal environment: no ``PATH`` of
the user's shell (so neither ``skift-mcp`` nor ``uv`` is found by name), no
``XDG_RUNTIME_DIR``, no ``SKIFT_SERVER``. The block therefore names the
command by its absolute path (this installation's ``skift-mcp``) and the
server by its URL (resolved as every client resolves it: ``--server``,
``SKIFT_SERVER``, the config file, the user's default socket), so it works
whatever the harness passes on.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HARNESSES = ("claude-code", "claude-desktop", "cursor", "vscode", "codex", "generic")
WHERE = {
    "claude-code": "the project's .mcp.json (or run the `claude mcp add` line)",
    "claude-desktop": "claude_desktop_config.json (Settings, Developer, Edit Config)",
    "cursor": ".cursor/mcp.json in the project (or ~/.cursor/mcp.json)",
    "vscode": ".vscode/mcp.json in the workspace",
    "codex": "~/.codex/config.toml",
    "generic": "the harness's MCP configuration (the mcpServers form most harnesses read)",
}


def mcp_command() -> list[str]:
    """This installation's ``skift-mcp``, by absolute path; else its Python with ``-m``."""
    exe = Path(sys.executable)
    script = exe.parent / "skift-mcp"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script.absolute())]
    return [str(exe.absolute()), "-m", "skift_mcp"]


def acts_as(server: str) -> str:
    """Who the agent acts as, in one paragraph."""
    if server.startswith("unix:"):
        return (
            f"The agent acts as you: over the unix socket the kernel names the caller, and "
            f"skift-mcp runs under your uid ({os.getuid()}), so its claims may take work meant "
            "for you by reference and its writes carry your authority. To hold it to the agent "
            "policy, give it an agent identity: run the harness under a uid of its own bound to "
            "an agent (`skift principal add NAME --kind agent --uid UID`), or reach the server "
            "over TCP with an agent's token (`skift principal add NAME --kind agent`, `skift "
            "token create NAME`, serve with --listen, then `skift --server http://HOST:PORT mcp "
            "config` and put the token in SKIFT_TOKEN)."
        )
    return (
        "The agent acts as the principal of the token in SKIFT_TOKEN (replace the placeholder "
        "with it; `skift token create NAME` mints one for an agent made with `skift principal "
        "add NAME --kind agent`)."
    )


def block(harness: str, server: str, token: bool) -> tuple[str, dict[str, object]]:
    """The text to paste for ``harness`` and the server entry it holds."""
    command = mcp_command()
    env = {"SKIFT_SERVER": server}
    if token:
        env["SKIFT_TOKEN"] = "skt_..."
    entry: dict[str, object] = {"command": command[0], "args": command[1:], "env": env}
    if harness == "vscode":
        doc: dict[str, object] = {"servers": {"skift": {"type": "stdio", **entry}}}
        return json.dumps(doc, indent=2), entry
    if harness == "codex":
        envs = ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items())
        text = (
            "[mcp_servers.skift]\n"
            f"command = {json.dumps(command[0])}\n"
            f"args = {json.dumps(command[1:])}\n"
            f"env = {{ {envs} }}"
        )
        return text, entry
    return json.dumps({"mcpServers": {"skift": entry}}, indent=2), entry


def command_line(harness: str, entry: dict[str, object]) -> str | None:
    """The one command that registers it instead, for a harness that has one."""
    if harness != "claude-code":
        return None
    env = entry["env"]
    assert isinstance(env, dict)
    envs = " ".join(f"-e {k}={v}" for k, v in env.items())  # pyright: ignore[reportUnknownVariableType]
    args = entry["args"]
    assert isinstance(args, list)
    return " ".join([f"claude mcp add skift {envs} --", str(entry["command"]), *map(str, args)])  # pyright: ignore[reportUnknownArgumentType]
