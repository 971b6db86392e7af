"""The work protocol at the terminal: ``ready``, ``claim``, ``heartbeat``, ``complete``, ``release``, ``gate``, ``explain``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .._base import (
    app,
    command,
    complete_ref,
    duration,
    filter_options,
    filters,
    global_options,
    patch_out,
    read_text,
    to_json,
    usage_error,
)

if TYPE_CHECKING:
    import skift
    from skift_server import RemoteSkift


@command("Work")
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
    flt = filters(a, kinds, labels, any_labels, assignee_kind, min_priority, parent)
    pg = a.call(lambda sk: sk.ready(limit=limit, page=page, **flt))
    from .. import _shown

    _shown.ready(pg, as_json=a.json, emit=a.emit)


@command("Work")
@click.argument("ref", required=False, shell_complete=complete_ref)
@filter_options
@click.option("--ttl", metavar="DURATION", help="Lease length (10m, 1h; bounded by the server).")
@click.option("--wait", metavar="DURATION", help="Without REF: wait this long for ready work.")
@click.option("--harness", default="", help="What runs the work (claude-code, hive…).")
@click.option("--agent-ref", default="", metavar="URI", help="Where this attempt runs.")
@click.option(
    "-q", "--quiet", is_flag=True, help="Print only the lease id (for LEASE=$(skift claim -q))."
)
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
    quiet: bool,
) -> None:
    """Claim REF, or the next ready node matching the filters; prints the lease.

    Exit 5 when nothing is ready (or --wait ran out); exit 1 when REF is not
    ready, saying why. Example: skift claim --wait 5m --harness claude-code
    """
    a = app()
    ttl_d = duration(ttl, "--ttl")
    wait_d = duration(wait, "--wait")
    if ref is not None:
        if wait_d is not None:
            usage_error("--wait applies to claiming the next ready node; leave it out with REF")
        if kinds or labels or any_labels or assignee_kind or min_priority or parent:
            usage_error("filters select the next ready node; leave them out with REF")
        proj = a.project()
        cl = a.call(
            lambda sk: sk.claim(ref, project=proj, ttl=ttl_d, harness=harness, agent_ref=agent_ref)
        )
    else:
        flt = filters(a, kinds, labels, any_labels, assignee_kind, min_priority, parent)

        async def go(sk: RemoteSkift) -> skift.Claim:
            coro = sk.claim_next(
                ttl=ttl_d, wait=wait_d, harness=harness, agent_ref=agent_ref, **flt
            )
            if wait_d and not a.json:
                from .. import _render

                c = _render.err()
                if c.is_terminal:
                    with c.status(f"waiting up to {wait} for ready work…", spinner="dots"):
                        return await coro
            return await coro

        cl = a.call(go)
    if a.json:
        a.emit(to_json(cl))
    elif quiet:
        click.echo(cl.lease.id)
    else:
        from .. import _render

        _render.claim(cl)


@command("Work")
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
    ttl_d = duration(ttl, "--ttl")
    info = a.call(lambda sk: sk.heartbeat(ref, lease=lease, ttl=ttl_d, project=proj))
    if a.json:
        a.emit(to_json(info))
    else:
        from .. import _render

        _render.out().print(
            f"lease {info.id} on {info.node} expires {_render.reltime(info.expires_at)}"
        )


@command("Work")
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
        usage_error("give --result or --result-file, not both")
    text = read_text(result_file, "--result-file") if result_file is not None else (result or "")
    files: list[tuple[str, bytes, str]] = []
    for f in artifacts:
        try:
            data = Path(f).read_bytes()
        except OSError as exc:
            usage_error(f"--artifact {f}: {exc.strerror}")
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
    patch_out(a, res, "completed")


@command("Work")
@click.argument("ref", shell_complete=complete_ref)
@click.option("--lease", metavar="LEASE", help="The lease you hold (its id, from claim).")
@click.option(
    "--preempt",
    is_flag=True,
    help="A person takes back whoever's lease it is (no lease id; --reason says why).",
)
@click.option(
    "--reason",
    help="crash (default): it cannot be done this attempt; budget: out of budget; "
    "preempted: other. With --preempt: your explanation, in words.",
)
@global_options
def release(ref: str, lease: str | None, preempt: bool, reason: str | None) -> None:
    """Give work back without completing it, or (a person) take a stuck lease back.

    Example: skift release oauth-spike#3 --lease 01JE… --reason crash
    Example: skift release oauth-spike#3 --preempt --reason "agent stuck for an hour"
    """
    a = app()
    proj = a.project()
    if preempt and lease:
        usage_error("--preempt takes no --lease: it ends whoever's lease is live on REF")
    if preempt and not reason:
        usage_error("--preempt needs --reason: say why you take the lease back")
    why = reason or "crash"
    n = a.call(lambda sk: sk.release(ref, lease=lease, reason=why, project=proj, preempt=preempt))
    if a.json:
        a.emit(to_json(n))
    elif preempt:
        click.echo(f"preempted the lease on {n.ref}: {why}")
    else:
        click.echo(f"released {n.ref} ({why})")


@command("Work")
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


@command("Work")
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
        from .. import _render

        _render.explanation(ex)
