"""``skift webhook``: endpoints told when a project's events commit, and their deliveries
(docs/webhooks.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from .._base import app, global_options, group, to_json

if TYPE_CHECKING:
    import skift


def _hook(w: skift.WebhookInfo, *, secret: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": w.id,
        "url": w.url,
        "project": w.project,
        "events": list(w.events),
    }
    if secret:
        out["secret"] = w.secret
    else:
        out["disabled_at"] = to_json(w.disabled_at)
    out["created_at"] = to_json(w.created_at)
    return out


def _delivery(d: skift.DeliveryInfo) -> dict[str, Any]:
    return {
        "id": d.id,
        "webhook": d.webhook,
        "project": d.project,
        "state": d.state,
        "attempts": d.attempts,
        "next_attempt_at": to_json(d.next_attempt_at),
        "last_status": d.last_status,
        "last_error": d.last_error,
        "after": d.after,
        "through": d.through,
        "counts": dict(d.counts),
        "created_at": to_json(d.created_at),
        "delivered_at": to_json(d.delivered_at),
        "parked_at": to_json(d.parked_at),
    }


def _say_secret(w: skift.WebhookInfo, verb: str) -> None:
    click.echo(f"{verb} webhook {w.id} of {w.project}: {w.url}")
    click.echo(f"secret: {w.secret}")
    click.echo("(shown this once: keep it in the receiver's configuration)", err=True)


def _say_delivery(d: skift.DeliveryInfo) -> None:
    counts = ", ".join(f"{op} {n}" for op, n in d.counts.items()) or "no events"
    status = f" last {d.last_status}" if d.last_status is not None else ""
    error = f" ({d.last_error})" if d.last_error else ""
    click.echo(
        f"{d.id}  {d.state:<9} {d.attempts} attempt{'s' if d.attempts != 1 else ''}"
        f"{status}{error}  {d.project}: {counts}"
    )


@group("Content")
@global_options
def webhook() -> None:
    """Webhooks: tell a receiver when a project's events commit (signed; retried; parked)."""


@webhook.command("add")
@click.argument("url")
@click.option(
    "--event",
    "events",
    multiple=True,
    metavar="OP",
    help="Only these operations (repeatable; default: all).",
)
@global_options
def webhook_add(url: str, events: tuple[str, ...]) -> None:
    """Register an endpoint for the project (-p); prints its secret, once.

    Example: skift webhook add https://hooks.example.com/skift -p oauth-spike --event complete_node
    """
    a = app()
    proj = a.project(required=True)
    assert proj is not None
    got = a.call(lambda sk: sk.add_webhook(proj, url, events=list(events) or None))
    if a.json:
        a.emit(_hook(got, secret=True))
    else:
        _say_secret(got, "added")


@webhook.command("list")
@global_options
def webhook_list() -> None:
    """The endpoints of the project (-p), or of every project; never a secret.

    Example: skift webhook list -p oauth-spike
    """
    a = app()
    proj = a.project()
    got = a.call(lambda sk: sk.webhooks(project=proj))
    if a.json:
        a.emit({"webhooks": [_hook(w) for w in got]})
        return
    if not got:
        click.echo("no webhooks: add one with 'skift webhook add URL -p PROJECT'")
    for w in got:
        state = "disabled" if w.disabled_at else "enabled"
        ops = ",".join(w.events) or "all events"
        click.echo(f"{w.id}  {state:<8} {w.project}  {w.url}  ({ops})")


@webhook.command("rotate")
@click.argument("webhook_id", metavar="ID")
@global_options
def webhook_rotate(webhook_id: str) -> None:
    """Give an endpoint a new secret (printed once); the old one stops signing at once.

    Example: skift webhook rotate 01JD…
    """
    a = app()
    got = a.call(lambda sk: sk.rotate_webhook_secret(webhook_id))
    if a.json:
        a.emit(_hook(got, secret=True))
    else:
        _say_secret(got, "rotated")


@webhook.command("disable")
@click.argument("webhook_id", metavar="ID")
@global_options
def webhook_disable(webhook_id: str) -> None:
    """Send an endpoint nothing until it is enabled; what commits meanwhile waits for it.

    Example: skift webhook disable 01JD…
    """
    _set_enabled(webhook_id, enabled=False)


@webhook.command("enable")
@click.argument("webhook_id", metavar="ID")
@global_options
def webhook_enable(webhook_id: str) -> None:
    """Send to an endpoint again, starting with what committed while it was disabled.

    Example: skift webhook enable 01JD…
    """
    _set_enabled(webhook_id, enabled=True)


def _set_enabled(webhook_id: str, *, enabled: bool) -> None:
    a = app()
    got = a.call(
        lambda sk: sk.enable_webhook(webhook_id) if enabled else sk.disable_webhook(webhook_id)
    )
    if a.json:
        a.emit(_hook(got))
    else:
        click.echo(f"webhook {got.id} is {'enabled' if enabled else 'disabled'}: {got.url}")


@webhook.command("deliveries")
@click.argument("webhook_id", metavar="[ID]", required=False)
@click.option("--parked", is_flag=True, help="Only deliveries given up after their retries.")
@click.option("--limit", type=int, default=None, help="At most this many (newest first).")
@global_options
def webhook_deliveries(webhook_id: str | None, parked: bool, limit: int | None) -> None:
    """Deliveries, newest first: of one endpoint (ID), of the project (-p), or of all.

    Example: skift webhook deliveries --parked -p oauth-spike
    """
    a = app()
    proj = a.project()
    got = a.call(
        lambda sk: sk.webhook_deliveries(webhook_id, project=proj, parked=parked, limit=limit)
    )
    if a.json:
        a.emit({"deliveries": [_delivery(d) for d in got]})
        return
    if not got:
        click.echo("no parked deliveries" if parked else "no deliveries")
    for d in got:
        _say_delivery(d)


@webhook.command("redeliver")
@click.argument("delivery_id", metavar="DELIVERY_ID")
@global_options
def webhook_redeliver(delivery_id: str) -> None:
    """Queue a delivered or parked delivery again: the same id and window, a fresh schedule.

    Example: skift webhook redeliver 01JD…
    """
    a = app()
    got = a.call(lambda sk: sk.redeliver(delivery_id))
    if a.json:
        a.emit(_delivery(got))
    else:
        _say_delivery(got)


@webhook.command("test")
@click.argument("webhook_id", metavar="ID")
@global_options
def webhook_test(webhook_id: str) -> None:
    """Queue a delivery with an empty window, to check the receiver verifies and answers 2xx.

    Example: skift webhook test 01JD…
    """
    a = app()
    got = a.call(lambda sk: sk.test_webhook(webhook_id))
    if a.json:
        a.emit(_delivery(got))
    else:
        _say_delivery(got)
        click.echo(f"see it with: skift webhook deliveries {got.webhook}", err=True)
