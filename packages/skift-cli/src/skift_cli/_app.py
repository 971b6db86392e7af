"""The ``skift`` command line: the command modules it loads, and running it (exit codes, errors).

Each command group lives in a module of ``skift_cli/_commands``, which
attaches its commands to the root group :data:`cli` (see ``skift_cli._base``)
when imported. :data:`COMMANDS` names the commands of each module: a command
line imports only the module of the command it runs (``skift ready`` never
pays for the webhook or import commands), and ``skift --help`` imports them
all. To add a command group: write ``_commands/<name>.py`` with
``@command("Section")`` / ``@group("Section")`` from ``.._base``, then add
``"<name>": ("<command>", ...)`` to :data:`COMMANDS` (kept in alphabetical
order; a test fails when the map and the modules disagree).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from . import _config
from ._base import Failure, Root, cli
from ._moves import next_move

__all__ = ["COMMANDS", "COMMAND_MODULES", "cli", "load_all", "run"]

# Each module and the commands it defines or adds sub-commands to: `skift ready` imports
# `work` and no other; `skift org` imports admin and orgs (tests/cli/test_cli_imports.py
# checks this map against what the modules register).
COMMANDS: dict[str, tuple[str, ...]] = {
    "admin": ("principal", "org", "token"),
    "board": ("board",),
    "content": ("comment", "comments", "search", "blob"),
    "edit": ("update", "link", "unlink"),
    "events": ("events",),
    "graph": ("graph",),
    "holds": ("hold", "unhold", "focus"),
    "leases": ("leases",),
    "maintenance": ("admin",),
    "nodes": ("create", "patch", "show", "list", "drop", "reopen"),
    "orgs": ("org", "policy"),  # `org create` and `org list` join admin's `org` group
    "projects": ("project",),
    "setup": ("serve", "mcp", "migrate", "init", "demo", "completion"),
    "status": ("status",),
    "sweep": ("sweep",),
    "transfer": ("import", "export"),
    "usage": ("usage", "rate"),
    "webhooks": ("webhook",),
    "work": ("ready", "claim", "heartbeat", "complete", "release", "gate", "explain"),
}
COMMAND_MODULES = tuple(COMMANDS)

# In the map's order (not a set's, which varies run to run): the order modules load in is
# the order a section's unlisted commands appear in `skift --help`.
Root.modules = {
    name: tuple(m for m, names in COMMANDS.items() if name in names)
    for name in dict.fromkeys(n for names in COMMANDS.values() for n in names)
}


def load_all() -> None:
    """Import every command module (what `skift --help` lists; tests walk the full tree)."""
    cli.load_all()


def _json_wanted(args: Sequence[str]) -> bool:
    if "--json" in args:
        return True
    try:
        return _config.load().get("output") == "json"
    except _config.ConfigError:
        return False


def _show_failure(exc: Failure, as_json: bool) -> None:
    err = exc.error
    if as_json:
        import json

        body = {**err.as_dict(), "next": next_move(err), **exc.extra}
        sys.stderr.write(json.dumps({"error": body}, default=str) + "\n")
        return
    from rich.text import Text

    from ._render import err as console

    c = console()
    line = Text("error: ", style="bold red")
    line.append(err.message)
    c.print(line)
    move = next_move(err)
    if move:
        c.print(Text("  next: ", style="bold").append(move))
    if exc.server and err.code == "unavailable":
        c.print(Text(f"  server: {exc.server}", style="dim"))
    for key, value in exc.extra.items():
        c.print(Text(f"  {key.replace('_', ' ')}: {value}", style="dim"))


def _show_usage(exc: click.ClickException, as_json: bool) -> None:
    if as_json:
        import json

        ctx = getattr(exc, "ctx", None)
        where = f"'{ctx.command_path} --help'" if ctx is not None else "'skift --help'"
        body = {"code": "invalid", "message": exc.format_message(), "next": f"See {where}."}
        sys.stderr.write(json.dumps({"error": body}) + "\n")
    else:
        exc.show()


def run(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code of SURFACE.md."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        # Without standalone mode click hands back a command's `Exit(code)` as the return
        # value (it does not raise it): that is the exit code, wherever the command sits
        # on the line (`skift --json sweep read` is as much misuse as `skift sweep read`).
        rv = cli.main(args=args, prog_name="skift", standalone_mode=False)
    except Failure as exc:
        _show_failure(exc, _json_wanted(args))
        return exc.exit_code
    except (RecursionError, UnicodeError) as exc:
        # input no reader could take (nested too deeply, or bytes that are not text),
        # wherever it was met: one sentence and exit 2, not a traceback
        import skift

        what = (
            "the input nests too deeply to read"
            if isinstance(exc, RecursionError)
            else f"the input is not valid text ({exc})"
        )
        failure = Failure(
            skift.Invalid(what, next="Flatten it, or save it as UTF-8, and run the command again.")
        )
        _show_failure(failure, _json_wanted(args))
        return failure.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        _show_usage(exc, _json_wanted(args))
        return exc.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        sys.stderr.write("\naborted\n")
        return 130
    except BrokenPipeError:
        return 0
    return rv if isinstance(rv, int) and not isinstance(rv, bool) else 0
