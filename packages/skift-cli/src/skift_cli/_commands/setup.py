"""Setting up and running skift: ``init``, ``demo``, ``serve``, ``migrate``, ``mcp``."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from .. import _config
from .._base import App, Failure, app, command, global_options, usage_error

if TYPE_CHECKING:  # pathlib is imported where used: `skift --help` loads this module
    from pathlib import Path

_PASS: dict[str, Any] = {
    "ignore_unknown_options": True,
    "allow_extra_args": True,
    "help_option_names": [],
}


@command("Setup and admin", context_settings=_PASS, add_help_option=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def serve(args: tuple[str, ...]) -> None:
    """Serve skift over gRPC: the same flags as `skift-serve` (see `skift serve --help`).

    [--dsn DSN | --memory] [--socket PATH] [--listen HOST:PORT] [--http HOST:PORT] ...
    (--json: the log as JSON lines, as --log-format json)
    """
    from importlib.metadata import entry_points

    found = list(entry_points(group="console_scripts", name="skift-serve"))
    if not found:
        usage_error("skift-serve is not installed (it comes with the skift-server package)")
    argv = [x for x in args if x != "--json"]
    if len(argv) != len(args) or app().g.json:  # --json: the server's log as JSON lines
        argv = [*argv, "--log-format", "json"]
    path, made = _announce_starting(argv)
    main: Callable[[list[str]], int] = found[0].load()
    code = 1
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse: --help (0) or misuse (2); a message: misuse
        if isinstance(exc.code, str):
            click.echo(exc.code, err=True)
        code = exc.code if isinstance(exc.code, int) else 2
    finally:
        if code != 0 and path is not None:
            _forget_start(path, made)
    raise click.exceptions.Exit(code)


def _announce_starting(args: list[str]) -> tuple[Path | None, bool]:
    """Leave the "starting" marker beside the socket before loading the server (about a
    second of imports): a client run right after ``skift serve &`` then waits for it.

    Not when a live server holds the socket (this one will be refused, naming it).
    Returns the socket path announced (None: nothing) and whether its directory was made here.
    """
    if any(a in ("-h", "--help", "--version") for a in args):
        return None, False
    sock: str | None = None
    for i, arg in enumerate(args):
        if arg == "--socket" and i + 1 < len(args):
            sock = args[i + 1]
        elif arg.startswith("--socket="):
            sock = arg.split("=", 1)[1]
    from pathlib import Path

    from skift_server._paths import announce_starting, default_socket_path, live_server_at

    path = Path(sock) if sock else default_socket_path()
    if live_server_at(path):
        return None, False
    made = not path.parent.exists()
    try:
        path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        announce_starting(path)
    except OSError:
        return None, made  # the server itself reports what is wrong with the path
    return path, made


def _forget_start(path: Path, made: bool) -> None:
    """A server that did not serve removes what was made for it: its marker, the directory."""
    import contextlib

    from skift_server._paths import clear_starting

    clear_starting(path)
    if made:
        with contextlib.suppress(OSError):
            path.parent.rmdir()  # only when empty


@command("Setup and admin", context_settings=_PASS, add_help_option=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def mcp(args: tuple[str, ...]) -> None:
    """The MCP server over stdio (the same flags as `skift-mcp`; see `skift mcp --help`).

    `skift mcp config [--harness NAME]` prints the block that registers it with an
    agent harness (absolute paths; the server named), and who the agent acts as.
    """
    a = app()
    rest = [x for x in args if x != "--json"]  # MCP speaks JSON-RPC anyway
    if rest[:1] == ["config"]:
        _mcp_config(a, rest[1:], as_json=a.json or "--json" in args)
        return
    env = dict(os.environ)
    if a.g.server:
        env["SKIFT_SERVER"] = a.g.server
    if a.g.projects:
        env["SKIFT_PROJECT"] = a.g.projects[0]
    env["SKIFT_MCP_PROG"] = "skift mcp"  # the name its usage and errors show
    program = _program("skift-mcp")
    if program is None:
        usage_error("skift-mcp is not installed (it comes with the skift-mcp package)")
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(program, [program, *rest], env)  # the program replaces this process


def _program(name: str) -> str | None:
    """The console script ``name`` installed beside this Python (its environment's bin
    directory), else the first on PATH; None when there is none."""
    import shutil

    beside = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which(name)


def _mcp_config(a: App, args: list[str], *, as_json: bool) -> None:
    import argparse

    from .. import _mcpconfig as mc

    p = argparse.ArgumentParser(
        prog="skift mcp config",
        description="Print the block that registers skift-mcp with an agent harness: absolute "
        "paths and the server's URL, so it works from the harness's minimal environment.",
    )
    p.add_argument("--harness", choices=mc.HARNESSES, default="generic")
    try:
        ns = p.parse_args(args)
    except SystemExit as exc:
        raise click.exceptions.Exit(exc.code if isinstance(exc.code, int) else 2) from None
    from skift_server._paths import resolve_server

    server, source = resolve_server(a.server())
    token = not server.startswith("unix:")
    text, entry = mc.block(ns.harness, server, token)
    line = mc.command_line(ns.harness, entry)
    who = mc.acts_as(server)
    if as_json:
        a.emit(
            {
                "harness": ns.harness,
                "where": mc.WHERE[ns.harness],
                "server": server,
                "server_from": source,
                "entry": entry,
                "text": text,
                "command_line": line,
                "acts_as": who,
            }
        )
        return
    click.echo(text)
    note = f"\n# put it in {mc.WHERE[ns.harness]}; the server is {server} ({source})"
    if line:
        note += f"\n# or run: {line}"
    click.echo(f"{note}\n# {who}", err=True)


@command("Setup and admin")
@click.option(
    "--dsn",
    metavar="DSN",
    help="PostgreSQL to migrate (default: SKIFT_DSN, else the embedded cluster).",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    help="The embedded cluster's directory (without --dsn).",
)
@global_options
def migrate(dsn: str | None, data_dir: str | None) -> None:
    """Apply skift's PostgreSQL migrations (also done at every `skift serve` start)."""
    import asyncio

    import skift

    a = app()
    dsn = dsn or os.environ.get("SKIFT_DSN") or None
    from skift_server import database

    if not database.store_installed():
        usage_error("migrate needs the skift-store-pg package")
    try:
        applied = asyncio.run(database.on_database(dsn, data_dir, database.migrate))
    except skift.SkiftError as exc:
        raise Failure(exc) from None
    except OSError as exc:
        raise Failure(skift.Unavailable(f"cannot migrate: {exc}", next="Check the DSN.")) from None
    if a.json:
        a.emit({"applied": applied})
    elif applied:
        click.echo("applied: " + ", ".join(applied))
    else:
        click.echo("up to date")


@command("Setup and admin")
@click.option(
    "--output", type=click.Choice(_config.OUTPUTS), help="Default output (json = --json always)."
)
@click.option("--no-input", is_flag=True, help="Do not prompt; write what the flags say.")
@global_options
def init(output: str | None, no_input: bool) -> None:
    """Write the config file ($XDG_CONFIG_HOME/skift/config.toml): server, project, output.

    Prompts for what the flags leave out when run at a terminal.
    Example: skift init --server unix:///run/skift/skift.sock -p oauth-spike --no-input
    """
    a = app()
    path = _config.config_path()
    try:
        current = _config.load(path)
    except _config.ConfigError:
        current = {}
    server = a.g.server or current.get("server", "")
    proj = a.explicit_project() or current.get("project", "")
    out = output or current.get("output", "")
    if not no_input and sys.stdin.isatty():
        server = click.prompt(
            f"server (blank: {a.server_shown() if not server else 'the socket of skift serve'})",
            default=server,
            show_default=bool(server),
        )
        proj = click.prompt("default project (blank: none)", default=proj, show_default=bool(proj))
        out = click.prompt(
            "output", type=click.Choice(_config.OUTPUTS), default=out or "human", show_default=True
        )
    values = {
        "server": server.strip(),
        "project": proj.strip(),
        "output": out if out != "human" else "",
    }
    if values["project"]:
        _check_project(a, values["project"], values["server"] or None)
    written = _config.write(values, path)
    if a.g.json:
        a.emit({"path": str(written), **{k: v for k, v in values.items() if v}})
    else:
        click.echo(f"wrote {written}")


def _check_project(a: App, slug: str, server: str | None) -> None:
    """Refuse a default project the server does not know; say so when the server is down."""
    import asyncio

    import skift
    import skift_server

    async def go() -> None:
        async with skift_server.connect(server or a.server(), attempts=1, timeout=5.0) as sk:
            await sk.get_project(slug)

    try:
        asyncio.run(go())
    except skift.NotFound:
        usage_error(
            f"no project {slug!r} on the server: pick one from 'skift project list', "
            f"or create it first with 'skift project create TITLE'"
        )
    except skift.SkiftError as exc:
        click.echo(f"warning: could not check project {slug!r} ({exc.message})", err=True)


@command("Setup and admin")
@click.option("--pause", type=float, default=0.0, help="Seconds to pause between steps.")
@global_options
def demo(pause: float) -> None:
    """A self-contained tour on an in-memory store: decomposition, agents, a gate, a hold, Explain.

    With --json: the tour's steps and the project as it ends, as one document.
    """
    import asyncio

    from .. import _render
    from .._demo import tour

    a = app()
    if a.json:
        with _render.quiet():
            summary = asyncio.run(tour(pause=pause))
        a.emit(summary)
    else:
        asyncio.run(tour(pause=pause))


@command("Setup and admin")
@click.argument("shell", type=click.Choice(("bash", "zsh", "fish")))
@global_options
def completion(shell: str) -> None:
    """Print the shell completion script (commands, flags, project slugs, node refs).

    Example: skift completion bash > ~/.local/share/bash-completion/completions/skift
    (zsh: skift completion zsh > "${fpath[1]}/_skift"; fish: skift completion fish >
    ~/.config/fish/completions/skift.fish)
    """
    from click.shell_completion import get_completion_class

    from .._base import cli

    cls = get_completion_class(shell)
    assert cls is not None
    script = cls(cli, {}, "skift", "_SKIFT_COMPLETE").source()
    a = app()
    if a.json:
        a.emit({"shell": shell, "script": script})
    else:
        click.echo(script)
