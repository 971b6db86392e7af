"""Binding an OIDC identity through a real ``skift serve --oidc-issuer`` (issue 28, point 2), over
PostgreSQL, with the issuer's key made here (its public half a JWKS file; no network).

The server's owner creates two organizations, acme (wile its admin) and evil (mallory its admin),
each reached over TCP with its admin's token. dora is acme's person; her identity is
``ISSUER|dora-sub``. Before issue 28 mallory attached dora's identity to a principal of evil:
acme's own attempt was then a Conflict, and dora's genuine token signed her in to evil. And
before invitations had codes, evil inviting dora's identity first got her at her first sign-in:
now the sign-in presents the code of the invitation she means (``x-skift-invite``, from
``connect(invite=)`` or ``SKIFT_INVITE``), and nothing binds without one.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey
from serverproc import free_port

import skift
import skift_server

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import Serve

ISSUER = "https://id.example.test"
AUDIENCE = "skift-test"
DORA = f"{ISSUER}|dora-sub"


@pytest.fixture(scope="module")
def key() -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": "binding-1"})


def mint(key: RSAKey, sub: str) -> str:
    now = int(time.time())
    body: dict[str, Any] = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": sub,
        "iat": now,
        "exp": now + 300,
    }
    return jwt.encode({"alg": "RS256", "kid": key.kid}, body, key)


async def _server(serve: Serve, tmp_path: Path, key: RSAKey, dsn: str) -> tuple[Any, str]:
    keys = tmp_path / "jwks.json"
    keys.write_text(json.dumps({"keys": [key.as_dict(private=False)]}))
    port = free_port()
    server = await serve(
        "--dsn", dsn, "--listen", f"127.0.0.1:{port}",
        "--oidc-issuer", ISSUER, "--oidc-audience", AUDIENCE, "--oidc-jwks", str(keys),
    )  # fmt: skip
    return server, f"http://127.0.0.1:{port}"


async def test_an_invitation_binds_at_the_persons_sign_in_and_another_org_gets_nothing(
    serve: Serve, tmp_path: Path, key: RSAKey, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, url = await _server(serve, tmp_path, key, pg_dsn)
    async with skift_server.connect(server.url) as owner:
        acme = await owner.create_org("acme", admin="wile")
        evil = await owner.create_org("evil", admin="mallory")
    async with (
        skift_server.connect(url, token=acme.token) as wile,
        skift_server.connect(url, token=evil.token) as mallory,
    ):
        await wile.add_principal("dora", "user")
        await mallory.add_principal("decoy", "user")
        # a tenant's admin binds nothing directly (the attack of point 2)
        with pytest.raises(skift.Refused, match="only an administrator of the server"):
            await mallory.attach_identity("decoy", "oidc", DORA)
        # before any invitation dora's genuine token reaches nobody
        async with skift_server.connect(url, token=mint(key, "dora-sub"), attempts=1) as dora:
            with pytest.raises(skift.Unauthenticated, match="not attached"):
                await dora.list_projects()
        # evil invites dora's identity first; acme invites it too, and gives dora the code
        early = await mallory.invite_identity("decoy", "oidc", DORA)
        got = await wile.invite_identity("dora", "oidc", DORA)
        assert (got.principal, got.value) == ("dora", DORA)
        assert got.code.startswith("skinv_")
        assert got.code != early.code
        # a sign-in without the code binds nothing (before: the first invitation won)
        async with skift_server.connect(url, token=mint(key, "dora-sub"), attempts=1) as dora:
            with pytest.raises(skift.Unauthenticated, match="invited but not yet bound") as ei:
                await dora.list_projects()
        for word in ("acme", "evil", "wile", "mallory", "decoy"):
            assert word not in ei.value.message
        async with skift_server.connect(url, token=mint(key, "dora-sub"), invite=got.code) as dora:
            await dora.create_project("Dora's")
        assert [p.slug for p in await wile.list_projects()] == ["dora-s"]
        (bound,) = [e for e in await wile.events() if e.op == "bind_identity"]
        assert (bound.principal, bound.identity_scheme) == ("dora", "oidc")

        # evil invites the identity acme holds: the same answer as for a free one, no name of
        # dora or acme, and it binds nothing
        held = await mallory.invite_identity("decoy", "oidc", DORA)
        free = await mallory.invite_identity("decoy", "oidc", f"{ISSUER}|nobody-yet")
        assert (held.principal, held.scheme, held.invited_by) == (
            free.principal,
            free.scheme,
            free.invited_by,
        )
        for word in ("dora", "acme", "wile"):
            assert word not in repr(held).replace(DORA, "")
        async with skift_server.connect(url, token=mint(key, "dora-sub")) as dora:
            assert [p.slug for p in await dora.list_projects()] == ["dora-s"]
        assert await mallory.list_projects() == []

        # evil's early invitation is still pending and binds nothing; its admin cancels it
        assert [i.value for i in await mallory.invites()] == [DORA, f"{ISSUER}|nobody-yet"]
        gone = await mallory.cancel_invite(DORA)
        assert (gone.principal, gone.code) == ("decoy", "")
        async with skift_server.connect(
            url, token=mint(key, "dora-sub"), invite=early.code
        ) as dora:  # a bound identity signs in as its holder, whatever code comes along
            assert [p.slug for p in await dora.list_projects()] == ["dora-s"]

        # two organizations invite one free identity: the presented code picks, naming neither
        await wile.invite_identity("dora", "oidc", f"{ISSUER}|contested")
        theirs = await mallory.invite_identity("decoy", "oidc", f"{ISSUER}|contested")
        monkeypatch.setenv("SKIFT_INVITE", theirs.code)  # as the CLI sends it
        async with skift_server.connect(url, token=mint(key, "contested")) as who:
            assert (await who.whoami()).principal == "decoy"
        assert [i.value for i in await wile.invites()] == [f"{ISSUER}|contested"]
