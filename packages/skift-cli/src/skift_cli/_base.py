"""What every ``skift`` command shares: the root group, global options, the connection, failures.

A command module (``skift_cli/_commands/<group>.py``) attaches its commands
to the root with :func:`command` or :func:`group`, naming the help section
it belongs in, and uses :func:`app` for the resolved defaults, the
connection and output. ``skift_cli._app`` lists the command modules: adding
a command group is writing its module and adding its name there (one line).
Sub-commands of an existing group attach to that group's object
(``from ._commands.projects import project`` then ``@project.command()``).

Module level imports only click (through rich-click): skift, the gRPC client
and rich are imported inside the commands, so ``skift --help`` does not pay
for them. Global options (``-p/--project``, ``--json``, ``--server``) are
accepted before or after the subcommand, the way cobra's persistent flags
behave: each command carries them too, and they all write one shared state.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn, TypeVar

import click
import rich_click
from click.shell_completion import CompletionItem

from . import _config

if TYPE_CHECKING:
    import skift
    from skift_server import RemoteSkift

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

PRIORITIES = ("p0", "p1", "p2", "p3", "p4")
ASSIGNEE_KINDS = ("user", "agent")
STATUSES = ("open", "done", "dropped")
RELEASE_REASONS = ("crash", "budget", "preempted")
PRINCIPAL_KINDS = ("user", "agent", "service")

EXIT_CODES = {
    "refused": 1,
    "conflict": 1,
    "limit": 1,
    "unauthenticated": 1,
    "invalid": 2,
    "not_found": 3,
    "unavailable": 4,
    "nothing_ready": 5,
}

# The sections of `skift --help`, in this order, with the order of the
# commands inside each; a command names its section when it registers and
# lands at the end of it unless listed here (an unknown section is added last).
SECTIONS: dict[str, list[str]] = {
    "Work": ["ready", "claim", "heartbeat", "complete", "release", "gate", "explain"],
    "Graph": [
        "create",
        "update",
        "link",
        "unlink",
        "patch",
        "show",
        "list",
        "graph",
        "drop",
        "reopen",
        "hold",
        "unhold",
        "focus",
        "events",
    ],
    "Content": ["comment", "comments", "search", "usage", "rate", "blob"],
    "Projects": ["project"],
    "Setup and admin": [
        "status",
        "init",
        "demo",
        "serve",
        "migrate",
        "mcp",
        "completion",
        "principal",
        "token",
        "org",
    ],
}


def _click_version() -> None:
    """Give click its ``__version__`` from the name of its dist-info directory.

    rich-click reads ``click.__version__`` to render help, which click 8.2+
    answers through ``importlib.metadata`` (with a deprecation warning): ~15 ms
    of imports (email, zipfile, csv) on every ``skift --help``.
    """
    if "__version__" in vars(click):
        return
    site = os.path.dirname(os.path.dirname(click.__file__ or ""))
    try:
        names = [n for n in os.listdir(site) if n.startswith("click-") and n.endswith(".dist-info")]
    except OSError:
        return
    if len(names) == 1:
        click.__dict__["__version__"] = names[0][len("click-") : -len(".dist-info")]


_click_version()
rich_click.rich_click.COMMAND_GROUPS = {
    "skift": [{"name": name, "commands": names} for name, names in SECTIONS.items()]
}
rich_click.rich_click.STYLE_OPTIONS_TABLE_BOX = "SIMPLE"
rich_click.rich_click.MAX_WIDTH = 100

# ------------------------------------------------------------------ global options

_META = "skift.globals"


class Globals:
    """The global options as given on the command line (before or after the subcommand)."""

    def __init__(self) -> None:
        self.projects: list[str] = []
        self.json = False
        self.server: str | None = None


def globals_of(ctx: click.Context) -> Globals:
    g = ctx.meta.get(_META)
    if g is None:
        g = Globals()
        ctx.meta[_META] = g
    return g


def _cb_projects(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> None:
    if value:
        globals_of(ctx).projects.extend(value)


def _cb_json(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        globals_of(ctx).json = True


def _cb_server(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value:
        globals_of(ctx).server = value


def complete_project(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Project slugs from the server; nothing when it cannot be reached."""
    try:
        projects = App(ctx).quiet(lambda sk: sk.list_projects())
    except Exception:
        return []
    return [CompletionItem(p.slug, help=p.title) for p in projects if p.slug.startswith(incomplete)]


def complete_ref(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Open node refs of the current project(s) from the server; nothing when it is down."""
    try:
        app = App(ctx)
        projects = app.projects()
        page = app.quiet(lambda sk: sk.list_nodes(projects=projects, status="open", limit=200))
    except Exception:
        return []
    out: list[CompletionItem] = []
    for n in page.nodes:
        ref = f"#{n.number}" if incomplete.startswith("#") and len(projects) == 1 else n.ref
        if ref.startswith(incomplete):
            out.append(CompletionItem(ref, help=n.title))
    return out


def global_options(f: F) -> F:
    """``-p/--project`` (repeatable), ``--json``, ``--server`` on a command or group."""
    f = click.option(
        "--server",
        metavar="URL",
        expose_value=False,
        callback=_cb_server,
        help="unix:///path.sock, http://host:port or https://host:port "
        "(default: SKIFT_SERVER, the config file, then the socket of `skift serve`).",
    )(f)
    f = click.option(
        "--json",
        is_flag=True,
        expose_value=False,
        callback=_cb_json,
        help="JSON on stdout (errors as JSON on stderr).",
    )(f)
    f = click.option(
        "-p",
        "--project",
        multiple=True,
        metavar="PROJECT",
        expose_value=False,
        callback=_cb_projects,
        shell_complete=complete_project,
        help="The project (repeatable where a command takes several; "
        "default: SKIFT_PROJECT, then the config file).",
    )(f)
    return f


# ----------------------------------------------------------------------- failures


class Failure(Exception):
    """A skift error, carried out of a command to :func:`run` for rendering."""

    def __init__(self, error: skift.SkiftError, *, server: str | None = None, **extra: Any) -> None:
        super().__init__(error.message)
        self.error = error
        self.exit_code = EXIT_CODES.get(error.code, 1)
        self.server = server
        self.extra = extra


# ------------------------------------------------------------------------- the app


class App:
    """What a command needs: the resolved defaults, a connection, and output."""

    def __init__(self, ctx: click.Context) -> None:
        self.ctx = ctx
        self.g = globals_of(ctx)
        self._cfg: dict[str, str] | None = None

    @property
    def cfg(self) -> dict[str, str]:
        if self._cfg is None:
            try:
                self._cfg = _config.load()
            except _config.ConfigError as exc:
                raise click.UsageError(f"{exc}; fix it or run 'skift init' again") from None
        return self._cfg

    @property
    def json(self) -> bool:
        return self.g.json or self.cfg.get("output") == "json"

    def projects(self) -> list[str]:
        """Zero, one or many: the flags, else SKIFT_PROJECT, else the config file.

        ``-p '*'`` means every project you can read (it overrides a default project).
        """
        if "*" in self.g.projects:
            return []
        if self.g.projects:
            return list(dict.fromkeys(self.g.projects))
        env = os.environ.get("SKIFT_PROJECT", "").strip()
        if env:
            return [env]
        if self.cfg.get("project"):
            return [self.cfg["project"]]
        return []

    def project(self, *, required: bool = False) -> str | None:
        """Exactly one project (or none, when not required); two is a usage error."""
        ps = self.projects()
        if "*" in self.g.projects and required:
            raise click.UsageError(
                "this command acts on one project: give -p PROJECT, not '*'", ctx=self.ctx
            )
        if len(ps) > 1:
            raise click.UsageError(
                f"only one --project is meaningful here (got {', '.join(ps)})", ctx=self.ctx
            )
        if not ps and required:
            raise click.UsageError(
                "no project: give -p PROJECT, set SKIFT_PROJECT, or run 'skift init'",
                ctx=self.ctx,
            )
        return ps[0] if ps else None

    def project_source(self) -> str | None:
        """Where the default project came from, when no -p gave one (for error messages)."""
        if self.g.projects:
            return None
        if os.environ.get("SKIFT_PROJECT", "").strip():
            return "SKIFT_PROJECT"
        if self.cfg.get("project"):
            return f"the config file {_config.config_path()} (project = {self.cfg['project']!r})"
        return None

    def explicit_project(self) -> str | None:
        """The one project given with -p on this command line (defaults do not count)."""
        ps = [p for p in dict.fromkeys(self.g.projects) if p != "*"]
        if len(ps) > 1:
            raise click.UsageError(
                f"only one --project is meaningful here (got {', '.join(ps)})", ctx=self.ctx
            )
        return ps[0] if ps else None

    def server(self) -> str | None:
        return self.g.server or os.environ.get("SKIFT_SERVER") or self.cfg.get("server") or None

    def server_shown(self) -> str:
        url = self.server()
        if url:
            return url
        from skift_server._paths import find_socket

        return f"unix://{find_socket()[0]}"

    def call(self, fn: Callable[[RemoteSkift], Awaitable[T]], **extra: Any) -> T:
        """Connect, run ``fn`` on the remote Skift, close; a skift error becomes a Failure."""
        import asyncio

        import skift
        import skift_server

        async def go() -> T:
            async with skift_server.connect(self.server(), on_wait=_say_waiting) as sk:
                return await fn(sk)

        try:
            return asyncio.run(go())
        except skift.SkiftError as exc:
            source = self.project_source()
            if source and exc.code == "not_found" and "project" in exc.message:
                extra = {**extra, "default_project_from": source}
            raise Failure(exc, server=self.server_shown(), **extra) from None

    def quiet(self, fn: Callable[[RemoteSkift], Awaitable[T]]) -> T:
        """One quick attempt (shell completion): no retries, a short deadline."""
        import asyncio

        import skift_server

        async def go() -> T:
            async with skift_server.connect(self.server(), timeout=2.0, attempts=1) as sk:
                return await fn(sk)

        return asyncio.run(go())

    def emit(self, value: Any) -> None:
        """A JSON document on stdout."""
        import json

        click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _say_waiting(message: str) -> None:
    sys.stderr.write(f"{message}\n")
    sys.stderr.flush()


def app() -> App:
    return App(click.get_current_context())


def to_json(value: object) -> Any:
    import skift

    return skift.to_json(value)


def usage_error(message: str) -> NoReturn:
    raise click.UsageError(message, ctx=click.get_current_context())


def duration(text: str | None, flag: str) -> timedelta | None:
    """``90``, ``90s``, ``10m``, ``2h``, ``1d`` (a bare number is seconds)."""
    if text is None:
        return None
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    t = text.strip().lower()
    scale = 1
    if t and t[-1] in units:
        scale = units[t[-1]]
        t = t[:-1]
    try:
        value = float(t) * scale
    except ValueError:
        usage_error(f"{flag} {text!r} is not a duration (like 90s, 10m, 2h)")
    if value < 0:
        usage_error(f"{flag} {text!r} is negative")
    return timedelta(seconds=value)


def read_text(path: str, flag: str) -> str:
    """A file's (or stdin's, for ``-``) text; undecodable bytes are a usage error naming where."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as fh:
                data = fh.read()
    except OSError as exc:
        usage_error(f"{flag} {path}: {exc.strerror}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = "stdin" if path == "-" else path
        usage_error(
            f"{flag} {where} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start}); save it as UTF-8 and run the command again"
        )


# --------------------------------------------------------------------------- root

# Words a newcomer tries that name no command, and the command that does what they meant.
SYNONYMS: dict[str, str] = {
    "watch": "events --follow",
    "tail": "events --follow",
    "log": "events",
    "history": "events",
    "undo": "reopen' (a done or dropped node), 'skift unhold' or 'skift unlink",
    "done": "complete",
    "close": "complete",
    "finish": "complete",
    "delete": "drop",
    "remove": "drop",
    "rm": "drop",
    "new": "create",
    "add": "create",
    "ls": "list",
    "get": "show",
    "view": "show",
    "take": "claim",
    "whoami": "status",
}


def close_names(name: str, names: list[str]) -> list[str]:
    """The names a mistyped ``name`` is one slip away from: one letter added, dropped,
    changed or swapped (two for names of seven letters or more), never the first letter
    changed. ``watch`` is not a slip of ``patch``, nor ``undo`` of ``unhold``."""
    budget = 2 if len(name) >= 7 else 1
    return [n for n in names if n[:1] == name[:1] and _distance(name, n) <= budget]


def _distance(a: str, b: str) -> int:
    """Damerau-Levenshtein distance (adjacent swaps count one)."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def no_such_command(ctx: click.Context, name: str, names: list[str]) -> click.UsageError:
    """ "No such command", with a suggestion only when one is close (or a known synonym)."""
    where = ctx.command_path
    close = close_names(name, names)
    if close:
        hint = f" Did you mean {' or '.join(repr(c) for c in close[:2])}?"
    elif name in SYNONYMS and ctx.parent is None:
        hint = f" For that, use 'skift {SYNONYMS[name]}'."
    else:
        hint = f" See '{where} --help' for the commands."
    return click.UsageError(f"No such command {name!r}.{hint}", ctx=ctx)


class Root(rich_click.RichGroup):
    """The root group: a command's module is imported when the command is asked for.

    ``modules`` maps each command name to the modules of ``skift_cli._commands``
    that define it or add to it (``skift_cli._app`` fills it); ``skift ready``
    imports ``work`` alone, and
    listing the commands (``--help``, completion) imports them all.
    """

    modules: ClassVar[dict[str, tuple[str, ...]]] = {}

    def load(self, module: str) -> None:
        import importlib

        importlib.import_module(f"{__package__}._commands.{module}")

    def load_all(self) -> None:
        for modules in self.modules.values():
            for module in modules:
                self.load(module)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        modules = self.modules.get(cmd_name)
        if modules is None:
            self.load_all()  # a name the map does not know: whatever registers it
        else:
            for module in modules:
                self.load(module)
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self.load_all()
        return super().list_commands(ctx)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            raise no_such_command(ctx, exc.command_name, self.list_commands(ctx)) from None

    def format_help(self, ctx: Any, formatter: Any) -> None:
        # Every module first: the help's sections are read before the commands are listed,
        # and a command a module files under its section must be there by then (else it
        # is shown twice, in its section and under "Commands").
        self.load_all()
        super().format_help(ctx, formatter)


@click.group(
    cls=Root,
    context_settings={"help_option_names": ["-h", "--help"]},
    invoke_without_command=True,
)
@global_options
@click.version_option(package_name="skift-cli", prog_name="skift")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """skift: a work graph that AI agents and people share.

    Work is a node in a project; nodes wait on each other and on their
    children; readiness is derived. Agents take ready work under a lease;
    people park work with holds and answer agents through gates.

    Start with `skift demo` (a tour on an in-memory store), then `skift serve`
    and `skift project create TITLE` in another terminal. References:
    `slug#N`, `#N` inside the current project, or a ULID. Exit codes: 0 done,
    1 refused/conflict/limit/unauthenticated, 2 usage or invalid input, 3 not
    found, 4 server unavailable, 5 nothing ready.
    """
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


def _section(section: str, name: str) -> None:
    names = SECTIONS.get(section)
    if names is None:
        names = SECTIONS[section] = []
        rich_click.rich_click.COMMAND_GROUPS["skift"].append({"name": section, "commands": names})
    if name not in names:
        names.append(name)


def command(
    section: str, name: str | None = None, **kwargs: Any
) -> Callable[[Callable[..., Any]], click.Command]:
    """Register a function as ``skift NAME`` (default: its name) under ``section`` of the help.

    Example (in a command module)::

        @command("Work")
        @click.argument("ref", shell_complete=complete_ref)
        @global_options
        def nudge(ref: str) -> None:
            \"\"\"One line of help. Example: skift nudge oauth-spike#3\"\"\"
    """

    def deco(f: Callable[..., Any]) -> click.Command:
        cmd = cli.command(name, **kwargs)(f)
        _section(section, cmd.name or f.__name__)
        return cmd

    return deco


def group(
    section: str, name: str | None = None, **kwargs: Any
) -> Callable[[Callable[..., Any]], click.Group]:
    """Register a function as the group ``skift NAME`` under ``section`` of the help.

    Its sub-commands attach to the returned group (``@thing.command("add")``),
    with ``@global_options`` on each.
    """

    def deco(f: Callable[..., Any]) -> click.Group:
        grp = cli.group(name, **kwargs)(f)
        _section(section, grp.name or f.__name__)
        return grp

    return deco


# ------------------------------------------------------------- shared building blocks


class DefaultGroup(rich_click.RichGroup):
    """A group whose first word may be an argument of its default subcommand.

    ``skift comment REF BODY`` is ``skift comment add REF BODY``; ``skift
    comment resolve ID`` is the ``resolve`` subcommand.
    """

    default_command = "add"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


def patch_out(a: App, res: skift.PatchResult, verb: str) -> None:
    if a.json:
        a.emit(to_json(res))
    else:
        from . import _render

        _render.patch_result(res, verb=verb)


def filter_options(f: F) -> F:
    """The NodeFilter flags shared by ready, claim and list."""
    f = click.option(
        "--parent", metavar="REF", shell_complete=complete_ref, help="Only children of REF."
    )(f)
    f = click.option(
        "--min-priority", type=click.Choice(PRIORITIES), help="This priority or more urgent."
    )(f)
    f = click.option("--assignee-kind", type=click.Choice(ASSIGNEE_KINDS))(f)
    f = click.option(
        "--any-label", "any_labels", multiple=True, metavar="L", help="Any of these labels."
    )(f)
    f = click.option("--label", "labels", multiple=True, metavar="L", help="All of these labels.")(
        f
    )
    f = click.option("--kind", "kinds", multiple=True, metavar="K", help="Any of these kinds.")(f)
    return f


def filters(
    a: App,
    kinds: tuple[str, ...],
    labels: tuple[str, ...],
    any_labels: tuple[str, ...],
    assignee_kind: str | None,
    min_priority: str | None,
    parent: str | None,
) -> dict[str, Any]:
    return {
        "projects": a.projects(),
        "kinds": list(kinds),
        "labels": list(labels),
        "any_labels": list(any_labels),
        "assignee_kind": assignee_kind,
        "min_priority": min_priority,
        "parent": parent,
    }
