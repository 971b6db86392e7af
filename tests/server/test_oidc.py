"""OIDC over TCP, through a real ``skift serve`` process: a JWT from the configured issuer,
signed with its key, names the principal holding the ``oidc`` identity ``iss|sub``.

The issuer's key is generated here and its public half written as a JWKS file
(or served from a local HTTP server); no network is used.
"""

from __future__ import annotations

import asyncio
import base64
import http.server
import json
import threading
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey
from serverproc import free_port

import skift
import skift_server

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from conftest import Serve

ISSUER = "https://id.example.test"
AUDIENCE = "skift-test"


@pytest.fixture(scope="module")
def key() -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": "test-1"})


def mint(key: RSAKey, sub: str = "user-123", **claims: Any) -> str:
    now = int(time.time())
    body: dict[str, Any] = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": sub,
        "iat": now,
        "exp": now + 300,
        **claims,
    }
    return jwt.encode({"alg": "RS256", "kid": key.kid}, body, key)


def jwks(key: RSAKey) -> dict[str, Any]:
    return {"keys": [key.as_dict(private=False)]}


async def _server(serve: Serve, tmp_path: Path, key: RSAKey, *extra: str) -> tuple[Any, str]:
    keys = tmp_path / "jwks.json"
    keys.write_text(json.dumps(jwks(key)))
    port = free_port()
    server = await serve(
        "--memory",
        "--listen",
        f"127.0.0.1:{port}",
        "--oidc-issuer",
        ISSUER,
        "--oidc-audience",
        AUDIENCE,
        "--oidc-jwks",
        str(keys),
        *extra,
    )
    return server, f"http://127.0.0.1:{port}"


async def test_an_oidc_token_acts_as_the_principal_holding_its_identity(
    serve: Serve, tmp_path: Path, key: RSAKey
) -> None:
    """iss|sub attached to dora: her JWT acts as dora (events say oidc); skift's own tokens still
    work beside it; an identity attached to nobody is refused naming how to attach it."""
    server, url = await _server(serve, tmp_path, key)
    async with skift_server.connect(server.url) as owner:
        await owner.create_project("Remote")
        await owner.add_principal("dora", "user")
        await owner.attach_identity("dora", "oidc", f"{ISSUER}|user-123")
        await owner.add_principal("ci-bot", "agent")
        secret = (await owner.create_token("ci-bot")).token

        async with skift_server.connect(url, token=mint(key)) as dora:
            await dora.patch("remote", [skift.CreateNode(title="Filed from afar")])
        (event,) = [e for e in await owner.events() if e.op == "create_node"]
        assert (event.principal, event.identity_scheme) == ("dora", "oidc")

        async with skift_server.connect(url, token=secret) as bot:
            assert [n.ref for n in (await bot.ready()).nodes] == ["remote#1"]

        async with skift_server.connect(url, token=mint(key, sub="stranger"), attempts=1) as sk:
            with pytest.raises(skift.Unauthenticated) as ei:
                await sk.ready()
        assert f"{ISSUER}|stranger" in ei.value.message
        assert ei.value.move is not None
        assert ei.value.move["do"] == "invite_identity"
        assert "invite" in ei.value.next


@pytest.mark.parametrize(
    ("what", "claims", "said"),
    [
        ("expired", {"exp": int(time.time()) - 3600, "iat": int(time.time()) - 7200}, "expired"),
        ("another audience", {"aud": "someone-else"}, "aud"),
        ("another issuer", {"iss": "https://evil.example"}, "iss"),
        ("no expiry", {"exp": None}, "exp"),
        ("a huge expiry", {"exp": 2**63}, "expiry"),  # OverflowError: INTERNAL before
        ("a huger expiry", {"exp": 10**400}, "expiry"),
        ("a float expiry past year 9999", {"exp": 1e300}, "expiry"),
    ],
)
async def test_tokens_that_must_not_pass(
    serve: Serve, tmp_path: Path, key: RSAKey, what: str, claims: dict[str, Any], said: str
) -> None:
    """Expired, for another audience or issuer, without an expiry: Unauthenticated, naming why."""
    server, url = await _server(serve, tmp_path, key)
    async with skift_server.connect(server.url) as owner:
        await owner.add_principal("dora", "user")
        await owner.attach_identity("dora", "oidc", f"{ISSUER}|user-123")
    body = {k: v for k, v in claims.items() if v is not None}
    token = mint(key, **body)
    if claims.get("exp", 0) is None:
        now = int(time.time())
        token = jwt.encode(
            {"alg": "RS256", "kid": key.kid},
            {"iss": ISSUER, "aud": AUDIENCE, "sub": "user-123", "iat": now},
            key,
        )
    async with skift_server.connect(url, token=token, attempts=1) as sk:
        with pytest.raises(skift.Unauthenticated) as ei:
            await sk.ready()
    assert said in ei.value.message, what
    assert ei.value.next


async def test_a_token_signed_by_another_key_is_refused(
    serve: Serve, tmp_path: Path, key: RSAKey
) -> None:
    server, url = await _server(serve, tmp_path, key)
    async with skift_server.connect(server.url) as owner:
        await owner.add_principal("dora", "user")
        await owner.attach_identity("dora", "oidc", f"{ISSUER}|user-123")
    forger = RSAKey.generate_key(2048, parameters={"kid": key.kid})
    async with skift_server.connect(url, token=mint(forger), attempts=1) as sk:
        with pytest.raises(skift.Unauthenticated, match="signature"):
            await sk.ready()


async def test_expiry_ends_a_waiting_claim(serve: Serve, tmp_path: Path, key: RSAKey) -> None:
    """A ClaimNext waiting when its token expires ends Unauthenticated instead of claiming
    work that arrives after the expiry."""
    server, url = await _server(serve, tmp_path, key)
    async with skift_server.connect(server.url) as owner:
        await owner.create_project("Late")
        await owner.add_principal("runner", "agent")
        await owner.attach_identity("runner", "oidc", f"{ISSUER}|runner")
        token = mint(key, sub="runner", exp=int(time.time()) + 3)
        async with skift_server.connect(url, token=token, attempts=1, timeout=60) as runner:
            waiting = asyncio.create_task(runner.claim_next(wait=timedelta(seconds=25)))
            await asyncio.sleep(max(0.0, token_expiry(token) + 1 - time.time()))
            await owner.patch("late", [skift.CreateNode(title="Arrives after the expiry")])
            with pytest.raises(skift.Unauthenticated, match="expired"):
                await waiting
        assert (await owner.get("late#1")).ready


def token_expiry(token: str) -> float:
    seg = token.split(".")[1]
    return float(json.loads(base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4)))["exp"])


@pytest.fixture
def jwks_url(key: RSAKey) -> Iterator[str]:
    """A local HTTP server answering the JWKS (and the discovery document) on loopback."""
    state: dict[str, Any] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            base = state["base"]
            if self.path == "/.well-known/openid-configuration":
                body = {"issuer": base, "jwks_uri": f"{base}/jwks"}
            elif self.path == "/jwks":
                body = jwks(key)
            else:
                self.send_error(404)
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state["base"] = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state["base"]
    finally:
        httpd.shutdown()
        httpd.server_close()


async def test_keys_from_a_jwks_url(serve: Serve, key: RSAKey, jwks_url: str) -> None:
    """--oidc-jwks URL: the key set is fetched from the URL."""
    port = free_port()
    server = await serve(
        "--memory",
        "--listen",
        f"127.0.0.1:{port}",
        "--oidc-issuer",
        ISSUER,
        "--oidc-audience",
        AUDIENCE,
        "--oidc-jwks",
        f"{jwks_url}/jwks",
    )
    async with skift_server.connect(server.url) as owner:
        await owner.add_principal("dora", "user")
        await owner.attach_identity("dora", "oidc", f"{ISSUER}|user-123")
    async with skift_server.connect(f"http://127.0.0.1:{port}", token=mint(key)) as dora:
        assert await dora.list_projects() == []
