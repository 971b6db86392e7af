"""Administration: principals (``principal``), bearer tokens (``token``), the organization (``org``).

Other modules add sub-commands to :data:`org` (``@org.command(name)``)."""

from __future__ import annotations

import click

from .._base import PRINCIPAL_KINDS, F, app, global_options, group, to_json


@group("Setup and admin")
@global_options
def principal() -> None:
    """Principals: who acts (people, agents, services)."""


@principal.command("add")
@click.argument("name")
@click.option("--kind", required=True, type=click.Choice(PRINCIPAL_KINDS))
@click.option("--uid", type=int, help="A unix uid that identifies it on the socket.")
@global_options
def principal_add(name: str, kind: str, uid: int | None) -> None:
    """Register a principal (an admin of the organization only).

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
    """List principals, their role (admin) and their identities."""
    a = app()
    ps = a.call(lambda sk: sk.list_principals())
    if a.json:
        a.emit(to_json(ps))  # a bare list, as SURFACE.md gives it
    else:
        from .. import _render

        _render.out().print(_render.principals(ps))


@principal.command("grant-admin")
@click.argument("name")
@click.option("--reason", required=True, help="Why (recorded on the event).")
@global_options
def principal_grant_admin(name: str, reason: str) -> None:
    """Make a person an admin of the organization (an admin only).

    Example: skift principal grant-admin bob --reason "runs ops with me"
    """
    a = app()
    p = a.call(lambda sk: sk.grant_admin(name, reason=reason))
    if a.json:
        a.emit(to_json(p))
    else:
        click.echo(f"{p.name} is an admin")


@principal.command("revoke-admin")
@click.argument("name")
@click.option("--reason", required=True, help="Why (recorded on the event).")
@global_options
def principal_revoke_admin(name: str, reason: str) -> None:
    """Take the admin role from a person (an admin only; the last admin stays).

    Example: skift principal revoke-admin bob --reason "moved teams"
    """
    a = app()
    p = a.call(lambda sk: sk.revoke_admin(name, reason=reason))
    if a.json:
        a.emit(to_json(p))
    else:
        click.echo(f"{p.name} is no longer an admin")


@principal.command("invite")
@click.argument("name")
@click.option("--oidc", "value", required=True, metavar="ISSUER|SUBJECT", help="The OIDC identity.")
@global_options
def principal_invite(name: str, value: str) -> None:
    """Invite an OIDC identity for a principal (an admin only). The answer carries the
    invitation's code, shown once: give it to the person, whose first sign-in with a token
    for the identity presents it (SKIFT_INVITE=CODE) and binds it.

    Example: skift principal invite dora --oidc 'https://accounts.example.com|1076915035'
    """
    a = app()
    got = a.call(lambda sk: sk.invite_identity(name, "oidc", value))
    if a.json:
        a.emit(to_json(got))
    else:
        click.echo(f"invited {got.value} for {got.principal}; the invitation's code (shown once):")
        click.echo(f"  {got.code}")
        click.echo(
            "Give it to them: their first sign-in presents it, e.g. "
            "SKIFT_TOKEN=<their OIDC token> SKIFT_INVITE=<code> skift status"
        )


@principal.command("invites")
@global_options
def principal_invites() -> None:
    """List the organization's pending invitations (an admin only; never their codes).

    Example: skift principal invites --json
    """
    a = app()
    got = a.call(lambda sk: sk.invites())
    if a.json:
        a.emit([{k: v for k, v in to_json(i).items() if k != "code"} for i in got])
        return
    if not got:
        click.echo("no pending invitations")
    for i in got:
        click.echo(
            f"{i.id}  {i.principal}  {i.scheme}:{i.value}  by {i.invited_by}  "
            f"{i.created_at:%Y-%m-%d %H:%M} UTC"
        )


@principal.command("cancel-invite")
@click.argument("invite", metavar="INVITE")
@global_options
def principal_cancel_invite(invite: str) -> None:
    """Cancel a pending invitation, by its id or the identity it invites (an admin only):
    its code binds nothing from now on.

    Example: skift principal cancel-invite 'https://accounts.example.com|1076915035'
    """
    a = app()
    got = a.call(lambda sk: sk.cancel_invite(invite))
    if a.json:
        a.emit({k: v for k, v in to_json(got).items() if k != "code"})
    else:
        click.echo(f"cancelled the invitation of {got.value} for {got.principal}")


@principal.command("attach")
@click.argument("name")
@click.argument("scheme", type=click.Choice(["unix", "oidc", "tailscale"]))
@click.argument("value")
@global_options
def principal_attach(name: str, scheme: str, value: str) -> None:
    """Bind an identity to a principal (an administrator of the server only).

    Example: skift principal attach dora oidc 'https://accounts.example.com|1076915035'
    """
    a = app()
    p = a.call(lambda sk: sk.attach_identity(name, scheme, value))
    if a.json:
        a.emit(to_json(p))
    else:
        click.echo(f"attached {scheme}:{value} to {p.name}")


@group("Setup and admin")
@global_options
def org() -> None:
    """Organizations: create and list them (a server administrator), and your own's settings."""


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


@group("Setup and admin")
@global_options
def token() -> None:
    """Bearer tokens for TCP (SKIFT_TOKEN)."""


@token.command("create")
@click.argument("name", metavar="PRINCIPAL")
@global_options
def token_create(name: str) -> None:
    """A new token for a principal (yourself, or anyone for an admin); the secret is shown once.

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
    """Revoke a token by its id (your own, or anyone's for an admin)."""
    a = app()
    a.call(lambda sk: sk.revoke_token(token_id))
    if a.json:
        a.emit({"revoked": token_id})
    else:
        click.echo(f"revoked {token_id}")
