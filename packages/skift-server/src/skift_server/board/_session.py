"""Who a board request comes from, and whether a form really came from the board.

- The session: ``skift board`` prints ``/signin?code=…``; the sign-in page
  posts the code back (from the board's own page, so the cookie it sets is
  sent on the next navigation under ``SameSite=Strict``), and the server
  spends it for a session whose secret goes in the ``skift_session`` cookie
  (HttpOnly; Secure when the request came over TLS; SameSite=Strict).
  Every page asks the API for the handle of that session
  (:meth:`skift.LocalSkift.session`), so every action is the person's own.
- CSRF: every form carries a token derived from the session's secret
  (HMAC-SHA256), which a page of another site can neither read nor compute;
  a POST without it, or from another origin (``Origin``,
  ``Sec-Fetch-Site``), is refused before anything is read.
- Flash: what an action did, or why it was refused and what to do next,
  rides to the next page in a short-lived cookie and is shown once.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import parse_qs, quote, unquote

from starlette.requests import Request
from starlette.responses import Response

COOKIE: Final = "skift_session"
FLASH: Final = "skift_flash"
MAX_FORM_BYTES: Final = 2 * 1024 * 1024


def csrf_token(secret: str) -> str:
    return hmac.new(secret.encode(), b"skift-board-csrf", hashlib.sha256).hexdigest()


def csrf_ok(secret: str, token: str) -> bool:
    return bool(token) and hmac.compare_digest(csrf_token(secret), token)


def same_origin(request: Request) -> bool:
    """A POST the board's own page made: no other site's Origin, no cross-site fetch."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    return origin == f"{request.url.scheme}://{request.url.netloc}"


async def form(request: Request) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body as a dict (last value wins)."""
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        return {}
    fields = parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True)
    return {k: v[-1] for k, v in fields.items()}


def set_session(response: Response, request: Request, secret: str, expires: datetime) -> None:
    response.set_cookie(
        COOKIE,
        secret,
        max_age=max(0, int((expires - datetime.now(UTC)).total_seconds())),
        path="/",
        httponly=True,
        secure=request.url.scheme == "https",
        samesite="strict",
    )


def clear_session(response: Response, request: Request) -> None:
    response.delete_cookie(
        COOKIE, path="/", httponly=True, secure=request.url.scheme == "https", samesite="strict"
    )


def set_flash(response: Response, request: Request, kind: str, text: str, next: str = "") -> None:
    value = quote(json.dumps({"kind": kind, "text": text, "next": next}))
    response.set_cookie(
        FLASH,
        value[:3500],
        max_age=60,
        path="/",
        httponly=True,
        secure=request.url.scheme == "https",
        samesite="strict",
    )


def take_flash(request: Request) -> dict[str, Any] | None:
    raw = request.cookies.get(FLASH)
    if not raw:
        return None
    try:
        got = json.loads(unquote(raw))
    except ValueError:
        return None
    if not isinstance(got, dict):
        return None
    fields: dict[str, Any] = got  # pyright: ignore[reportUnknownVariableType]
    return {k: str(fields.get(k, "")) for k in ("kind", "text", "next")}


def local_path(value: str | None, default: str = "/") -> str:
    """Where to go back to after an action: a path on the board, never another site."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return default
    return value
