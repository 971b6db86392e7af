"""Organizations (``org create``, ``org list``: an administrator of the server) and an
organization's own Rego policy (``policy show | set | reset``: its admin)."""

from __future__ import annotations

import os

import click

from .._base import app, global_options, group, read_text, to_json
from .admin import org


@org.command("create")
@click.argument("name")
@click.option("--admin", "admin", required=True, metavar="NAME", help="Its first user.")
@click.option("--uid", type=int, help="A unix uid for that user on this host.")
@global_options
def org_create(name: str, admin: str, uid: int | None) -> None:
    """Create an organization and its first user; prints that user's token (an
    administrator of the server).

    The token is shown once; it acts as the new organization's admin over TCP at once
    (SKIFT_TOKEN). Every name, slug and reference of one organization is invisible to
    every other.

    Example: skift org create acme --admin wile
    """
    a = app()
    made = a.call(lambda sk: sk.create_org(name, admin=admin, uid=uid))
    if a.json:
        a.emit(
            {
                "org": made.org,
                "admin": made.admin,
                "token": made.token,
                "token_id": made.token_id,
                "uid": made.uid,
            }
        )
        return
    click.echo(f"created organization {made.org} with its admin {made.admin}")
    click.echo(f"token {made.token_id} for {made.admin} (the secret is shown once):")
    click.echo(made.token)


@org.command("list")
@global_options
def org_list() -> None:
    """List the server's organizations, oldest first (an administrator of the server)."""
    a = app()
    orgs = a.call(lambda sk: sk.list_orgs())
    if a.json:
        a.emit({"orgs": to_json(orgs)})
        return
    for o in orgs:
        mark = "  (this server's own)" if o.first else ""
        click.echo(f"{o.name:<30} {o.created_at:%Y-%m-%d %H:%M}{mark}")


@group("Setup and admin")
@global_options
def policy() -> None:
    """The organization's own Rego policy, layered on the default (its admin)."""


@policy.command("show")
@global_options
def policy_show() -> None:
    """Show the organization's own Rego modules (none: the default policy alone)."""
    a = app()
    got = a.call(lambda sk: sk.policy())
    if a.json:
        a.emit(to_json(got))
        return
    if not got.modules:
        click.echo("the default policy alone (no modules of the organization's own)")
    else:
        names = ", ".join(m.name for m in got.modules)
        click.echo(f"{len(got.modules)} module(s) layered on the default: {names}")
    if got.updated_at is not None:
        click.echo(f"last changed by {got.updated_by} at {got.updated_at:%Y-%m-%d %H:%M:%S}")
    for m in got.modules:
        click.echo(f"\n# --- {m.name}\n{m.source.rstrip()}")


@policy.command("set")
@click.argument("files", nargs=-1, required=True, metavar="FILE.rego...")
@click.option("--reason", required=True, help="Why (recorded on the event).")
@global_options
def policy_set(files: tuple[str, ...], reason: str) -> None:
    """Replace the organization's own Rego modules with these files (its admin).

    Each file is a module named after it; rules in package skift.authz add denials to the
    default policy's. A module that does not compile is refused and nothing changes. Every
    server applies the change from its next request.

    Example: skift policy set private.rego --reason "release work is a person's"
    """
    a = app()
    modules: dict[str, str] = {}
    for path in files:
        name = os.path.basename(path)
        if name in modules:
            raise click.UsageError(
                f"two files are named {name}; a module is named after its file",
                ctx=click.get_current_context(),
            )
        modules[name] = read_text(path, "FILE")
    got = a.call(lambda sk: sk.set_policy(modules, reason=reason))
    if a.json:
        a.emit(to_json(got))
    else:
        names = ", ".join(m.name for m in got.modules)
        click.echo(f"policy set: {names}, layered on the default")


@policy.command("reset")
@click.option("--reason", required=True, help="Why (recorded on the event).")
@global_options
def policy_reset(reason: str) -> None:
    """Drop the organization's own Rego modules: the default policy alone decides (its admin)."""
    a = app()
    got = a.call(lambda sk: sk.reset_policy(reason=reason))
    if a.json:
        a.emit(to_json(got))
    else:
        click.echo("policy reset: the default policy alone decides")
