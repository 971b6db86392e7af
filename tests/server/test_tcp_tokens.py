"""TCP names the caller by bearer token: right token in, wrong, missing and revoked tokens out."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from typing import TYPE_CHECKING

import pytest
from serverproc import free_port

import skift
import skift_server

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import Serve


async def _setup(owner: skift_server.RemoteSkift) -> str:
    """A project with one node and a token for the agent ci-bot; returns the token."""
    await owner.create_project("Tok")
    await owner.patch("tok", [skift.CreateNode(title="Build it")])
    await owner.add_principal("ci-bot", "agent")
    token = await owner.create_token("ci-bot")
    assert token.token.startswith("skt_")
    assert token.principal == "ci-bot"
    return token.token


async def test_bearer_token_over_tcp(serve: Serve) -> None:
    """A valid token acts as its principal; no token, a wrong one, and a revoked one are
    UNAUTHENTICATED with a next move, and the revoked token stops working at once."""
    port = free_port()
    server = await serve("--memory", "--listen", f"127.0.0.1:{port}")
    url = f"http://127.0.0.1:{port}"
    async with skift_server.connect(server.url) as owner:
        secret = await _setup(owner)

        async with skift_server.connect(url, token=secret) as bot:
            claim = await bot.claim_next()
            assert (claim.node.ref, claim.lease.holder) == ("tok#1", "ci-bot")
            (event,) = [e for e in await owner.events() if e.op == "claim"]
            assert (event.principal, event.identity_scheme) == ("ci-bot", "token")

        for token in ("", "skt_not-a-real-token", secret + "x"):
            async with skift_server.connect(url, token=token, attempts=1) as stranger:
                with pytest.raises(skift.Unauthenticated) as ei:
                    await stranger.ready()
                assert ei.value.next

        (tid,) = [
            i.id
            for p in await owner.list_principals()
            if p.name == "ci-bot"
            for i in p.identities
            if i.scheme == "token"
        ]
        async with skift_server.connect(url, token=secret) as bot:
            await bot.ready()
            await owner.revoke_token(tid)
            with pytest.raises(skift.Unauthenticated):
                await bot.ready()
        (revoked,) = [i for p in await owner.list_principals() for i in p.identities if i.id == tid]
        assert revoked.revoked


async def test_test_hooks_are_refused_without_the_flag(serve: Serve) -> None:
    """Acting as another principal is a test hook: a production server refuses the header."""
    server = await serve("--memory")
    async with skift_server.connect(server.url, principal=skift.User("mallory")) as sk:
        with pytest.raises(skift.Unauthenticated) as ei:
            await sk.list_projects()
    assert "x-skift-act-as" in ei.value.message


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")
async def test_tls(serve: Serve, tmp_path: Path) -> None:
    """With a certificate and key, TCP is TLS: a client trusting the certificate gets in
    with its token; one that does not trust it cannot connect."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(  # noqa: ASYNC221 (a one-off certificate before the server starts)
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"),
            *("-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    port = free_port()
    server = await serve(
        "--memory", "--listen", f"127.0.0.1:{port}", "--tls-cert", str(cert), "--tls-key", str(key)
    )
    async with skift_server.connect(server.url) as owner:
        secret = await _setup(owner)
    trusting = ssl.create_default_context(cafile=str(cert))
    async with skift_server.connect(
        f"https://127.0.0.1:{port}", token=secret, ssl_context=trusting
    ) as bot:
        assert [n.ref for n in (await bot.ready()).nodes] == ["tok#1"]
    async with skift_server.connect(f"https://127.0.0.1:{port}", token=secret, attempts=1) as bot:
        with pytest.raises(skift.Unavailable):
            await bot.ready()


async def test_a_role_changed_between_calls_is_seen_and_the_call_answered(serve: Serve) -> None:
    """The reads agents call most start from the principal a token named on its last call
    (issue 31); granted the admin role since, the call is authenticated again and answered
    as the principal is now."""
    port = free_port()
    server = await serve("--memory", "--listen", f"127.0.0.1:{port}")
    url = f"http://127.0.0.1:{port}"
    async with skift_server.connect(server.url) as owner:
        await owner.create_project("Roles")
        await owner.add_principal("ada", "user")
        secret = (await owner.create_token("ada")).token
        async with skift_server.connect(url, token=secret) as ada:
            await ada.list_projects()
            await ada.list_projects()  # remembered
            await owner.grant_admin("ada", reason="on call")
            assert [p.slug for p in await ada.list_projects()] == ["roles"]
            assert (await ada.whoami()).admin
