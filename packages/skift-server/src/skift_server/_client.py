"""The remote Skift: the same API as :class:`skift.LocalSkift`, over gRPC.

``connect(url)`` returns a :class:`RemoteSkift` whose methods take the same
arguments and return the same views (``skift.NodeInfo``, ``skift.Claim``...)
as the local API, and raise the same :class:`skift.SkiftError` classes with
the same message, ``next`` and details.

Transport: a small pool of HTTP/2 channels (one connection each, opened on
first use), a deadline on every call, and retries only where a retry cannot
do a thing twice: reads, heartbeats, and writes that carry a request id (the
client makes the id before the first attempt, so every attempt is the same
request and the server applies it once). Any call is retried when the
connection could not even be opened. A retry waits with jittered backoff, over a
window (20 s) that outlasts a server restart once the server has answered through
this connection; a server never reached is reported within a second.
"""

from __future__ import annotations

import contextlib
import functools
import os
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import unquote, urlsplit

from grpclib.client import Channel

import skift

from ._client_base import (
    DEFAULT_ATTEMPTS,
    DEFAULT_TIMEOUT,
    RETRY_WINDOW,
    AnswerCodec,
    RemoteStore,
    Shared,
    UnixChannel,
    reads_answers,
)
from ._client_content import ContentCalls
from ._client_generated import GeneratedCalls
from ._client_graph import GraphCalls
from ._client_h2 import Connection as LeanConnection
from ._client_import import ImportCalls
from ._client_work import WorkCalls
from ._errors import ErrorDetailsCodec
from ._h2 import GatheringChannel
from ._paths import check_socket_owner, find_socket

__all__ = ["RemoteSkift", "RemoteStore", "connect"]


@reads_answers
@skift.check_inputs
class RemoteSkift(GraphCalls, WorkCalls, ContentCalls, ImportCalls, GeneratedCalls):
    """skift over gRPC. Use :func:`connect` to make one."""

    def acting_as(self, principal: skift.PrincipalSpec, *, org: str | None = None) -> RemoteSkift:
        """A handle acting as another principal: only on a server run with ``--test-hooks``."""
        return RemoteSkift(
            self._shared,
            principal=principal,
            org=org or self.org,
            timeout=self.timeout,
            attempts=self.attempts,
            retry_window=self.retry_window,
        )


def connect(
    url: str | None = None,
    *,
    token: str | None = None,
    principal: skift.PrincipalSpec | None = None,
    org: str | None = None,
    timeout: float | None = None,
    attempts: int = DEFAULT_ATTEMPTS,
    retry_window: float | None = None,
    pool_size: int = 2,
    ssl_context: ssl.SSLContext | None = None,
    on_wait: Callable[[str], None] | None = None,
    invite: str | None = None,
) -> RemoteSkift:
    """A remote Skift: ``unix:///path.sock``, ``http://host:port`` or ``https://host:port``.

    Without ``url``: ``SKIFT_SERVER``, else the default socket of ``skift serve``.
    ``token`` (default ``SKIFT_TOKEN``) is sent as a bearer token over TCP
    only: on a unix socket the kernel names the caller, and a token is never
    sent there. A unix socket (or its directory) that belongs to neither the
    caller nor root is refused before connecting. ``principal`` and ``org``
    act as another principal and work only against ``skift serve --test-hooks``.
    A server that announced it is starting on the socket is waited for (up to
    a minute, once); ``on_wait`` is told so (the CLI prints it). ``invite``
    (default ``SKIFT_INVITE``) is an invitation's code, sent with the token
    over TCP: the first sign-in with an OIDC identity an admin invited presents
    it, and the identity becomes the invited principal's.

    A call that is safe to retry is retried over ``retry_window`` seconds (default
    ``SKIFT_RETRY_WINDOW``, else 20; at most
    ``attempts`` times; ``attempts=1`` never retries) once the server has answered
    through this connection: a server restart is waited out. A server never reached
    is reported as unavailable within a second. Each call's deadline is ``timeout``
    seconds (default ``SKIFT_TIMEOUT``, else 30).
    """
    if timeout is None:
        timeout = _env_seconds(
            "SKIFT_TIMEOUT",
            DEFAULT_TIMEOUT,
            next=f"Set it to a call's deadline in seconds, e.g. 120, or unset it for "
            f"{DEFAULT_TIMEOUT:g}.",
        )
    looked_at: list[Path] = []
    if not (url or os.environ.get("SKIFT_SERVER")):
        found, looked_at = find_socket()
        url = f"unix://{found}"
    url = url or os.environ["SKIFT_SERVER"]
    token = token if token is not None else os.environ.get("SKIFT_TOKEN") or None
    invite = invite if invite is not None else os.environ.get("SKIFT_INVITE") or None
    parts = urlsplit(url)
    make: Callable[[], Channel]
    open_lean: Callable[[], Awaitable[LeanConnection]] | None = None
    socket_path = ""
    codec = ErrorDetailsCodec()
    size = max(1, pool_size)
    if parts.scheme == "unix":
        path = unquote(parts.path if not parts.netloc else f"/{parts.netloc}{parts.path}")
        if not path:
            raise skift.Invalid(f"{url!r} names no socket", next="Use unix:///path/to/skift.sock.")
        make = functools.partial(UnixChannel, path, codec)
        open_lean = functools.partial(_open_unix, path, codec)
        socket_path = path
        token = None  # the kernel names the caller; a bearer token never goes over a socket
    elif parts.scheme in ("http", "https"):
        if not parts.hostname or not parts.port:
            raise skift.Invalid(
                f"{url!r} names no host and port", next="Use https://host:port (or http://)."
            )
        tls: ssl.SSLContext | bool = False
        if parts.scheme == "https":
            tls = ssl_context or ssl.create_default_context()
            with contextlib.suppress(AttributeError, NotImplementedError):
                tls.set_alpn_protocols(["h2"])
        make = functools.partial(
            GatheringChannel,
            parts.hostname,
            parts.port,
            ssl=tls,
            codec=AnswerCodec(),
            status_details_codec=codec,
        )
        if not tls:
            open_lean = functools.partial(
                LeanConnection.open_tcp, parts.hostname, parts.port, codec
            )
    else:
        raise skift.Invalid(
            f"{url!r} is not a skift server address",
            next="Use unix:///path.sock, http://host:port or https://host:port.",
        )
    metadata: dict[str, str] = {}
    if token:
        metadata["authorization"] = f"Bearer {token}"
        if invite:
            metadata["x-skift-invite"] = invite.strip()
    shared = Shared(
        make=make,
        size=size,
        metadata=metadata,
        socket=Path(socket_path) if socket_path else None,
        looked_at=looked_at,
        on_wait=on_wait,
        open_lean=open_lean,
    )
    if retry_window is None:
        retry_window = _env_seconds(
            "SKIFT_RETRY_WINDOW",
            RETRY_WINDOW,
            zero=True,
            next="Set it to how long a client keeps retrying through an outage, or unset it.",
        )
    return RemoteSkift(
        shared,
        principal=principal,
        org=org,
        timeout=timeout,
        attempts=attempts,
        retry_window=retry_window,
    )


async def _open_unix(path: str, codec: ErrorDetailsCodec) -> LeanConnection:
    """A lean connection on the socket, once its owner is checked (as ``UnixChannel`` does)."""
    check_socket_owner(path)
    return await LeanConnection.open_unix(path, codec)


def _env_seconds(name: str, default: float, *, next: str, zero: bool = False) -> float:
    """A number of seconds from the environment (``SKIFT_TIMEOUT``, ``SKIFT_RETRY_WINDOW``), or
    ``default`` when unset; up to a day, and 0 only where ``zero`` allows it (NaN never)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    low = value >= 0 if zero else value > 0
    if not (low and value <= 86_400):  # false for NaN too
        raise skift.Invalid(
            f"{name}={text!r} is not a number of seconds from 0 to 86,400", next=next, field=name
        )
    return value
