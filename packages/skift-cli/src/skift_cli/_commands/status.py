"""``skift status``: which server a command reaches, whether it answers, and who you are there."""

from __future__ import annotations

from typing import Any

import click

from .._base import app, command, global_options


@command("Setup and admin")
@global_options
def status() -> None:
    """Which server your commands reach, whether it answers, and who you are there.

    The server is the first of --server, SKIFT_SERVER, the config file's server, then
    your default socket; never one that merely started last. Exit 4 when it does not
    answer (the document still names it).
    Example: skift status --json
    """
    import asyncio

    import skift
    import skift_server
    from skift_server._paths import resolve_server

    a = app()
    url, source = resolve_server(a.g.server)
    doc: dict[str, Any] = {
        "server": url,
        "server_from": source,
        "serving": False,
        "version": None,
        "principal": None,
        "kind": None,
        "org": None,
        "admin": None,
        "database": None,
    }
    error: skift.SkiftError | None = None
    who: skift.WhoAmI | None = None

    async def ask() -> skift.WhoAmI:
        async with skift_server.connect(url, attempts=1, timeout=10.0) as sk:
            return await sk.whoami()

    try:
        who = asyncio.run(ask())
    except skift.SkiftError as exc:
        error = exc
    else:
        doc.update(
            serving=True,
            version=who.version,
            principal=who.principal,
            kind=who.kind,
            org=who.org,
            admin=who.admin,
            database=who.database,
        )
    if a.json:
        a.emit(doc)
    else:
        state = "serving" if doc["serving"] else "not answering"
        click.echo(f"server:    {url} ({state}; from {source})")
        if who is not None:
            admin = "" if who.admin is None else (" (admin)" if who.admin else "")
            click.echo(f"you:       {who.principal} ({who.kind}) in {who.org}{admin}")
            click.echo(f"version:   skift {who.version}")
            click.echo(f"database:  {who.database}")
    if error is not None:
        if not a.json:
            click.echo(f"error: {error.message}", err=True)
        raise click.exceptions.Exit(4 if error.code == "unavailable" else 1)
