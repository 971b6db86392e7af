"""``skift project``: create, list, show, rename, archive and restrict projects.

Other modules add sub-commands to :data:`project` (``@project.command(name)``)."""

from __future__ import annotations

import click

from .._base import PRIORITIES, app, complete_project, global_options, group, to_json


@group("Projects")
@global_options
def project() -> None:
    """Projects: create, list, show, rename, archive, restrict."""


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
    from .. import _render

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
        from .. import _render

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


@project.command("restrict")
@click.argument("ref", metavar="SLUG", shell_complete=complete_project)
@click.option(
    "--reader",
    "readers",
    multiple=True,
    metavar="PRINCIPAL",
    help="A principal who may read and write it (repeat; you are always one).",
)
@click.option("--reason", required=True, help="Why (recorded with the change).")
@global_options
def project_restrict(ref: str, readers: tuple[str, ...], reason: str) -> None:
    """Make a project private: readable and writable only by its readers.

    To everyone else it does not exist (show, list, ready, search, events and
    claims answer as for a slug nobody created). Restricting it again replaces
    its readers.
    """
    a = app()
    p = a.call(lambda sk: sk.restrict_project(ref, readers=list(readers), reason=reason))
    if a.json:
        a.emit(to_json(p))
    else:
        click.echo(f"restricted {p.slug}: readers {', '.join(p.readers or ())}")


@project.command("unrestrict")
@click.argument("ref", metavar="SLUG", shell_complete=complete_project)
@click.option("--reason", required=True, help="Why (recorded with the change).")
@global_options
def project_unrestrict(ref: str, reason: str) -> None:
    """Make a restricted project readable by the whole organization again."""
    a = app()
    p = a.call(lambda sk: sk.unrestrict_project(ref, reason=reason))
    if a.json:
        a.emit(to_json(p))
    else:
        click.echo(f"unrestricted {p.slug}")
