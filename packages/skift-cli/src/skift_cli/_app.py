"""The ``skift`` command tree.

Each command decodes its flags, calls one method of the skift API over
``skift_server.connect`` and renders the answer. Module level imports only
click (through rich-click): skift, the gRPC client and rich are imported
inside the commands, so ``skift --help`` does not pay for them.

Global options (``-p/--project``, ``--json``, ``--server``) are accepted before
or after the subcommand, the way cobra's persistent flags behave: each
command carries them too, and they all write one shared state.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

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

rich_click.rich_click.COMMAND_GROUPS = {
    "skift": [
        {
            "name": "Work",
            "commands": [
                "ready",
                "claim",
                "heartbeat",
                "complete",
                "release",
                "gate",
                "explain",
            ],
        },
        {
            "name": "Graph",
            "commands": [
                "create",
                "patch",
                "show",
                "list",
                "drop",
                "reopen",
                "hold",
                "unhold",
                "focus",
                "events",
            ],
        },
        {"name": "Content", "commands": ["comment", "comments", "search", "usage"]},
        {"name": "Projects", "commands": ["project"]},
        {
            "name": "Setup and admin",
            "commands": ["init", "demo", "serve", "migrate", "mcp", "principal", "token", "org"],
        },
    ]
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


def _globals(ctx: click.Context) -> Globals:
    g = ctx.meta.get(_META)
    if g is None:
        g = Globals()
        ctx.meta[_META] = g
    return g


def _cb_projects(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> None:
    if value:
        _globals(ctx).projects.extend(value)


def _cb_json(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        _globals(ctx).json = True


def _cb_server(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value:
        _globals(ctx).server = value


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

        body = {**err.as_dict(), **exc.extra}
        sys.stderr.write(json.dumps({"error": body}, default=str) + "\n")
        return
    from rich.text import Text

    from ._render import err as console

    c = console()
    line = Text("error: ", style="bold red")
    line.append(err.message)
    c.print(line)
    if err.next:
        c.print(Text("  next: ", style="bold").append(err.next))
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
        cli.main(args=args, prog_name="skift", standalone_mode=False)
    except Failure as exc:
        _show_failure(exc, _json_wanted(args))
        return exc.exit_code
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
    return 0


# ------------------------------------------------------------------------- the app


class App:
    """What a command needs: the resolved defaults, a connection, and output."""

    def __init__(self, ctx: click.Context) -> None:
        self.ctx = ctx
        self.g = _globals(ctx)
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
        """Zero, one or many: the flags, else SKIFT_PROJECT, else the config file."""
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

    def explicit_project(self) -> str | None:
        """The one project given with -p on this command line (defaults do not count)."""
        ps = list(dict.fromkeys(self.g.projects))
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
        from skift_server import default_socket_path

        return f"unix://{default_socket_path()}"

    def call(self, fn: Callable[[RemoteSkift], Awaitable[T]], **extra: Any) -> T:
        """Connect, run ``fn`` on the remote Skift, close; a skift error becomes a Failure."""
        import asyncio

        import skift
        import skift_server

        async def go() -> T:
            async with skift_server.connect(self.server()) as sk:
                return await fn(sk)

        try:
            return asyncio.run(go())
        except skift.SkiftError as exc:
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


def app() -> App:
    return App(click.get_current_context())


def to_json(value: object) -> Any:
    import skift

    return skift.to_json(value)


def _usage(message: str) -> NoReturn:
    raise click.UsageError(message, ctx=click.get_current_context())


def _duration(text: str | None, flag: str) -> timedelta | None:
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
        _usage(f"{flag} {text!r} is not a duration (like 90s, 10m, 2h)")
    if value < 0:
        _usage(f"{flag} {text!r} is negative")
    return timedelta(seconds=value)


def _read_text(path: str, flag: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError as exc:
        _usage(f"{flag} {path}: {exc.strerror}")


# --------------------------------------------------------------------------- root


@click.group(
    cls=rich_click.RichGroup,
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

    Start with `skift demo` (a tour on an in-memory store), `skift serve`,
    then `skift init`. References: `slug#N`, `#N` inside the current project,
    or a ULID. Exit codes: 0 done, 1 refused/conflict/limit/unauthenticated,
    2 usage or invalid input, 3 not found, 4 server unavailable, 5 nothing ready.
    """
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


# -------------------------------------------------------------------- pass-through

_PASS: dict[str, Any] = {
    "ignore_unknown_options": True,
    "allow_extra_args": True,
    "help_option_names": [],
}


@cli.command(context_settings=_PASS, add_help_option=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def serve(args: tuple[str, ...]) -> None:
    """Serve skift over gRPC: the same flags as `skift-serve` (see `skift serve --help`).

    [--dsn DSN | --memory] [--socket PATH] [--listen HOST:PORT] [--http HOST:PORT] ...
    """
    from importlib.metadata import entry_points

    found = list(entry_points(group="console_scripts", name="skift-serve"))
    if not found:
        _usage("skift-serve is not installed (it comes with the skift-server package)")
    main: Callable[[list[str]], int] = found[0].load()
    raise click.exceptions.Exit(main(list(args)))


@cli.command(context_settings=_PASS, add_help_option=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def mcp(args: tuple[str, ...]) -> None:
    """The MCP server over stdio (the same flags as `skift-mcp`; see `skift mcp --help`)."""
    a = app()
    if a.g.server:
        os.environ["SKIFT_SERVER"] = a.g.server
    if a.g.projects:
        os.environ["SKIFT_PROJECT"] = a.g.projects[0]
    import skift_mcp

    main: Callable[[list[str]], int | None] = getattr(skift_mcp, "main")  # noqa: B009
    rv = main(list(args))
    raise click.exceptions.Exit(int(rv or 0))


@cli.command()
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
    try:
        import skift_pg
    except ImportError:
        _usage("migrate needs the skift-store-pg package")
    cluster: Any = None
    try:
        if dsn is None:
            from pathlib import Path

            from skift_pg.embedded import EmbeddedCluster, default_data_dir

            cluster = EmbeddedCluster(Path(data_dir) if data_dir else default_data_dir())
            target: str = cluster.start()
        else:
            target = dsn
        applied = asyncio.run(skift_pg.migrate(target))
    except skift.SkiftError as exc:
        raise Failure(exc) from None
    except OSError as exc:
        raise Failure(skift.Unavailable(f"cannot migrate: {exc}", next="Check the DSN.")) from None
    finally:
        if cluster is not None:
            cluster.stop()
    if a.json:
        a.emit({"applied": applied})
    elif applied:
        click.echo("applied: " + ", ".join(applied))
    else:
        click.echo("up to date")


# ------------------------------------------------------------------------ projects


@cli.group()
@global_options
def project() -> None:
    """Projects: create, list, show, rename, archive."""


@project.command("create")
@click.argument("title")
@click.option("--slug", help="The slug (default: derived from the title).")
@click.option("--priority", type=click.Choice(PRIORITIES), default="p2", show_default=True)
@click.option("--vcs-url", default="", help="Clone URL of the repository the project delivers to.")
@global_options
def project_create(title: str, slug: str | None, priority: str, vcs_url: str) -> None:
    """Create a project.

    Example: skift project create "OAuth spike" --priority p1
    """
    a = app()
    p = a.call(lambda sk: sk.create_project(title, slug=slug, priority=priority, vcs_url=vcs_url))
    if a.json:
        a.emit(to_json(p))
    else:
        click.echo(f"created project {p.slug}")


@project.command("list")
@click.option("--archived", is_flag=True, help="Include archived projects.")
@click.option("--limit", type=int, help="At most this many.")
@global_options
def project_list(archived: bool, limit: int | None) -> None:
    """List projects, most recently active first."""
    a = app()
    ps = a.call(lambda sk: sk.list_projects(archived=archived, limit=limit))
    if a.json:
        a.emit({"projects": to_json(ps)})
        return
    from . import _render

    if ps:
        _render.out().print(_render.project_table(ps))
    else:
        _render.out().print("[dim]no projects: create one with 'skift project create TITLE'[/dim]")


@project.command("show")
@click.argument("ref", metavar="PROJECT", shell_complete=complete_project)
@global_options
def project_show(ref: str) -> None:
    """Show a project."""
    a = app()
    p = a.call(lambda sk: sk.get_project(ref))
    if a.json:
        a.emit(to_json(p))
    else:
        from . import _render

        _render.out().print(_render.project_panel(p))


@project.command("rename")
@click.argument("ref", metavar="PROJECT", shell_complete=complete_project)
@click.argument("title")
@click.option("--slug", help="A new slug too (the old one keeps resolving).")
@global_options
def project_rename(ref: str, title: str, slug: str | None) -> None:
    """Retitle a project (and optionally re-slug it)."""
    a = app()
    p = a.call(lambda sk: sk.update_project(ref, title=title, slug=slug))
    if a.json:
        a.emit(to_json(p))
    else:
        click.echo(f"{p.slug}: {p.title}")


@project.command("archive")
@click.argument("ref", metavar="PROJECT", shell_complete=complete_project)
@click.option("--reason", default="archived", show_default=True)
@global_options
def project_archive(ref: str, reason: str) -> None:
    """Archive a project: read-only for good; its references keep resolving."""
    a = app()
    p = a.call(lambda sk: sk.archive_project(ref, reason=reason))
    if a.json:
        a.emit(to_json(p))
    else:
        click.echo(f"archived {p.slug}")


# --------------------------------------------------------------------------- graph


def _patch_out(a: App, res: skift.PatchResult, verb: str) -> None:
    if a.json:
        a.emit(to_json(res))
    else:
        from . import _render

        _render.patch_result(res, verb=verb)


@cli.command()
@click.argument("title")
@click.option("--kind", help="A label skift never interprets (task, bug, spike, chore…).")
@click.option("--priority", type=click.Choice(PRIORITIES))
@click.option("--parent", metavar="REF", shell_complete=complete_ref)
@click.option(
    "--blocked-by", "blocked_by", multiple=True, metavar="REF", shell_complete=complete_ref
)
@click.option("--label", "labels", multiple=True)
@click.option("--assignee-kind", type=click.Choice(ASSIGNEE_KINDS), help="user makes a gate.")
@click.option("--assignee", metavar="PRINCIPAL")
@click.option("--body", help="Markdown: the prompt an agent receives.")
@click.option("--body-file", metavar="FILE|-", help="Read the body from a file (- for stdin).")
@global_options
def create(
    title: str,
    kind: str | None,
    priority: str | None,
    parent: str | None,
    blocked_by: tuple[str, ...],
    labels: tuple[str, ...],
    assignee_kind: str | None,
    assignee: str | None,
    body: str | None,
    body_file: str | None,
) -> None:
    """Create one node in the current project (a one-operation patch).

    Example: skift -p oauth-spike create "Write the callback" --blocked-by '#1'
    """
    import skift

    a = app()
    proj = a.project(required=True)
    assert proj is not None
    if body is not None and body_file is not None:
        _usage("give --body or --body-file, not both")
    if body_file is not None:
        body = _read_text(body_file, "--body-file")
    doc: dict[str, Any] = {"op": "create_node", "title": title}
    for key, value in (
        ("kind", kind),
        ("priority", priority),
        ("parent", parent),
        ("assignee_kind", assignee_kind),
        ("assignee", assignee),
        ("body", body),
    ):
        if value is not None:
            doc[key] = value
    if blocked_by:
        doc["blocked_by"] = list(blocked_by)
    if labels:
        doc["labels"] = list(labels)
    try:
        op = skift.parse_op(doc)
    except skift.SkiftError as exc:
        raise Failure(exc) from None
    res = a.call(lambda sk: sk.patch(proj, [op]))
    if a.json:
        a.emit(to_json(res))
    else:
        n = res.nodes[0]
        click.echo(f"created {n.ref} {n.title}")


@cli.command()
@click.argument("file", metavar="FILE|-")
@click.option(
    "--lease", metavar="LEASE", help="Write under this lease (sets or overrides the document's)."
)
@global_options
def patch(file: str, lease: str | None) -> None:
    """Apply a patch document (YAML or JSON) in one transaction.

    The document is checked before it is sent: an error names the operation
    index and the field. A request id is made when the document has none and
    printed, so a retry can reuse it.

    Example: skift patch plan.yaml
    """
    import skift

    from . import _patchdoc

    a = app()
    text = _read_text(file, "FILE")
    source = "stdin" if file == "-" else file
    try:
        doc = _patchdoc.load(text, source)
    except skift.SkiftError as exc:
        raise Failure(exc) from None
    proj = doc.project or a.project()
    if proj is None:
        _usage("the document names no project: add 'project:' to it or give -p PROJECT")
    rid = doc.request_id or skift.ulid_str(skift.new_id())
    if doc.request_id is None and not a.json:
        from . import _render

        _render.err().print(
            f"[dim]request id {rid} (put it in the document as request_id to retry safely)[/dim]"
        )

    async def go(sk: RemoteSkift) -> skift.PatchResult:
        if len(doc.ops) >= 200 and not a.json:
            from . import _render

            c = _render.err()
            if c.is_terminal:
                with c.status(f"applying {len(doc.ops)} operations…"):
                    return await sk.patch(proj, doc.ops, request_id=rid, lease=lease or doc.lease)
        return await sk.patch(proj, doc.ops, request_id=rid, lease=lease or doc.lease)

    res = a.call(go, request_id=rid)
    _patch_out(a, res, "applied")


@cli.command()
@click.argument("ref", shell_complete=complete_ref)
@global_options
def show(ref: str) -> None:
    """Show a node: its fields, derived state, body and result.

    Example: skift show oauth-spike#3
    """
    a = app()
    proj = a.project()
    n = a.call(lambda sk: sk.get(ref, project=proj))
    if a.json:
        a.emit(to_json(n))
        return
    from . import _render

    _render.out().print(_render.node_panel(n))
    if n.status == "open" and not n.ready:  # Status is a StrEnum
        _render.out().print(f"[dim]not ready: 'skift explain {n.ref}' says why[/dim]")


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


def _filters(
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


@cli.command("list")
@filter_options
@click.option("--status", type=click.Choice(STATUSES))
@click.option("--held/--not-held", default=None, help="Only held (or only not held) nodes.")
@click.option("--limit", type=int)
@click.option("--page", metavar="TOKEN", help="The next page (from the previous page).")
@global_options
def list_(
    kinds: tuple[str, ...],
    labels: tuple[str, ...],
    any_labels: tuple[str, ...],
    assignee_kind: str | None,
    min_priority: str | None,
    parent: str | None,
    status: str | None,
    held: bool | None,
    limit: int | None,
    page: str | None,
) -> None:
    """List nodes as each project's containment tree: state, readiness, blockers.

    Example: skift -p oauth-spike list --status open
    """
    import asyncio

    a = app()
    flt = _filters(a, kinds, labels, any_labels, assignee_kind, min_priority, parent)

    from . import _render

    async def go(sk: RemoteSkift) -> tuple[skift.ReadyPage, dict[str, list[str]]]:
        pg = await sk.list_nodes(limit=limit, page=page, status=status, held=held, **flt)
        if a.json:
            return pg, {}
        blocked = [n for n in pg.nodes if n.blocked and n.status == "open"]
        exs = await asyncio.gather(*(sk.explain(n.ref) for n in blocked[:40]))
        by: dict[str, list[str]] = {}
        for n, ex in zip(blocked, exs, strict=False):
            refs = [str(r.detail.get("ref")) for r in ex.reasons if r.kind == "blocked_by"]
            by[n.ref] = [_render.short_ref(r, n.project) for r in refs]
        return pg, by

    pg, blockers = a.call(go)
    if a.json:
        a.emit(to_json(pg))
        return
    if pg.nodes:
        _render.out().print(_render.node_tree(pg.nodes, blockers))
    _render.page_footer(pg, what="nodes")


@cli.command()
@filter_options
@click.option("--limit", type=int)
@click.option("--page", metavar="TOKEN", help="The next page (from the previous page).")
@global_options
def ready(
    kinds: tuple[str, ...],
    labels: tuple[str, ...],
    any_labels: tuple[str, ...],
    assignee_kind: str | None,
    min_priority: str | None,
    parent: str | None,
    limit: int | None,
    page: str | None,
) -> None:
    """Ready work, in turn order: round-robin across projects, priority then age within one.

    No project means every project you can read. Example: skift ready -p a -p b
    """
    a = app()
    flt = _filters(a, kinds, labels, any_labels, assignee_kind, min_priority, parent)
    pg = a.call(lambda sk: sk.ready(limit=limit, page=page, **flt))
    if a.json:
        a.emit(to_json(pg))
        return
    from . import _render

    if pg.nodes:
        _render.out().print(_render.node_table(pg.nodes, turn=True))
    _render.page_footer(pg, what="ready work")


@cli.command()
@click.argument("ref", required=False, shell_complete=complete_ref)
@filter_options
@click.option("--ttl", metavar="DURATION", help="Lease length (10m, 1h; bounded by the server).")
@click.option("--wait", metavar="DURATION", help="Without REF: wait this long for ready work.")
@click.option("--harness", default="", help="What runs the work (claude-code, hive…).")
@click.option("--agent-ref", default="", metavar="URI", help="Where this attempt runs.")
@global_options
def claim(
    ref: str | None,
    kinds: tuple[str, ...],
    labels: tuple[str, ...],
    any_labels: tuple[str, ...],
    assignee_kind: str | None,
    min_priority: str | None,
    parent: str | None,
    ttl: str | None,
    wait: str | None,
    harness: str,
    agent_ref: str,
) -> None:
    """Claim REF, or the next ready node matching the filters; prints the lease.

    Exit 5 when nothing is ready (or --wait ran out); exit 1 when REF is not
    ready, saying why. Example: skift claim --wait 5m --harness claude-code
    """
    a = app()
    ttl_d = _duration(ttl, "--ttl")
    wait_d = _duration(wait, "--wait")
    if ref is not None:
        if wait_d is not None:
            _usage("--wait applies to claiming the next ready node; leave it out with REF")
        if kinds or labels or any_labels or assignee_kind or min_priority or parent:
            _usage("filters select the next ready node; leave them out with REF")
        proj = a.project()
        cl = a.call(
            lambda sk: sk.claim(ref, project=proj, ttl=ttl_d, harness=harness, agent_ref=agent_ref)
        )
    else:
        flt = _filters(a, kinds, labels, any_labels, assignee_kind, min_priority, parent)

        async def go(sk: RemoteSkift) -> skift.Claim:
            coro = sk.claim_next(
                ttl=ttl_d, wait=wait_d, harness=harness, agent_ref=agent_ref, **flt
            )
            if wait_d and not a.json:
                from . import _render

                c = _render.err()
                if c.is_terminal:
                    with c.status(f"waiting up to {wait} for ready work…", spinner="dots"):
                        return await coro
            return await coro

        cl = a.call(go)
    if a.json:
        a.emit(to_json(cl))
    else:
        from . import _render

        _render.claim(cl)


@cli.command()
@click.argument("ref", shell_complete=complete_ref)
@click.option("--lease", required=True, metavar="LEASE")
@click.option("--ttl", metavar="DURATION", help="New lease length (default: the lease's own).")
@global_options
def heartbeat(ref: str, lease: str, ttl: str | None) -> None:
    """Renew a lease.

    Example: skift heartbeat oauth-spike#3 --lease 01JE…
    """
    a = app()
    proj = a.project()
    ttl_d = _duration(ttl, "--ttl")
    info = a.call(lambda sk: sk.heartbeat(ref, lease=lease, ttl=ttl_d, project=proj))
    if a.json:
        a.emit(to_json(info))
    else:
        from . import _render

        _render.out().print(
            f"lease {info.id} on {info.node} expires {_render.reltime(info.expires_at)}"
        )


@cli.command()
@click.argument("ref", shell_complete=complete_ref)
@click.option("--lease", metavar="LEASE", help="The lease (required for leased work).")
@click.option("--result", help="The result: markdown that downstream work receives as input.")
@click.option("--result-file", metavar="FILE|-", help="Read the result from a file (- for stdin).")
@click.option(
    "--artifact",
    "artifacts",
    multiple=True,
    metavar="FILE",
    help="Attach FILE as an artifact (one blob part, named after the file). Repeatable.",
)
@global_options
def complete(
    ref: str,
    lease: str | None,
    result: str | None,
    result_file: str | None,
    artifacts: tuple[str, ...],
) -> None:
    """Complete a node with its result; downstream work sees the result as an input.

    Example: skift complete oauth-spike#3 --lease 01JE… --result-file notes.md --artifact report.pdf
    """
    import mimetypes
    from pathlib import Path

    import skift

    a = app()
    proj = a.project()
    if result is not None and result_file is not None:
        _usage("give --result or --result-file, not both")
    text = _read_text(result_file, "--result-file") if result_file is not None else (result or "")
    files: list[tuple[str, bytes, str]] = []
    for f in artifacts:
        try:
            data = Path(f).read_bytes()
        except OSError as exc:
            _usage(f"--artifact {f}: {exc.strerror}")
        media = mimetypes.guess_type(f)[0] or "application/octet-stream"
        files.append((Path(f).name, data, media))

    async def go(sk: RemoteSkift) -> skift.PatchResult:
        arts: list[skift.Artifact] = []
        for name, data, media in files:
            blob = await sk.put_blob(data, media_type=media)
            part = skift.BlobPart(digest=blob.digest, media_type=blob.media_type, size=blob.size)
            arts.append(skift.Artifact(name=name, parts=(part,)))
        return await sk.complete(ref, lease=lease, result=text, artifacts=arts, project=proj)

    res = a.call(go)
    _patch_out(a, res, "completed")


@cli.command()
@click.argument("ref", shell_complete=complete_ref)
@click.option("--lease", required=True, metavar="LEASE")
@click.option("--reason", required=True, type=click.Choice(RELEASE_REASONS))
@global_options
def release(ref: str, lease: str, reason: str) -> None:
    """Give work back without completing it.

    Example: skift release oauth-spike#3 --lease 01JE… --reason crash
    """
    a = app()
    proj = a.project()
    n = a.call(lambda sk: sk.release(ref, lease=lease, reason=reason, project=proj))
    if a.json:
        a.emit(to_json(n))
    else:
        click.echo(f"released {n.ref} ({reason})")


@cli.command()
@click.argument("ref", shell_complete=complete_ref)
@click.argument("title")
@click.option("--lease", required=True, metavar="LEASE")
@click.option("--body", default="", help="What the person should do (markdown).")
@global_options
def gate(ref: str, title: str, lease: str, body: str) -> None:
    """File a gate (a node a person completes) blocking REF and release REF's lease, atomically.

    Example: skift gate oauth-spike#3 "Mint a GitHub OAuth app" --lease 01JE…
    """
    a = app()
    proj = a.project()
    res = a.call(lambda sk: sk.gate(ref, lease=lease, title=title, body=body, project=proj))
    if a.json:
        a.emit(to_json(res))
    else:
        g = res.created.get("gate", "")
        click.echo(f"filed gate {g} blocking {ref}; the lease is released")


@cli.command()
@click.argument("ref", shell_complete=complete_ref)
@click.option(
    "--reason", required=True, help="superseded, not viable, no longer relevant, or free text."
)
@click.option(
    "--cascade", is_flag=True, help="Also drop what REF blocks (the functionality is gone)."
)
@click.option(
    "--max-nodes", type=int, metavar="N", help="With --cascade: refuse if more would drop."
)
@click.option("--lease", metavar="LEASE")
@global_options
def drop(ref: str, reason: str, cascade: bool, max_nodes: int | None, lease: str | None) -> None:
    """Drop a node (reversible with reopen); with --cascade its blocked subtree too.

    Example: skift drop oauth-spike#4 --reason superseded --cascade --max-nodes 5
    """
    a = app()
    proj = a.project()
    if cascade != (max_nodes is not None):
        _usage("--cascade and --max-nodes N go together: a cascade states its blast radius")
    res = a.call(
        lambda sk: sk.drop(ref, reason=reason, cascade=max_nodes, project=proj, lease=lease)
    )
    _patch_out(a, res, "dropped")


@cli.command()
@click.argument("ref", shell_complete=complete_ref)
@click.option("--reason", required=True)
@click.option("--lease", metavar="LEASE")
@global_options
def reopen(ref: str, reason: str, lease: str | None) -> None:
    """Move a done or dropped node back to open.

    Example: skift reopen oauth-spike#3 --reason "review: handle the error path"
    """
    a = app()
    proj = a.project()
    res = a.call(lambda sk: sk.reopen(ref, reason=reason, project=proj, lease=lease))
    _patch_out(a, res, "reopened")


def _hold(ref: str | None, reason: str, *, hold: bool) -> None:
    a = app()
    word = "held" if hold else "released"
    if ref is None:
        proj = a.explicit_project()
        if proj is None:
            _usage("name a node (REF) or a project (--project P)")
        n = a.call(
            lambda sk: (
                sk.hold_project(proj, reason=reason)
                if hold
                else sk.unhold_project(proj, reason=reason)
            )
        )
        if a.json:
            a.emit({"project": proj, "parked" if hold else "unparked": n})
        else:
            click.echo(f"{word} project {proj} ({n} node(s) {'parked' if hold else 'unparked'})")
        return
    proj = a.project()
    res = a.call(
        lambda sk: (
            sk.hold(ref, reason=reason, project=proj)
            if hold
            else sk.unhold(ref, reason=reason, project=proj)
        )
    )
    _patch_out(a, res, word)


@cli.command()
@click.argument("ref", required=False, shell_complete=complete_ref)
@click.option(
    "--reason", required=True, help="Why: a hold nobody can explain is one nobody dares release."
)
@global_options
def hold(ref: str | None, reason: str) -> None:
    """Park a node (and its subtree), or a whole project with --project P.

    Example: skift hold oauth-spike#2 --reason "waiting for the vendor"
    """
    _hold(ref, reason, hold=True)


@cli.command()
@click.argument("ref", required=False, shell_complete=complete_ref)
@click.option("--reason", required=True)
@global_options
def unhold(ref: str | None, reason: str) -> None:
    """Release a node's hold, or a project's with --project P.

    Example: skift unhold --project oauth-spike --reason "back on"
    """
    _hold(ref, reason, hold=False)


@cli.command()
@click.argument("keep", nargs=-1)
@click.option("--clear", is_flag=True, help="Release what the scope's focus held.")
@click.option("--reason", required=True)
@global_options
def focus(keep: tuple[str, ...], clear: bool, reason: str) -> None:
    """Hold everything outside KEEP: projects, or with --project P that project's nodes.

    Example: skift focus oauth-spike billing --reason "this week"
    """
    a = app()
    proj = a.explicit_project()
    if clear and keep:
        _usage("--clear takes no KEEP")
    if not clear and not keep:
        _usage("name what to keep (projects, or nodes with --project P), or give --clear")
    if clear:
        res = a.call(lambda sk: sk.clear_focus(reason=reason, project=proj))
    else:
        res = a.call(lambda sk: sk.focus(list(keep), reason=reason, project=proj))
    if a.json:
        a.emit(to_json(res))
    else:
        from . import _render

        _render.focus(res)


@cli.command()
@click.argument("ref", shell_complete=complete_ref)
@global_options
def explain(ref: str) -> None:
    """Why a node is (not) ready: blockers, leases, holds, a person to wait on.

    Example: skift explain oauth-spike#5
    """
    a = app()
    proj = a.project()
    ex = a.call(lambda sk: sk.explain(ref, project=proj))
    if a.json:
        a.emit(to_json(ex))
    else:
        from . import _render

        _render.explanation(ex)


@cli.command()
@click.option("--follow", "-f", is_flag=True, help="Keep printing events as they commit.")
@click.option(
    "--cursor", metavar="C", help="Only events after this cursor (default: the replay window)."
)
@click.option("--op", "ops", multiple=True, metavar="OP", help="Only these operations.")
@click.option(
    "--node",
    metavar="REF",
    shell_complete=complete_ref,
    help="One node's history instead of the stream (newest --limit).",
)
@click.option(
    "--limit", type=int, default=100, show_default=True, help="At most this many per read."
)
@click.option("--interval", type=float, default=None, hidden=True)  # before the stream long-polled
@global_options
def events(
    follow: bool,
    cursor: str | None,
    ops: tuple[str, ...],
    node: str | None,
    limit: int,
    interval: float | None,
) -> None:
    """The change stream: who changed what, and why, in commit order.

    Without --cursor it starts at the oldest event still in the replay window;
    each event carries its cursor, and a read ends with the cursor to pass next
    time. -p filters by project (repeatable), --op by operation. --follow keeps
    printing events as they commit (with --json, one object per line).

    Example: skift events --follow --op complete_node -p oauth-spike
    """
    import json
    from datetime import timedelta

    a = app()
    if node is not None:
        if follow or cursor or ops:
            _usage(
                "--node reads one node's history; it does not combine with --follow, --cursor or --op"
            )
        proj = a.project()
        evs = a.call(lambda sk: sk.events(ref=node, project=proj, limit=limit))
        if a.json:
            a.emit({"events": [to_json(e) for e in evs]})
        else:
            from . import _render

            _render.events(evs)
        return
    projects = a.projects()

    async def go(sk: RemoteSkift) -> None:
        from . import _render

        after = cursor
        if not follow:
            page = await sk.watch_events(after=after, projects=projects, ops=ops, limit=limit)
            if a.json:
                a.emit({"events": [to_json(e) for e in page.events], "cursor": page.cursor})
            else:
                _render.events(page.events)
                more = " (there may be more)" if len(page.events) >= limit else ""
                _render.err().print(f"[dim]next: skift events --cursor {page.cursor}{more}[/dim]")
            return
        waiting_said = False
        while True:
            page = await sk.watch_events(
                after=after, projects=projects, ops=ops, limit=limit, wait=timedelta(seconds=30)
            )
            after = page.cursor
            if a.json:
                for e in page.events:
                    click.echo(json.dumps(to_json(e)))
            else:
                _render.events(page.events)
                if not page.events and not waiting_said:
                    _render.err().print("[dim]waiting for events… (Ctrl-C stops)[/dim]")
                    waiting_said = True
            sys.stdout.flush()

    a.call(go)


# ---------------------------------------------------------------- content


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


@cli.group(cls=DefaultGroup)
@global_options
def comment() -> None:
    """Comments on a node: `skift comment REF BODY`, `skift comment resolve ID`."""


@comment.command("add")
@click.argument("ref", shell_complete=complete_ref)
@click.argument("body")
@click.option("--reply-to", metavar="ID", help="Answer this comment (a thread).")
@global_options
def comment_add(ref: str, body: str, reply_to: str | None) -> None:
    """Comment on a node (`skift comment REF BODY` for short); BODY - reads stdin.

    Example: skift comment oauth-spike#3 "The callback URL changed"
    """
    a = app()
    proj = a.project()
    text = _read_text("-", "BODY") if body == "-" else body
    c = a.call(lambda sk: sk.add_comment(ref, text, reply_to=reply_to, project=proj))
    if a.json:
        a.emit(to_json(c))
    else:
        click.echo(f"comment {c.id} on {c.node}")


@comment.command("resolve")
@click.argument("comment_id", metavar="ID")
@global_options
def comment_resolve(comment_id: str) -> None:
    """Resolve a comment (its replies stay as they are).

    Example: skift comment resolve 01JG…
    """
    a = app()
    c = a.call(lambda sk: sk.resolve_comment(comment_id))
    if a.json:
        a.emit(to_json(c))
    else:
        click.echo(f"resolved {c.id} on {c.node}")


@comment.command("edit")
@click.argument("comment_id", metavar="ID")
@click.argument("body")
@global_options
def comment_edit(comment_id: str, body: str) -> None:
    """Replace a comment's body (the prior body is kept as a revision).

    Example: skift comment edit 01JG… "The callback URL changed to /auth/cb"
    """
    a = app()
    text = _read_text("-", "BODY") if body == "-" else body
    c = a.call(lambda sk: sk.edit_comment(comment_id, text))
    if a.json:
        a.emit(to_json(c))
    else:
        click.echo(f"edited {c.id} on {c.node}")


@cli.command()
@click.argument("ref", shell_complete=complete_ref)
@global_options
def comments(ref: str) -> None:
    """A node's comments, threaded, oldest first, each with its author.

    Example: skift comments oauth-spike#3
    """
    a = app()
    proj = a.project()
    cs = a.call(lambda sk: sk.comments(ref, project=proj))
    if a.json:
        a.emit({"comments": to_json(cs)})
    else:
        from . import _render

        _render.comments(cs)


@cli.command()
@click.argument("query")
@click.option("--limit", type=int, default=20, show_default=True)
@click.option("--archived", is_flag=True, help="Include archived projects.")
@global_options
def search(query: str, limit: int, archived: bool) -> None:
    """Full-text search over titles, bodies, results and comments (-p narrows it).

    Example: skift search "device flow" -p oauth-spike
    """
    a = app()
    projects = a.projects()
    hits = a.call(
        lambda sk: sk.search(query, projects=projects, limit=limit, include_archived=archived)
    )
    if a.json:
        a.emit({"hits": to_json(hits)})
    else:
        from . import _render

        _render.search_hits(hits)


@cli.group()
@global_options
def usage() -> None:
    """Token usage and cost: record it, roll it up (counts, never currency)."""


@usage.command("add")
@click.argument("ref", shell_complete=complete_ref)
@click.option("--model", required=True, help="The model, a free string.")
@click.option("--input-tokens", type=int, default=0, show_default=True)
@click.option("--output-tokens", type=int, default=0, show_default=True)
@click.option("--cache-read-tokens", type=int, default=0, show_default=True)
@click.option("--cache-write-tokens", type=int, default=0, show_default=True)
@click.option("--estimate", is_flag=True, help="An estimate, not an actual.")
@click.option("--basis", help="What an estimate rests on.")
@click.option("--lease", metavar="LEASE", help="The attempt an actual measures.")
@global_options
def usage_add(
    ref: str,
    model: str,
    input_tokens: int,
    output_tokens: int,
    cache_read_tokens: int,
    cache_write_tokens: int,
    estimate: bool,
    basis: str | None,
    lease: str | None,
) -> None:
    """Record what work cost (an actual under a lease), or what it is expected to cost.

    Example: skift usage add oauth-spike#3 --model claude-sonnet --input-tokens 12000 --output-tokens 900 --lease 01JE…
    """
    a = app()
    proj = a.project()
    u = a.call(
        lambda sk: sk.record_usage(
            ref,
            model=model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_read_tokens=cache_read_tokens,
            cache_write_tokens=cache_write_tokens,
            estimate=estimate,
            basis=basis,
            lease=lease,
            project=proj,
        )
    )
    if a.json:
        a.emit(to_json(u))
    else:
        kind = str(u.kind)
        click.echo(f"recorded {kind} usage on {u.node}: {u.input_tokens} in, {u.output_tokens} out")


@usage.command("show")
@click.argument("ref", required=False, shell_complete=complete_ref)
@click.option("--subtree", is_flag=True, help="Roll up the node's descendants too.")
@global_options
def usage_show(ref: str | None, subtree: bool) -> None:
    """A node's usage (or a project's, with --project P and no REF), priced at today's rates.

    Example: skift usage show oauth-spike#1 --subtree
    """
    a = app()
    if ref is None:
        proj = a.explicit_project()
        if proj is None:
            _usage("name a node (REF) or a project (--project P)")
        report = a.call(lambda sk: sk.project_usage(proj))
    else:
        proj = a.project()
        report = a.call(lambda sk: sk.usage(ref, subtree=subtree, project=proj))
    if a.json:
        a.emit(to_json(report))
    else:
        from . import _render

        _render.usage_report(report)


# ------------------------------------------------------------------- principals


@cli.group()
@global_options
def principal() -> None:
    """Principals: who acts (people, agents, services)."""


@principal.command("add")
@click.argument("name")
@click.option("--kind", required=True, type=click.Choice(PRINCIPAL_KINDS))
@click.option("--uid", type=int, help="A unix uid that identifies it on the socket.")
@global_options
def principal_add(name: str, kind: str, uid: int | None) -> None:
    """Register a principal (a person only).

    Example: skift principal add ada --kind user --uid 1000
    """
    a = app()
    p = a.call(lambda sk: sk.add_principal(name, kind, uid=uid))
    if a.json:
        a.emit(to_json(p))
    else:
        click.echo(f"added {p.kind} {p.name}")


@principal.command("list")
@global_options
def principal_list() -> None:
    """List principals and their identities."""
    a = app()
    ps = a.call(lambda sk: sk.list_principals())
    if a.json:
        a.emit({"principals": to_json(ps)})
    else:
        from . import _render

        _render.out().print(_render.principals(ps))


@cli.group()
@global_options
def org() -> None:
    """The organization's settings."""


_ORG_SIZES = (
    "body_bytes",
    "result_bytes",
    "comment_bytes",
    "inline_part_bytes",
    "blob_bytes",
    "artifacts_per_node",
    "parts_per_artifact",
    "artifact_metadata_bytes",
)


def _org_size_options(f: F) -> F:
    for name in reversed(_ORG_SIZES):
        flag = "--" + name.replace("_", "-")
        f = click.option(flag, name, type=int, metavar="N", help=f"Lower {name} to N.")(f)
    return f


@org.command("limits")
@_org_size_options
@click.option(
    "--unset",
    multiple=True,
    type=click.Choice(_ORG_SIZES),
    help="Use the server's value again (repeatable).",
)
@global_options
def org_limits(unset: tuple[str, ...], **sizes: int | None) -> None:
    """Show the organization's size limits, or lower some (a person only).

    Without options, shows each limit in force and whether the organization set it.
    An organization may only lower the server's limits.

    Example: skift org limits --comment-bytes 16384 --unset blob_bytes
    """
    a = app()
    change: dict[str, int | None] = {k: v for k, v in sizes.items() if v is not None}
    change.update(dict.fromkeys(unset))
    got = a.call(lambda sk: sk.set_org_limits(**change) if change else sk.org_limits())
    if a.json:
        a.emit(to_json(got))
        return
    for name in _ORG_SIZES:
        whose = "organization" if name in got.own else "server"
        note = f"  (server: {got.server[name]})" if name in got.own else ""
        click.echo(f"{name:<24} {getattr(got, name):>10}  {whose}{note}")


@cli.group()
@global_options
def token() -> None:
    """Bearer tokens for TCP (SKIFT_TOKEN)."""


@token.command("create")
@click.argument("name", metavar="PRINCIPAL")
@global_options
def token_create(name: str) -> None:
    """A new token for a principal; the secret is shown once.

    Example: skift token create ci-bot
    """
    a = app()
    t = a.call(lambda sk: sk.create_token(name))
    if a.json:
        a.emit(to_json(t))
    else:
        click.echo(f"token {t.id} for {t.principal} (the secret is shown once):")
        click.echo(t.token)


@token.command("revoke")
@click.argument("token_id")
@global_options
def token_revoke(token_id: str) -> None:
    """Revoke a token by its id."""
    a = app()
    a.call(lambda sk: sk.revoke_token(token_id))
    if a.json:
        a.emit({"revoked": token_id})
    else:
        click.echo(f"revoked {token_id}")


# ----------------------------------------------------------------------- setup


@cli.command()
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
    written = _config.write(values, path)
    if a.g.json:
        a.emit({"path": str(written), **{k: v for k, v in values.items() if v}})
    else:
        click.echo(f"wrote {written}")


@cli.command()
@click.option("--pause", type=float, default=0.0, help="Seconds to pause between steps.")
def demo(pause: float) -> None:
    """A self-contained tour on an in-memory store: decomposition, agents, a gate, a hold, Explain."""
    import asyncio

    from ._demo import tour

    asyncio.run(tour(pause=pause))
