"""The webhook delivery worker of ``skift serve`` (docs/webhooks.md).

It claims due deliveries from the store (``FOR UPDATE SKIP LOCKED`` in
PostgreSQL, so several servers over one database share the work and never send
one delivery twice at once), POSTs each with Standard Webhooks v1 headers, and
records the outcome: delivered on a 2xx, else retried on the schedule, then
parked. A claim pushes the delivery's next attempt a lease ahead (twice the
timeout, plus a second), so a server that dies mid-attempt leaves it to be
retried, under the same ``webhook-id``, once the lease runs out.

Every address a delivery would connect to is checked at connect time
(:func:`skift.address_refusal`), and the connection goes to the address that was
checked (the URL's name is kept for the Host header and TLS), so a name that
resolves to a private address, now or after a DNS change, is refused. Redirects
are never followed. Proxies from the environment are not used.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
import time
from datetime import timedelta
from urllib.parse import urlsplit, urlunsplit

import httpx

import skift

from ._metrics import Metrics

_log = logging.getLogger("skift_server.webhooks")

USER_AGENT = "skift-webhooks/1"


class AddressRefused(Exception):
    """The endpoint's name resolves to an address deliveries may not go to."""


class DeliveryWorker:
    """Claims and attempts deliveries until cancelled."""

    def __init__(
        self,
        store: skift.Store,
        *,
        metrics: Metrics,
        schedule: skift.RetrySchedule = skift.DEFAULT_RETRY_SCHEDULE,
        timeout: timedelta = timedelta(seconds=10),
        allow_private: bool = False,
        concurrency: int = 8,
        poll: float = 0.5,
    ) -> None:
        self.store = store
        self.metrics = metrics
        self.schedule = schedule
        self.timeout = timeout
        self.allow_private = allow_private
        self.concurrency = max(1, concurrency)
        self.poll = poll
        self.lease = timeout * 2 + timedelta(seconds=1)
        self._inflight: set[asyncio.Task[None]] = set()
        self._wake = asyncio.Event()
        self._client = httpx.AsyncClient(
            follow_redirects=False,
            trust_env=False,
            timeout=httpx.Timeout(timeout.total_seconds()),
            headers={"user-agent": USER_AGENT},
        )

    async def run(self) -> None:
        changes: asyncio.Task[None] | None = None
        try:
            while True:
                free = self.concurrency - len(self._inflight)
                claimed = 0
                if free > 0:
                    try:
                        due = await self.store.claim_deliveries(limit=free, lease=self.lease)
                    except (skift.SkiftError, skift.TransientError, OSError) as exc:
                        _log.warning(
                            "claiming deliveries failed", extra={"fields": {"error": str(exc)}}
                        )
                        due = []
                    except Exception as exc:  # a store error of any kind: retry after a pause
                        _log.warning(
                            "claiming deliveries failed", extra={"fields": {"error": repr(exc)}}
                        )
                        due = []
                    claimed = len(due)
                    for d in due:
                        task = asyncio.create_task(self._attempt(d))
                        self._inflight.add(task)
                        task.add_done_callback(self._done)
                if claimed and claimed == free:
                    continue  # there may be more
                if changes is None or changes.done():
                    changes = asyncio.create_task(
                        self.store.wait_for_any_change(timedelta(seconds=30))
                    )
                wake = asyncio.create_task(self._wake.wait())
                await asyncio.wait(
                    {changes, wake}, timeout=self.poll, return_when=asyncio.FIRST_COMPLETED
                )
                wake.cancel()
                self._wake.clear()
        finally:
            if changes is not None:
                changes.cancel()
            for task in list(self._inflight):
                task.cancel()
            for task in list(self._inflight):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            await self._client.aclose()

    def _done(self, task: asyncio.Task[None]) -> None:
        self._inflight.discard(task)
        self._wake.set()  # the endpoint's next delivery may go now

    async def _attempt(self, due: skift.DueDelivery) -> None:
        d = due.delivery
        seal = await skift.cursor_seal(self.store, d.org_id)
        body, headers = skift.delivery_request(due, seal)
        status: int | None = None
        error: str | None = None
        started = time.monotonic()
        try:
            async with asyncio.timeout(self.timeout.total_seconds()):
                status, error = await self._post(due.url, body, headers)
        except AddressRefused as exc:
            error = f"refused: {exc}"
        except TimeoutError:
            error = f"timed out after {self.timeout.total_seconds():g} s"
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        except OSError as exc:
            error = f"{type(exc).__name__}: {exc}"
        ok = error is None and status is not None and 200 <= status < 300
        retry_in = None if ok else self.schedule.after_failure(d.attempts)
        outcome = "delivered" if ok else ("retry" if retry_in is not None else "parked")
        self.metrics.webhook_attempt(outcome, time.monotonic() - started)
        _log.info(
            "webhook attempt",
            extra={
                "fields": {
                    "delivery": skift.ulid_str(d.id),
                    "attempt": d.attempts,
                    "status": status,
                    "outcome": outcome,
                    "error": error,
                }
            },
        )
        try:
            await self.store.settle_delivery(
                d, delivered=ok, status=status, error=error, retry_in=retry_in
            )
        except Exception as exc:  # the lease runs out and it is attempted again
            _log.warning(
                "recording a webhook attempt failed",
                extra={"fields": {"delivery": skift.ulid_str(d.id), "error": repr(exc)}},
            )

    async def _post(self, url: str, body: bytes, headers: dict[str, str]) -> tuple[int, str | None]:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        address = await self._vetted_address(host, port)
        literal = f"[{address}]" if ":" in address else address
        pinned = urlunsplit((parts.scheme, f"{literal}:{port}", parts.path or "/", parts.query, ""))
        sent = dict(headers)
        sent["host"] = parts.netloc.rsplit("@", 1)[-1]
        extensions = {"sni_hostname": host} if parts.scheme == "https" else {}
        response = await self._client.post(
            pinned, content=body, headers=sent, extensions=extensions
        )
        if 200 <= response.status_code < 300:
            return response.status_code, None
        if response.is_redirect:
            where = response.headers.get("location", "")
            return (
                response.status_code,
                f"HTTP {response.status_code}: redirect to {where!r} not followed",
            )
        return response.status_code, f"HTTP {response.status_code}"

    async def _vetted_address(self, host: str, port: int) -> str:
        """The address to connect to: every address the name resolves to must be allowed."""
        try:
            found = [ipaddress.ip_address(host)]
        except ValueError:
            loop = asyncio.get_running_loop()
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            found = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]
        if not found:
            raise AddressRefused(f"{host} resolves to no address")
        for ip in found:
            why = skift.address_refusal(ip, allow_private=self.allow_private)
            if why:
                shown = host if str(ip) == host else f"{host} resolves to {ip}"
                raise AddressRefused(f"{shown}: {why}")
        return str(found[0])
