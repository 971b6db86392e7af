"""What a webhook delivery looks like on the wire: Standard Webhooks v1 signing and
verification, the body, which addresses a delivery may connect to, and the retry
schedule (docs/webhooks.md).

Signing follows Standard Webhooks v1: the signed content is
``"{webhook-id}.{webhook-timestamp}.{body}"``, the signature is the base64 of its
HMAC-SHA256 under the endpoint's 32-byte secret, sent as ``v1,<signature>``. The
secret is shown to people as ``whsec_`` + base64 of its bytes.

This module is pure: no I/O. The server's delivery worker (skift_server) resolves
names and connects; it asks :func:`address_refusal` about every address it would
connect to, at connect time, so a name that resolved to a public address when the
endpoint was added and to a private one later is still refused.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import ipaddress
import json
import re
import time
from collections.abc import Mapping, Sequence
from datetime import timedelta

import attrs

from ._errors import Invalid

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32
BODY_TYPE = "skift.events"
# How far a receiver's clock may be from ours before verify() refuses a delivery
# (the Standard Webhooks default): it bounds how long a captured request replays.
TOLERANCE = timedelta(minutes=5)


class WebhookVerificationError(Invalid):
    """The delivery's signature does not verify: it did not come from skift, or it was changed."""


def secret_text(secret: bytes) -> str:
    """A secret as it is shown once: ``whsec_`` + base64 of its bytes."""
    return SECRET_PREFIX + base64.b64encode(secret).decode("ascii")


def secret_bytes(secret: str | bytes) -> bytes:
    """The key bytes of a secret given as shown (``whsec_…``) or as raw bytes."""
    if isinstance(secret, bytes):
        return secret
    text = secret.strip()
    if text.startswith(SECRET_PREFIX):
        text = text[len(SECRET_PREFIX) :]
    try:
        key = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise Invalid(
            "the webhook secret is not whsec_ followed by base64",
            next="Pass the secret exactly as adding or rotating the webhook returned it.",
            field="secret",
        ) from None
    if not key:
        raise Invalid(
            "the webhook secret is empty",
            next="Pass the secret adding the webhook returned.",
            field="secret",
        )
    return key


def sign(secret: str | bytes, msg_id: str, timestamp: int, body: bytes | str) -> str:
    """The ``webhook-signature`` value (``v1,<base64>``) for one message."""
    data = body.encode() if isinstance(body, str) else body
    signed = f"{msg_id}.{timestamp}.".encode() + data
    mac = hmac.new(secret_bytes(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode("ascii")


def headers(
    secret: bytes, msg_id: str, body: bytes, *, timestamp: int | None = None
) -> dict[str, str]:
    """The headers of one POST: ``webhook-id``, ``webhook-timestamp``, ``webhook-signature``."""
    ts = int(time.time()) if timestamp is None else timestamp
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(ts),
        "webhook-signature": sign(secret, msg_id, ts, body),
        "content-type": "application/json",
    }


def verify_webhook(
    body: bytes | str,
    headers: Mapping[str, str],
    secret: str | bytes,
    *,
    now: float | None = None,
    tolerance: timedelta = TOLERANCE,
) -> dict[str, object]:
    """Check a delivery's signature and return its body, parsed.

    ``headers`` may use any case. Raises :class:`WebhookVerificationError` (an
    :class:`~skift.Invalid`) when a header is missing, the timestamp is further
    than ``tolerance`` from ``now`` (a replay), or no ``v1`` signature matches.
    Deduplicate by ``webhook-id``: a delivery may arrive more than once.
    """
    low = {k.lower(): v for k, v in headers.items()}
    msg_id, stamp, sigs = (
        low.get("webhook-id"),
        low.get("webhook-timestamp"),
        low.get("webhook-signature"),
    )
    if not (msg_id and stamp and sigs):
        raise WebhookVerificationError(
            "the request lacks webhook-id, webhook-timestamp or webhook-signature",
            next="Pass the request's headers as received.",
        )
    try:
        ts = int(stamp)
    except ValueError:
        raise WebhookVerificationError(
            f"webhook-timestamp {stamp!r} is not a unix time", next="Refuse the request."
        ) from None
    clock = time.time() if now is None else now
    if abs(clock - ts) > tolerance.total_seconds():
        raise WebhookVerificationError(
            f"webhook-timestamp {ts} is more than {int(tolerance.total_seconds())} s from now",
            next="Refuse the request (a replay, or a clock far off: check this host's time).",
        )
    data = body.encode() if isinstance(body, str) else body
    expected = sign(secret, msg_id, ts, data).split(",", 1)[1]
    for candidate in sigs.split():
        version, _, value = candidate.partition(",")
        if version == "v1" and hmac.compare_digest(value, expected):
            parsed: dict[str, object] = json.loads(data)
            return parsed
    raise WebhookVerificationError(
        "no webhook-signature matches the body under this secret",
        next="Refuse the request; if the secret was rotated, verify with the new one.",
    )


def payload(
    *, delivery: str, project: str, after: str | None, through: str, counts: Mapping[str, int]
) -> bytes:
    """A delivery's body: which project, which window of the change stream, how many of
    each operation. Never content: the receiver reads the events through the API."""
    doc = {
        "type": BODY_TYPE,
        "delivery": delivery,
        "project": project,
        "after": after,
        "through": through,
        "counts": dict(sorted(counts.items())),
    }
    return json.dumps(doc, separators=(",", ":")).encode()


# ------------------------------------------------------------------ addresses

_METADATA = ipaddress.ip_address("169.254.169.254")
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_ULA = ipaddress.ip_network("fc00::/7")


def address_refusal(
    address: str | ipaddress.IPv4Address | ipaddress.IPv6Address, *, allow_private: bool
) -> str | None:
    """Why a delivery may not connect to this address, or None when it may.

    Refused: loopback, RFC 1918, CGNAT (100.64/10), unique-local (fc00::/7),
    link-local (169.254/16, fe80::/10, including the cloud metadata address
    169.254.169.254), unspecified, multicast and reserved addresses, and
    IPv4-mapped IPv6 forms of any of them. ``allow_private`` (``skift serve
    --webhook-allow-private``, for tests and private networks) lets loopback and
    private addresses through; link-local and the metadata address stay refused.
    """
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        inner = address_refusal(ip.ipv4_mapped, allow_private=allow_private)
        return f"{inner} (as IPv4-mapped IPv6 {ip})" if inner else None
    if ip == _METADATA:
        return f"{ip} is the cloud metadata address"
    if ip.is_link_local:
        return f"{ip} is a link-local address"
    if ip.is_unspecified or ip.is_multicast:
        return f"{ip} is not a unicast address"
    private = (
        ip.is_loopback
        or ip.is_private
        or (isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT)
        or (isinstance(ip, ipaddress.IPv6Address) and ip in _ULA)
    )
    if private:
        if allow_private:
            return None
        kind = "a loopback" if ip.is_loopback else "a private"
        return f"{ip} is {kind} address"
    if ip.is_reserved:
        return f"{ip} is a reserved address"
    return None


# ------------------------------------------------------------------ retries

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> timedelta:
    """``250ms``, ``5s``, ``5m``, ``2h``, ``1d`` or bare seconds."""
    m = _DURATION.match(text)
    if m is None:
        raise Invalid(
            f"{text!r} is not a duration", next="Write a number and a unit: 500ms, 5s, 5m, 2h, 1d."
        )
    return timedelta(seconds=float(m.group(1)) * _UNIT[m.group(2) or "s"])


@attrs.frozen
class RetrySchedule:
    """The delays before each retry of a failed delivery.

    The first attempt is made at once; after the n-th failure the delivery waits
    ``delays[n-1]`` and is attempted again; a failure with no delay left parks it.
    So a schedule of k delays allows 1 + k attempts.
    """

    delays: tuple[timedelta, ...]

    @classmethod
    def parse(cls, text: str) -> RetrySchedule:
        """``5s,5m,30m,…`` (an empty text: no retry at all)."""
        parts = [p for p in text.split(",") if p.strip()]
        return cls(tuple(parse_duration(p) for p in parts))

    def after_failure(self, attempts: int) -> timedelta | None:
        """How long to wait after the ``attempts``-th attempt failed; None: park it."""
        return self.delays[attempts - 1] if 1 <= attempts <= len(self.delays) else None

    def __str__(self) -> str:
        return ",".join(_fmt(d) for d in self.delays)


def _fmt(d: timedelta) -> str:
    s = d.total_seconds()
    for unit in ("d", "h", "m", "s"):
        if s >= _UNIT[unit] and s % _UNIT[unit] == 0:
            return f"{int(s // _UNIT[unit])}{unit}"
    return f"{int(s * 1000)}ms"


def _schedule(delays: Sequence[str]) -> RetrySchedule:
    return RetrySchedule(tuple(parse_duration(d) for d in delays))


# Modelled on Stripe's (retries over about three days with growing gaps): 10
# attempts, the last about 3 days and 3 hours after the first.
DEFAULT_RETRY_SCHEDULE = _schedule(["5s", "1m", "5m", "30m", "2h", "5h", "10h", "24h", "34h"])
DEFAULT_TIMEOUT = timedelta(seconds=10)
