"""What people and agents write about nodes: ``comment``, ``comments``, ``search``."""

from __future__ import annotations

import click

from .._base import (
    DefaultGroup,
    app,
    command,
    complete_ref,
    global_options,
    group,
    read_text,
    to_json,
    usage_error,
)


@group("Content", cls=DefaultGroup)
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
    text = read_text("-", "BODY") if body == "-" else body
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
    text = read_text("-", "BODY") if body == "-" else body
    c = a.call(lambda sk: sk.edit_comment(comment_id, text))
    if a.json:
        a.emit(to_json(c))
    else:
        click.echo(f"edited {c.id} on {c.node}")


@command("Content")
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
        from .. import _render

        _render.comments(cs)


@command("Content")
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
        from .. import _render

        _render.search_hits(hits)


@group("Content")
@global_options
def blob() -> None:
    """Blobs: the bytes behind an artifact's blob parts, by their digest."""


@blob.command("get")
@click.argument("digest")
@click.option(
    "-o", "--output", "output", metavar="FILE", help="Write to FILE (default: stdout; - too)."
)
@global_options
def blob_get(digest: str, output: str | None) -> None:
    """Fetch a blob by its digest (sha256:…, as `skift show` lists it) to stdout or a file.

    Example: skift blob get sha256:9f86d0… -o report.pdf
    """
    import sys

    a = app()
    data = a.call(lambda sk: sk.get_blob(digest))
    if output is None or output == "-":
        if sys.stdout.isatty() and b"\0" in data[:1024]:
            usage_error("the blob is binary: give -o FILE to write it to a file")
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    try:
        with open(output, "wb") as fh:
            fh.write(data)
    except OSError as exc:
        usage_error(f"-o {output}: {exc.strerror}")
    if a.json:
        a.emit({"digest": digest, "size": len(data), "path": output})
    else:
        click.echo(f"wrote {len(data)} bytes to {output}", err=True)
