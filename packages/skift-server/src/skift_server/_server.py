"""``skift serve``: one asyncio process serving skift.

It opens the store (PostgreSQL at ``--dsn``, else the embedded cluster under
the user's data directory, or ``--memory``), applies migrations, and serves:

- gRPC (skift.v1.SkiftService, grpc.health.v1.Health and server reflection) on a unix socket, where
  the kernel names the caller (SO_PEERCRED), and optionally on TCP
  (``--listen``) where a bearer token does, with TLS when given a
  certificate and key;
- HTTP (``--http``): ``/healthz``, ``/readyz``, ``/metrics`` (a server admin's token) and
  the web board; ``--metrics``: ``/metrics`` alone, unauthenticated, on a listener of its own;
- the lease-expiry sweeper, every ``--sweep-every`` seconds;
- pruning of what is not audit (``skift.prune``), every ``--prune-every`` seconds;
- the webhook delivery worker (``_webhook_worker``; ``--webhook-workers 0``
  turns it off).

SIGTERM (or SIGINT) drains: the server stops accepting connections, answers
new calls on open ones UNAVAILABLE (clients retry them elsewhere), wakes the
long polls (ClaimNext and WatchEvents waiting for work) with UNAVAILABLE, waits up to
``--drain-timeout`` for calls in flight to finish, then closes. A call cut off
at that point is rolled back by PostgreSQL, never half-applied.

Nothing is coordinated outside PostgreSQL, so any number of servers may run
over one database.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import gc
import getpass
import logging
import os
import signal
import ssl
import sys
import time
from collections.abc import Awaitable, Callable, Generator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import attrs
from grpclib.server import Server

import skift

from ._auth import Authenticator
from ._errors import ErrorDetailsCodec
from ._fast import FastRoutes
from ._grpc_server import AnswerUnknown, GuardedServer
from ._h2 import DEFAULT_CONNECTION_LIMITS, ConnectionLimits
from ._health import Health
from ._metrics import Metrics, pool_stats_of
from ._oidc import OidcVerifier
from ._paths import announce_starting, clear_starting, default_socket_path, prepare_socket_path
from ._reflection import with_reflection
from ._service import DEFAULT_MAX_MESSAGE_BYTES, SkiftService
from ._webhook_worker import DeliveryWorker
from ._wire import StrictCodec
from .board import Board

# protobuf's parser (_wire.decode imports it where it reads): loaded as the server starts, not
# at its first request (~80 ms)
from . import _upbcodec  # noqa: F401  # isort: skip  # pyright: ignore[reportUnusedImport]

_log = logging.getLogger("skift_server")

PG_SUPERVISE_EVERY: Final = 0.5
"""Seconds between two looks at the embedded PostgreSQL's process (it is our child)."""
PG_RESTARTS: Final = 5
PG_RESTART_WINDOW: Final = 600.0
"""At most PG_RESTARTS restarts of the embedded PostgreSQL in this many seconds; past them
it stays down (a cluster that keeps dying needs a person), and the log says so."""

MEMORY_WARNING: Final = (
    "--memory: serving the in-memory store. NOTHING IS KEPT: every project, node and "
    "lease is lost when this process stops. Use it for demos and tests only."
)


@attrs.frozen(kw_only=True)
class ServeOptions:
    """Everything ``skift serve`` is told (see ``skift serve --help``)."""

    dsn: str | None = None
    listen_dsn: str | None = None
    memory: bool = False
    data_dir: Path | None = None
    blob_dir: Path | None = None
    socket: Path | None = None
    socket_mode: int = 0o660
    listen: str | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    http: str | None = None
    metrics: str | None = None
    board_url: str | None = None
    limits: skift.Limits = skift.DEFAULT_LIMITS
    org: str = "default"
    test_hooks: bool = False
    sweep_every: float = 5.0
    prune_every: float = 3600.0
    probe_every: float = 0.25
    probe_timeout: float = 2.0
    drain_timeout: float = 20.0
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    connection_limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS
    oidc_issuer: str | None = None
    oidc_audience: str | None = None
    oidc_jwks: str | None = None
    webhook_retry_schedule: skift.RetrySchedule = skift.DEFAULT_RETRY_SCHEDULE
    webhook_timeout: timedelta = timedelta(seconds=10)
    webhook_workers: int = 8
    unary_fast_path: bool = True
    """Unary RPCs answered from the HTTP/2 layer (``_fast``); False: all through grpclib
    (tests compare the two)."""


def split_host_port(value: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[v6]:PORT`` or ``:PORT`` (all interfaces)."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise skift.Invalid(
            f"{value!r} is not HOST:PORT", next="For example 127.0.0.1:7421 or [::1]:7421."
        )
    host = host.strip("[]") or "0.0.0.0"
    return host, int(port)


def with_listen_dsn(dsn: str, listen_dsn: str | None) -> str:
    """The store URL: ``dsn``, naming ``listen_dsn`` (skift_pg's ``listen_dsn`` query
    parameter) when given."""
    if listen_dsn is None:
        return dsn
    parts = urlsplit(dsn)
    query = urlencode([*parse_qsl(parts.query, keep_blank_values=True), ("listen_dsn", listen_dsn)])
    return urlunsplit(parts._replace(query=query))


class SkiftServer:
    """The parts of ``skift serve``; :meth:`start`, then :meth:`stop` (or :func:`run`)."""

    def __init__(self, options: ServeOptions) -> None:
        self.options = options
        self.socket_path: Path | None = None
        self.tcp_address: tuple[str, int] | None = None
        self.http_address: tuple[str, int] | None = None
        self.metrics_address: tuple[str, int] | None = None
        self.store_url = ""
        self._cluster: Any = None
        self._base: skift.LocalSkift | None = None
        self._grpc: list[Server] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._http: Any = None  # a uvicorn.Server, imported only with --http
        self._metrics_http: Any = None  # the --metrics listener's
        self._store_ok = False
        self.health = Health()
        self.metrics = Metrics()
        self.service: SkiftService | None = None
        self.board = Board(lambda: self.base)

    @property
    def base(self) -> skift.LocalSkift:
        assert self._base is not None, "the server is not started"
        return self._base

    # ------------------------------------------------------------ starting

    async def start(self) -> None:
        o = self.options
        path = o.socket or default_socket_path()
        made_dir = not path.parent.exists()
        try:
            prepare_socket_path(path)
            announce_starting(
                path
            )  # clients wait while the store opens (seconds on a fresh cluster)
            try:
                await self._start(o)
            finally:
                clear_starting(path)
        except BaseException:
            # a server that does not serve leaves nothing behind: its marker (cleared above,
            # or left by `skift serve` before this process got here) and a directory it made
            clear_starting(path)
            if made_dir:
                with contextlib.suppress(OSError):
                    path.parent.rmdir()  # only when empty: never another server's socket
            raise

    async def _start(self, o: ServeOptions) -> None:
        await self._open_store()
        # what the first WatchEvents would otherwise import on the event loop
        await asyncio.to_thread(skift.load_cursor_cipher)
        self.metrics = Metrics(pool_stats_of(self.base.store))
        oidc: OidcVerifier | None = None
        if o.oidc_issuer or o.oidc_audience or o.oidc_jwks:
            if not o.oidc_issuer:
                raise skift.Invalid(
                    "--oidc-audience and --oidc-jwks need --oidc-issuer",
                    next="Give the issuer's URL (the iss of its tokens).",
                )
            oidc = OidcVerifier(o.oidc_issuer, o.oidc_audience or "", o.oidc_jwks)
            await oidc.start()
        auth = Authenticator(self.base, test_hooks=o.test_hooks, oidc=oidc)
        self.service = SkiftService(
            auth,
            metrics=self.metrics,
            max_message_bytes=o.max_message_bytes,
            board_link=self.board_link,
        )
        if o.test_hooks:
            _log.warning(
                "--test-hooks: callers may act as any principal and move the clock; tests only"
            )
        # The unix socket last: a client waits for it to appear (announce_starting), so by
        # then every listener is up and a board link names the HTTP address.
        if o.listen:
            await self._listen_tcp(o.listen)
        if o.http:
            await self._serve_http(o.http)
        if o.metrics:
            await self._serve_http(o.metrics, metrics_only=True)
        await self._listen_unix()
        self._store_ok = True
        await self._set_health()
        if o.sweep_every > 0:
            self._tasks.append(asyncio.create_task(self._sweeper(), name="skift-sweeper"))
        if o.probe_every > 0:
            self._tasks.append(asyncio.create_task(self._prober(), name="skift-probe"))
        if o.prune_every > 0:
            self._tasks.append(asyncio.create_task(self._pruner(), name="skift-pruner"))
        if self._cluster is not None:
            self._tasks.append(asyncio.create_task(self._supervise_pg(), name="skift-pg"))
        if o.webhook_workers > 0:
            worker = DeliveryWorker(
                self.base.store,
                metrics=self.metrics,
                schedule=o.webhook_retry_schedule,
                timeout=o.webhook_timeout,
                allow_private=o.limits.webhook_allow_private,
                concurrency=o.webhook_workers,
            )
            self._tasks.append(asyncio.create_task(worker.run(), name="skift-webhooks"))
        _log.info(
            "serving",
            extra={
                "fields": {
                    "socket": str(self.socket_path),
                    "listen": _address(self.tcp_address),
                    "tls": bool(o.tls_cert),
                    "http": _address(self.http_address),
                    "store": _redact(self.store_url),
                    "pid": os.getpid(),
                }
            },
        )

    async def _open_store(self) -> None:
        o = self.options
        if o.memory:
            _log.warning(MEMORY_WARNING)
            print(f"\n*** {MEMORY_WARNING} ***\n", file=sys.stderr, flush=True)
            self.store_url = "memory:"
        else:
            from skift_pg import migrate

            dsn = o.dsn
            if dsn is None:
                from skift_pg.embedded import EmbeddedCluster, default_data_dir

                data_dir = o.data_dir or default_data_dir()
                self._cluster = EmbeddedCluster(data_dir)
                _log.info(
                    "starting the embedded PostgreSQL",
                    extra={"fields": {"data_dir": str(data_dir)}},
                )
                dsn = await asyncio.to_thread(self._cluster.start)
            await migrate(dsn)
            self.store_url = with_listen_dsn(dsn, o.listen_dsn)
        base = skift.open(
            self.store_url,
            principal=skift.User(_os_user()),
            org=o.org,
            limits=o.limits,
            blobs=self._blob_dir(),
        )
        await base.__aenter__()
        self._base = base
        await self._bootstrap_owner()

    def _blob_dir(self) -> Path | None:
        """--blob-dir; else beside the embedded cluster's data directory (its ``blobs``
        sibling); else, over --dsn, ``skift.default_blob_dir()``. --memory keeps blobs
        in memory unless given a directory."""
        o = self.options
        if o.blob_dir is not None or o.memory:
            return o.blob_dir
        if o.dsn is None:
            from skift_pg.embedded import default_data_dir

            return (o.data_dir or default_data_dir()).parent / "blobs"
        return skift.default_blob_dir()

    async def _bootstrap_owner(self) -> None:
        """Make the server's OS user the owner: its uid identifies it on the socket."""
        owner = await self.base.bootstrap_owner(os.geteuid())
        _log.info("owner", extra={"fields": {"principal": owner.name, "uid": os.geteuid()}})

    async def _listen_unix(self) -> None:
        o = self.options
        path = o.socket or default_socket_path()
        prepare_socket_path(path)
        server = self._grpc_server()
        old = os.umask(0o777 & ~o.socket_mode)  # no window in which the socket is wider open
        try:
            await server.start(path=str(path))
        finally:
            os.umask(old)
        path.chmod(o.socket_mode)
        self._grpc.append(server)
        self.socket_path = path

    async def _listen_tcp(self, listen: str) -> None:
        o = self.options
        host, port = split_host_port(listen)
        tls: ssl.SSLContext | None = None
        if o.tls_cert or o.tls_key:
            if not (o.tls_cert and o.tls_key):
                raise skift.Invalid(
                    "TLS needs both a certificate and its key",
                    next="Pass --tls-cert and --tls-key together.",
                )
            tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            tls.load_cert_chain(str(o.tls_cert), str(o.tls_key))
            tls.set_alpn_protocols(["h2"])
        else:
            _log.warning(
                "TCP without TLS: bearer tokens cross the network in clear text",
                extra={"fields": {"listen": listen}},
            )
        server = self._grpc_server()
        await server.start_tcp(host, port, tls)
        self._grpc.append(server)
        listener: Any = server._server  # pyright: ignore[reportPrivateUsage]
        bound: Any = listener.sockets[0].getsockname() if listener else (host, port)
        self.tcp_address = (str(bound[0]), int(bound[1]))

    def _grpc_server(self) -> GuardedServer:
        assert self.service is not None
        details = ErrorDetailsCodec()
        server = GuardedServer(
            with_reflection([self.service, self.health]),
            limits=self.options.connection_limits,
            codec=StrictCodec(),
            status_details_codec=details,
            fast=FastRoutes(self.service, details) if self.options.unary_fast_path else None,
        )
        routes: dict[str, Any] = server._mapping  # pyright: ignore[reportPrivateUsage]
        server._mapping = AnswerUnknown(routes)  # pyright: ignore[reportPrivateUsage]
        return server

    async def _serve_http(self, address: str, *, metrics_only: bool = False) -> None:
        import uvicorn

        from ._http import http_app, metrics_app
        from ._http1 import HeaderLimit, uvicorn_settings

        class _Uvicorn(uvicorn.Server):
            """uvicorn without its own signal handlers: the server owns SIGTERM and SIGINT."""

            @contextlib.contextmanager
            def capture_signals(self) -> Generator[None]:
                yield

        host, port = split_host_port(address)
        app = HeaderLimit(
            metrics_app(self) if metrics_only else http_app(self),
            self.options.connection_limits.max_header_list_bytes,
        )
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_config=None,
            lifespan="off",
            access_log=False,
            **uvicorn_settings(self.options.connection_limits),
        )
        server = _Uvicorn(config)
        if metrics_only:
            self._metrics_http = server
        else:
            self._http = server
        self._tasks.append(asyncio.create_task(server.serve(), name="skift-http"))
        while not server.started:
            if self._tasks[-1].done():
                self._tasks[-1].result()  # raise what stopped it (a port in use)
                raise skift.Unavailable(f"HTTP did not start on {address}")
            await asyncio.sleep(0.01)
        bound = server.servers[0].sockets[0].getsockname() if server.servers else (host, port)
        if metrics_only:
            self.metrics_address = (str(bound[0]), int(bound[1]))
        else:
            self.http_address = (str(bound[0]), int(bound[1]))

    # ------------------------------------------------------------ running

    def board_link(self, code: str) -> str:
        """The link that signs in with ``code``: under ``--board-url``, else the HTTP address
        (a wildcard address as ``localhost``); empty when the server serves no HTTP."""
        base = self.options.board_url
        if not base and self.http_address is not None:
            host, port = self.http_address
            if host in ("0.0.0.0", "::", ""):
                host = "localhost"
            base = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
        if not base:
            return ""
        return f"{base.rstrip('/')}/signin?code={code}"

    @property
    def draining(self) -> bool:
        """Shutting down: new calls are refused."""
        return self.service is not None and self.service.draining

    @property
    def ready(self) -> bool:
        """Serving: not draining, and the store answered the last probe."""
        return self._store_ok and self.service is not None and not self.service.draining

    async def _set_health(self) -> None:
        await self.health.set(self.ready)
        self.metrics.up.set(1 if self.ready else 0)

    async def _sweeper(self) -> None:
        while True:
            await asyncio.sleep(self.options.sweep_every)
            try:
                n = await self.base.sweep_expired()
            except Exception as exc:  # an outage, or worse: sweep again next time
                _log.warning("lease sweep failed", extra={"fields": {"error": _error_text(exc)}})
                continue
            if n:
                self.metrics.expiries.inc(n)
                self.metrics.lease_ended(n)
                _log.info("expired leases recorded", extra={"fields": {"count": n}})

    async def _pruner(self) -> None:
        """Prune what is not audit on a schedule; every server runs one, and the store's
        prune lock lets one run at a time (the others skip)."""
        while True:
            await asyncio.sleep(self.options.prune_every)
            try:
                r = await skift.prune(self.base.store, limits=self.options.limits)
            except Exception as exc:  # an outage, or worse: prune again next time
                _log.warning("prune failed", extra={"fields": {"error": _error_text(exc)}})
                continue
            _log.info(
                "prune ran" if r.ran else "prune skipped: another server is pruning",
                extra={
                    "fields": {
                        "requests": r.requests,
                        "claim_cursors": r.claim_cursors,
                        "blobs": r.blobs,
                        "blob_files": r.blob_files,
                        "partitions_created": r.partitions_created,
                    }
                },
            )

    async def refresh_webhook_metrics(self) -> None:
        """Read the store's growth (tables, partitions, deliveries by state, the last prune)
        into the metrics (for ``/metrics``)."""
        try:
            st = await asyncio.wait_for(skift.store_stats(self.base.store), 5)
        except Exception as exc:
            _log.warning("reading store stats failed", extra={"fields": {"error": repr(exc)}})
            return
        now = datetime.now(UTC)

        def age(at: datetime | None) -> float:
            return 0.0 if at is None else max(0.0, (now - at).total_seconds())

        d = st.deliveries
        m = self.metrics
        m.webhook_stats(d.pending, d.delivered, d.parked, age(d.oldest_pending_at))
        m.webhook_oldest_parked.set(age(st.oldest_parked_at))
        for t in st.tables:
            m.table_rows.labels(table=t.name).set(t.rows)
            if t.bytes is not None:
                m.table_bytes.labels(table=t.name).set(t.bytes)
        m.event_partitions.set(len(st.event_partitions))
        if st.last_prune is not None:
            m.prune_last_run.set(st.last_prune.at.timestamp())
            m.prune_last_removed.labels(what="requests").set(st.last_prune.requests)
            m.prune_last_removed.labels(what="claim_cursors").set(st.last_prune.claim_cursors)
            m.prune_last_removed.labels(what="blobs").set(st.last_prune.blobs)
            m.prune_last_removed.labels(what="blob_files").set(st.last_prune.blob_files)

    async def _prober(self) -> None:
        """Ask the store whether it serves every ``probe_every`` seconds, so ``/readyz``
        and the health service turn NOT_SERVING within a fraction of a second of the
        database going away, and back as soon as it answers again."""
        while True:
            await asyncio.sleep(self.options.probe_every)
            try:
                await self._probe_store()
                ok = True
            except Exception as exc:
                ok = False
                if self._store_ok:
                    _log.warning("store unreachable", extra={"fields": {"error": _error_text(exc)}})
            if ok and not self._store_ok:
                _log.info("store reachable again")
            self._store_ok = ok
            await self._set_health()

    async def _supervise_pg(self) -> None:
        """Restart the embedded PostgreSQL this server started when it dies (bounded: at most
        ``PG_RESTARTS`` in ``PG_RESTART_WINDOW`` seconds, then it stays down and says so).
        The pool and ``/readyz`` recover on their own once it answers (see ``_prober``).
        A cluster adopted from another process is left as it was found."""
        cluster = self._cluster
        restarts: collections.deque[float] = collections.deque()
        said = False
        while True:
            await asyncio.sleep(PG_SUPERVISE_EVERY)
            if cluster.alive():
                said = False
                continue
            if not cluster.owns_server:
                if not said:
                    _log.error(
                        "the embedded PostgreSQL this server adopted is down; another process "
                        "started it, so it is not restarted here",
                        extra={"fields": {"data_dir": str(cluster.data_dir)}},
                    )
                    said = True
                continue
            now = time.monotonic()
            while restarts and restarts[0] < now - PG_RESTART_WINDOW:
                restarts.popleft()
            if len(restarts) >= PG_RESTARTS:
                if not said:
                    _log.error(
                        "the embedded PostgreSQL keeps dying; not restarting it again",
                        extra={
                            "fields": {"restarts": len(restarts), "window_s": PG_RESTART_WINDOW}
                        },
                    )
                    said = True
                continue
            restarts.append(now)
            _log.warning(
                "the embedded PostgreSQL died; restarting it",
                extra={
                    "fields": {
                        "exit": cluster.exit_code(),
                        "attempt": len(restarts),
                        "of": PG_RESTARTS,
                    }
                },
            )
            try:
                await asyncio.to_thread(cluster.restart)
            except Exception as exc:
                _log.error(
                    "the embedded PostgreSQL did not start again",
                    extra={"fields": {"error": _error_text(exc)}},
                )
                await asyncio.sleep(min(2.0 ** len(restarts), 30.0))
            else:
                _log.info(
                    "the embedded PostgreSQL is back",
                    extra={"fields": {"after_s": round(time.monotonic() - now, 2)}},
                )

    async def _probe_store(self) -> None:
        """The store's own ping (PostgreSQL: ``SELECT 1`` on a connection of its own),
        else a one-row read; either bounded by ``probe_timeout``."""
        timeout = self.options.probe_timeout
        ping: Callable[[float], Awaitable[None]] | None = getattr(self.base.store, "ping", None)
        if ping is not None:
            await asyncio.wait_for(ping(timeout), timeout + 0.5)
        else:
            await asyncio.wait_for(self.base.list_projects(limit=1), timeout)

    # ------------------------------------------------------------ stopping

    async def stop(self) -> None:
        """Drain and close everything :meth:`start` opened (safe after a failed start)."""
        o = self.options
        if self.service is not None:
            woken = self.service.drain()
            if woken:
                _log.info("long polls woken", extra={"fields": {"count": woken}})
        await self._set_health()
        for server in self._grpc:
            if server._server is not None:  # pyright: ignore[reportPrivateUsage]
                server._server.close()  # stop accepting; open connections keep being served  # pyright: ignore[reportPrivateUsage]
        if self.socket_path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()
        if self.service is not None and self.service.in_flight:
            _log.info("draining", extra={"fields": {"in_flight": self.service.in_flight}})
            try:
                await asyncio.wait_for(self.service.drained(), o.drain_timeout)
            except TimeoutError:
                _log.warning(
                    "drain timed out; cancelling calls in flight",
                    extra={"fields": {"in_flight": self.service.in_flight}},
                )
        for server in self._grpc:
            server.close()
        for server in self._grpc:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)
        self._grpc.clear()
        self.board.closing.set()  # the board's live streams end, so HTTP can close
        for http in (self._http, self._metrics_http):
            if http is not None:
                http.should_exit = True
        for task in self._tasks:
            if task.get_name() != "skift-http":
                task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, 5)
        self._tasks.clear()
        if self._base is not None:
            with contextlib.suppress(Exception):
                await self._base.close()
            self._base = None
        if self._cluster is not None:
            await asyncio.to_thread(self._cluster.stop)
            self._cluster = None
        _log.info("stopped")


def _error_text(exc: BaseException) -> str:
    """What went wrong, for a log line: the message, else the exception's name (a
    timeout's message is empty)."""
    text = str(exc).strip()
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


def _address(value: tuple[str, int] | None) -> str | None:
    return f"{value[0]}:{value[1]}" if value else None


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid-{os.geteuid()}"


def _redact(url: str) -> str:
    """A DSN without its password, for logs (nor its query: a listen_dsn may hold one)."""
    url = url.split("?", 1)[0]
    if "@" not in url or "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    creds, host = rest.rsplit("@", 1)
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user}@{host}"


async def run(options: ServeOptions) -> None:
    """Serve until SIGTERM or SIGINT, then drain and stop."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    server = SkiftServer(options)
    try:
        await server.start()
        # What starting made (modules, the store, the routes) lives as long as the process:
        # moved out of the garbage collector's sight, so a full collection under load scans
        # the calls in flight, not the whole program (one took 0.4 s of the loop's time).
        gc.freeze()
        print(connect_hint(server), flush=True)
        await stop.wait()
        _log.info("signal received; draining")
    finally:
        await server.stop()


def connect_hint(server: SkiftServer) -> str:
    lines = [f"skift is serving on unix://{server.socket_path}"]
    if server.tcp_address:
        scheme = "https" if server.options.tls_cert else "http"
        lines.append(f"  and {scheme}://{server.tcp_address[0]}:{server.tcp_address[1]}")
    if server.http_address:
        lines.append(
            f"  HTTP: http://{server.http_address[0]}:{server.http_address[1]}/healthz /readyz"
            " (/metrics with a server admin's token)"
        )
        lines.append(
            f"  the board: http://{server.http_address[0]}:{server.http_address[1]}/ "
            "('skift board' prints a sign-in link)"
        )
    if server.metrics_address:
        lines.append(
            f"  metrics: http://{server.metrics_address[0]}:{server.metrics_address[1]}/metrics"
        )
    lines.append("From a terminal (the command line finds this server by itself):")
    lines.append("  skift project create 'OAuth spike'; skift ready; skift --help")
    lines.append("For an agent (MCP over stdio; register it with your harness, see docs/mcp.md):")
    lines.append("  skift-mcp")
    lines.append("From Python:")
    lines.append("  import asyncio, skift_server")
    lines.append("  async def main():")
    lines.append(f'      async with skift_server.connect("unix://{server.socket_path}") as sk:')
    lines.append("          print(await sk.list_projects())")
    lines.append("  asyncio.run(main())")
    lines.append("or with any gRPC client (the server offers reflection; see docs/grpc.md):")
    lines.append(
        f"  grpcurl -plaintext -unix {server.socket_path} skift.v1.SkiftService/ListProjects"
    )
    return "\n".join(lines)
