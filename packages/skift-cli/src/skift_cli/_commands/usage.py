"""``skift usage``: record token usage and roll it up, priced at the rates in force."""

from __future__ import annotations

import click

from .._base import app, complete_ref, global_options, group, to_json, usage_error


@group("Content")
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
            usage_error("name a node (REF) or a project (--project P)")
        report = a.call(lambda sk: sk.project_usage(proj))
    else:
        proj = a.project()
        report = a.call(lambda sk: sk.usage(ref, subtree=subtree, project=proj))
    if a.json:
        a.emit(to_json(report))
    else:
        from .. import _render

        _render.usage_report(report)


@group("Content")
@global_options
def rate() -> None:
    """Rates per model: what a token costs, so usage reports carry a price."""


@rate.command("set")
@click.argument("model")
@click.option("--input", "input_", required=True, metavar="PRICE", help="Per million input tokens.")
@click.option("--output", required=True, metavar="PRICE", help="Per million output tokens.")
@click.option("--cache-read", default="0", show_default=True, metavar="PRICE")
@click.option("--cache-write", default="0", show_default=True, metavar="PRICE")
@click.option("--currency", default="USD", show_default=True)
@global_options
def rate_set(
    model: str, input_: str, output: str, cache_read: str, cache_write: str, currency: str
) -> None:
    """Set a model's prices per million tokens (a person; applies to every report from now).

    Example: skift rate set claude-sonnet --input 3 --output 15
    """
    a = app()
    got = a.call(
        lambda sk: sk.set_rate(
            model,
            input=input_,
            output=output,
            cache_read=cache_read,
            cache_write=cache_write,
            currency=currency,
        )
    )
    if a.json:
        a.emit(to_json(got))
    else:
        click.echo(
            f"rate for {got.model}: {got.input} in, {got.output} out per million tokens "
            f"({got.currency})"
        )


@rate.command("list")
@global_options
def rate_list() -> None:
    """The organization's rates.

    Example: skift rate list
    """
    a = app()
    got = a.call(lambda sk: sk.rates())
    if a.json:
        a.emit({"rates": to_json(got)})
        return
    if not got:
        click.echo("no rates: set one with 'skift rate set MODEL --input P --output P'")
    for r in got:
        click.echo(f"{r.model:<28} {r.input:>10} in {r.output:>10} out  {r.currency}")
