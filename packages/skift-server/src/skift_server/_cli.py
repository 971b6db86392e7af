"""``skift-serve`` / ``python -m skift_server [serve]``: the command line of ``skift serve``.

The ``skift`` command itself belongs to skift-cli; until it gains ``serve``,
this is the same command under its own name, with the flags SURFACE.md gives
``skift serve``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

import attrs

import skift

from ._h2 import DEFAULT_CONNECTION_LIMITS, ConnectionLimits
from ._logs import configure
from ._server import ServeOptions, run
from ._service import DEFAULT_MAX_MESSAGE_BYTES


def _limits(pairs: Sequence[str]) -> skift.Limits:
    """``NAME=VALUE`` pairs over the defaults; durations are seconds."""
    fields = attrs.fields_dict(skift.Limits)
    changes: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or name not in fields:
            raise SystemExit(
                f"--limit {pair!r}: expected NAME=VALUE with NAME one of {', '.join(fields)}"
            )
        default = getattr(skift.DEFAULT_LIMITS, name)
        try:
            if isinstance(default, timedelta):
                changes[name] = timedelta(seconds=float(value))
            else:
                changes[name] = int(value)
        except ValueError:
            raise SystemExit(f"--limit {pair!r}: {value!r} is not a number") from None
    return attrs.evolve(skift.DEFAULT_LIMITS, **changes)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="skift-serve",
        description="Serve skift over gRPC (unix socket, optionally TCP) with HTTP health and metrics.",
    )
    store = p.add_mutually_exclusive_group()
    store.add_argument(
        "--dsn",
        help="PostgreSQL to serve (postgresql://...); default: the embedded cluster under "
        "the user's data directory, started and kept across restarts",
    )
    store.add_argument(
        "--memory",
        action="store_true",
        help="serve the in-memory store: NOTHING IS KEPT when the process stops",
    )
    p.add_argument(
        "--listen-dsn",
        help="a direct connection to PostgreSQL for LISTEN (the ClaimNext wake-up) when --dsn "
        "is a pooler in transaction mode such as PgBouncer; default: --dsn (behind a "
        "pooler without it, waits poll about once a second)",
    )
    p.add_argument("--data-dir", type=Path, help="the embedded cluster's directory (without --dsn)")
    p.add_argument(
        "--blob-dir",
        type=Path,
        help="where blob bytes are kept, by digest (default: 'blobs' beside the embedded "
        "cluster's directory; with --dsn, $SKIFT_BLOB_DIR or $XDG_DATA_HOME/skift/blobs)",
    )
    p.add_argument(
        "--socket",
        type=Path,
        help="unix socket path (default: $XDG_RUNTIME_DIR/skift/skift.sock, "
        "/run/skift/skift.sock as root, else /tmp/skift-$UID/skift.sock)",
    )
    p.add_argument(
        "--socket-mode",
        default="0660",
        help="the socket's permissions, octal (default 0660: the owner and its group)",
    )
    p.add_argument("--listen", metavar="HOST:PORT", help="also serve gRPC on TCP (bearer tokens)")
    p.add_argument("--tls-cert", type=Path, help="TLS certificate chain (PEM) for --listen")
    p.add_argument("--tls-key", type=Path, help="TLS private key (PEM) for --listen")
    p.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve the web board, /healthz, /readyz and /metrics (to a server admin's "
        "bearer token) on HTTP",
    )
    p.add_argument(
        "--metrics",
        metavar="HOST:PORT",
        help="serve /metrics (and /healthz, /readyz) without sign-in on a listener of its own "
        "(bind it where only your monitoring reaches)",
    )
    p.add_argument(
        "--oidc-issuer",
        metavar="URL",
        help="over TCP, also accept JWTs (OIDC ID/access tokens) from this issuer; "
        "the identity is ISSUER|SUBJECT (attach it to a principal as an oidc identity)",
    )
    p.add_argument("--oidc-audience", metavar="AUD", help="the audience those tokens must carry")
    p.add_argument(
        "--oidc-jwks",
        metavar="FILE|URL",
        help="the issuer's key set (default: its discovery document's jwks_uri)",
    )
    p.add_argument(
        "--board-url",
        metavar="URL",
        help="the board's address as browsers reach it, for 'skift board' links "
        "(default: the --http address; set it behind a proxy or TLS terminator)",
    )
    p.add_argument("--org", default="default", help="the organization served (default: default)")
    p.add_argument(
        "--limit",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a structural limit (repeatable; durations in seconds), e.g. ops_per_patch=100",
    )
    p.add_argument(
        "--max-message-bytes",
        type=int,
        default=DEFAULT_MAX_MESSAGE_BYTES,
        help=f"largest request message accepted (default {DEFAULT_MAX_MESSAGE_BYTES})",
    )
    p.add_argument(
        "--sweep-every",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="how often expired leases are swept (0: never)",
    )
    p.add_argument(
        "--prune-every",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="how often idempotency records and claim cursors past their windows are pruned "
        "(0: never; see skift admin prune)",
    )
    p.add_argument(
        "--drain-timeout",
        type=float,
        default=20.0,
        metavar="SECONDS",
        help="on SIGTERM, how long calls in flight may take to finish",
    )
    p.add_argument(
        "--webhook-allow-private",
        action="store_true",
        help="let webhook endpoints be (or resolve to) loopback and private addresses "
        "(tests, private networks); off: refused at add and at connect time",
    )
    p.add_argument(
        "--webhook-retry-schedule",
        default=str(skift.DEFAULT_RETRY_SCHEDULE),
        metavar="DELAYS",
        help="the delays before each retry of a failed delivery, e.g. 5s,5m,30m; after the "
        f"last the delivery is parked (default {skift.DEFAULT_RETRY_SCHEDULE}: about 3 days)",
    )
    p.add_argument(
        "--webhook-timeout",
        default="10s",
        metavar="DURATION",
        help="how long one delivery attempt may take (default 10s)",
    )
    p.add_argument(
        "--webhook-workers",
        type=int,
        default=8,
        metavar="N",
        help="deliveries attempted at once by this server (0: deliver nothing; another "
        "server over the same database may)",
    )
    _connection_flags(p)
    p.add_argument("--log-format", choices=["text", "json"], default="text")
    p.add_argument("--log-level", choices=["debug", "info", "warning", "error"], default="info")
    p.add_argument(
        "--test-hooks",
        action="store_true",
        help="TESTS ONLY: let callers act as any principal and move the store's clock",
    )
    return p


_CONNECTION_FLAGS: Final = (
    (
        "max_concurrent_streams",
        "--max-concurrent-streams",
        int,
        "streams open at once on one gRPC connection",
    ),
    ("reset_burst", "--stream-reset-burst", int, "streams a gRPC client may reset in a burst"),
    (
        "resets_per_second",
        "--stream-resets-per-second",
        float,
        "how fast that allowance refills; past it GOAWAY",
    ),
    (
        "preface_timeout",
        "--preface-timeout",
        float,
        "seconds from connecting to the HTTP/2 preface",
    ),
    (
        "header_timeout",
        "--header-timeout",
        float,
        "seconds a request's headers may take to arrive (gRPC and HTTP)",
    ),
    ("idle_timeout", "--idle-timeout", float, "seconds a gRPC connection may stay without a call"),
    (
        "max_header_list_bytes",
        "--max-header-bytes",
        int,
        "largest request headers (past it a status)",
    ),
    (
        "frames_per_turn",
        "--frames-per-turn",
        int,
        "HTTP/2 frames of one connection handled before the others get a turn",
    ),
    (
        "busy_frames_per_turn",
        "--busy-frames-per-turn",
        int,
        "HTTP/2 frames the busy gRPC connections share in one turn",
    ),
    (
        "unauthenticated_body_bytes",
        "--unauthenticated-body-bytes",
        int,
        "request bytes accepted before the caller is authenticated",
    ),
    ("tls_handshake_timeout", "--tls-handshake-timeout", float, "seconds a TLS handshake may take"),
    (
        "http_max_connections",
        "--http-max-connections",
        int,
        "connections the HTTP listener serves at once (past it 503)",
    ),
    (
        "http_keep_alive",
        "--http-keep-alive",
        float,
        "seconds an idle HTTP keep-alive connection stays open",
    ),
)
"""The :class:`ConnectionLimits` each flag sets (docs/operations-server.md)."""


def _connection_flags(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("connection limits (docs/operations-server.md)")
    for name, flag, kind, text in _CONNECTION_FLAGS:
        default = getattr(DEFAULT_CONNECTION_LIMITS, name)
        group.add_argument(
            flag, type=kind, default=default, dest=name, help=f"{text} (default {default})"
        )


def options(argv: Sequence[str] | None = None) -> tuple[ServeOptions, argparse.Namespace]:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["serve"]:
        args = args[1:]
    ns = parser().parse_args(args)
    try:
        mode = int(ns.socket_mode, 8)
    except ValueError:
        raise SystemExit(f"--socket-mode {ns.socket_mode!r} is not an octal mode") from None
    try:
        schedule = skift.RetrySchedule.parse(ns.webhook_retry_schedule)
        timeout = skift.parse_duration(ns.webhook_timeout)
    except skift.Invalid as exc:
        raise SystemExit(f"skift serve: {exc}") from None
    if timeout <= timedelta(0):
        raise SystemExit("skift serve: --webhook-timeout must be more than 0")
    limits = _limits(ns.limit)
    if ns.webhook_allow_private:
        limits = attrs.evolve(limits, webhook_allow_private=True)
    opts = ServeOptions(
        dsn=ns.dsn,
        listen_dsn=ns.listen_dsn,
        memory=ns.memory,
        data_dir=ns.data_dir,
        blob_dir=ns.blob_dir,
        socket=ns.socket,
        socket_mode=mode,
        listen=ns.listen,
        tls_cert=ns.tls_cert,
        tls_key=ns.tls_key,
        http=ns.http,
        metrics=ns.metrics,
        board_url=ns.board_url,
        limits=limits,
        org=ns.org,
        test_hooks=ns.test_hooks,
        sweep_every=ns.sweep_every,
        prune_every=ns.prune_every,
        drain_timeout=ns.drain_timeout,
        max_message_bytes=ns.max_message_bytes,
        connection_limits=ConnectionLimits(
            **{name: getattr(ns, name) for name, *_ in _CONNECTION_FLAGS}
        ),
        oidc_issuer=ns.oidc_issuer,
        oidc_audience=ns.oidc_audience,
        oidc_jwks=ns.oidc_jwks,
        webhook_retry_schedule=schedule,
        webhook_timeout=timeout,
        webhook_workers=ns.webhook_workers,
    )
    return opts, ns


def main(argv: Sequence[str] | None = None) -> int:
    opts, ns = options(argv)
    configure(ns.log_format, ns.log_level)
    try:
        asyncio.run(run(opts))
    except skift.SkiftError as exc:
        print(f"skift serve: {exc}", file=sys.stderr)
        return 4 if isinstance(exc, skift.Unavailable) else 1
    except KeyboardInterrupt:
        return 130
    return 0
