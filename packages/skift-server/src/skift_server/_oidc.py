"""OIDC over TCP: a bearer JWT from an identity provider, verified, names an ``oidc`` identity.

``skift serve --oidc-issuer URL --oidc-audience AUD [--oidc-jwks FILE|URL]``
accepts, beside skift's own ``skt_`` tokens, ID and access tokens in JWT form
from that issuer. :class:`OidcVerifier` checks the signature against the
issuer's key set (joserfc) and the claims: ``iss`` is the issuer, ``aud``
includes the audience, ``sub`` is present, ``exp`` is in the future (and
``nbf``/``iat`` not in it), with a minute of leeway for clocks. The identity
is ``iss|sub``: a skift admin attaches it to a principal
(``attach_identity(NAME, "oidc", "https://issuer|subject")``).

The key set comes from ``--oidc-jwks``: a file holding a JWKS, or an
``https://`` URL serving one; without it, from the issuer's discovery
document (``ISSUER/.well-known/openid-configuration``, ``jwks_uri``). A
fetched key set is kept and fetched again when a token names a key id it
does not hold (key rotation), at most once a minute.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import attrs

import skift

ALGORITHMS: Final = ("RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA")
LEEWAY_SECONDS: Final = 60
REFETCH_AFTER_SECONDS: Final = 60.0


@attrs.frozen(kw_only=True)
class OidcIdentity:
    """What a verified token says: the identity value (``iss|sub``) and when it expires."""

    value: str
    expires_at: datetime


def looks_like_jwt(token: str) -> bool:
    """Three base64url segments: a JWS compact token (skift's own tokens start ``skt_``)."""
    parts = token.split(".")
    return len(parts) == 3 and all(parts[:2])


def _refused(why: str) -> skift.Unauthenticated:
    return skift.Unauthenticated(
        f"the OIDC token was refused: {why}",
        next="Get a fresh token for this server's audience from your identity provider.",
    )


class OidcVerifier:
    """Verifies bearer JWTs of one issuer for one audience."""

    def __init__(self, issuer: str, audience: str, jwks: str | None = None) -> None:
        if not issuer:
            raise skift.Invalid("--oidc-issuer is empty", next="Give the issuer's URL.")
        if not audience:
            raise skift.Invalid(
                "--oidc-issuer needs --oidc-audience",
                next="Give the audience your identity provider puts in tokens for skift.",
            )
        self.issuer = issuer
        self.audience = audience
        self.jwks_source = jwks
        self._keys: Any = None
        self._fetched_at = 0.0
        self._lock = asyncio.Lock()
        if jwks is not None and not jwks.startswith(("https://", "http://")):
            self._keys = _keyset(_read_file(Path(jwks)), jwks)

    async def start(self) -> None:
        """Load the key set now, so a server with an unreachable issuer fails at start."""
        await self._load(force=False)

    async def verify(self, token: str) -> OidcIdentity:
        from joserfc import errors, jwt

        try:
            header = _header(token)
        except ValueError as exc:
            raise _refused(f"it is not a JWT ({exc})") from None
        keys = await self._load(force=False)
        kid = header.get("kid")
        if kid is not None and not _has_kid(keys, kid) and self._fetchable():
            keys = await self._load(force=True)
        try:
            decoded = jwt.decode(token, keys, algorithms=list(ALGORITHMS))
        except errors.JoseError as exc:
            raise _refused(f"its signature does not verify ({exc.error})") from None
        except ValueError as exc:
            raise _refused(str(exc)) from None
        claims = decoded.claims
        registry = jwt.JWTClaimsRegistry(
            leeway=LEEWAY_SECONDS,
            iss={"essential": True, "value": self.issuer},
            aud={"essential": True, "value": self.audience},
            sub={"essential": True},
            exp={"essential": True},
        )
        try:
            registry.validate(claims)
        except errors.ExpiredTokenError:
            raise _refused("it has expired") from None
        except errors.JoseError as exc:
            raise _refused(f"{exc.error}: {exc.description or ''}".strip(": ")) from None
        sub = claims.get("sub")
        exp = claims.get("exp")
        if not isinstance(sub, str) or not sub or not isinstance(exp, int | float):
            raise _refused("it has no subject or no expiry")
        return OidcIdentity(value=f"{self.issuer}|{sub}", expires_at=_expiry(exp))

    # ------------------------------------------------------------------ keys

    def _fetchable(self) -> bool:
        remote = self.jwks_source is None or self.jwks_source.startswith(("https://", "http://"))
        return remote and time.monotonic() - self._fetched_at > REFETCH_AFTER_SECONDS

    async def _load(self, *, force: bool) -> Any:
        if self._keys is not None and not force:
            return self._keys
        async with self._lock:
            if self._keys is not None and not force:
                return self._keys
            url = self.jwks_source or await self._discover()
            self._keys = _keyset(await _fetch_json(url), url)
            self._fetched_at = time.monotonic()
            return self._keys

    async def _discover(self) -> str:
        config = await _fetch_json(self.issuer.rstrip("/") + "/.well-known/openid-configuration")
        uri = config.get("jwks_uri")
        if not isinstance(uri, str) or not uri:
            raise skift.Unavailable(
                f"the discovery document of {self.issuer} names no jwks_uri",
                next="Give the key set with --oidc-jwks FILE|URL.",
            )
        return uri


def _expiry(exp: float) -> datetime:
    """``exp`` as a time, refused (not a server error) when no calendar holds it."""
    try:
        if not math.isfinite(exp):
            raise ValueError(exp)
        return datetime.fromtimestamp(exp, UTC)
    except (OverflowError, ValueError, OSError):
        raise _refused(
            f"its expiry (exp {str(exp)[:30]}) is out of range: seconds since 1970 before the year 10000"
        ) from None


def _header(token: str) -> dict[str, Any]:
    import base64

    segment = token.split(".")[0]
    raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    header = json.loads(raw)
    if not isinstance(header, dict):
        raise ValueError("its header is not a JSON object")
    return dict(header)  # pyright: ignore[reportUnknownArgumentType]


def _has_kid(keys: Any, kid: object) -> bool:
    return any(k.kid == kid for k in keys.keys)


def _read_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise skift.Invalid(
            f"--oidc-jwks {path}: {exc}", next="Give a readable JSON Web Key Set file."
        ) from None
    if not isinstance(data, dict):
        raise skift.Invalid(f"--oidc-jwks {path} is not a JSON object", next='Use {"keys": [...]}.')
    return dict(data)  # pyright: ignore[reportUnknownArgumentType]


def _keyset(data: dict[str, Any], where: str) -> Any:
    from joserfc.errors import JoseError
    from joserfc.jwk import KeySet

    try:
        keys = KeySet.import_key_set(data)  # pyright: ignore[reportArgumentType]
    except (JoseError, ValueError, KeyError, TypeError) as exc:
        raise skift.Invalid(
            f"the key set from {where} is not a JWKS: {exc}",
            next='A JWKS is {"keys": [{"kty": ..., "kid": ...}, ...]} with public keys.',
        ) from None
    if not keys.keys:
        raise skift.Invalid(f"the key set from {where} holds no keys", next="Check the JWKS.")
    return keys


async def _fetch_json(url: str) -> dict[str, Any]:
    import httpx

    try:
        async with httpx.AsyncClient(timeout=10.0, follow_redirects=False) as client:
            response = await client.get(url, headers={"accept": "application/json"})
            response.raise_for_status()
            data = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise skift.Unavailable(
            f"cannot read {url}: {exc}",
            next="Check the issuer URL (or the server's key set file) and that this host reaches it.",
        ) from None
    if not isinstance(data, dict):
        raise skift.Unavailable(f"{url} did not answer a JSON object", next="Check the URL.")
    return dict(data)  # pyright: ignore[reportUnknownArgumentType]
