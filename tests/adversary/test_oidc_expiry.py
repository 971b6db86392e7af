"""A huge ``exp`` in an OIDC token (issue 29's row): a signed token whose ``exp`` is 2^63
was INTERNAL (OverflowError); it is UNAUTHENTICATED naming the expiry, every time, while
the harness's bystander reads. The module's server trusts an issuer whose keys are made
here (``SERVE_FLAGS``: ``--oidc-issuer``, ``--oidc-audience``, ``--oidc-jwks``)."""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from adversary_harness import Target, assert_unharmed, while_watched
from joserfc import jwt
from joserfc.jwk import RSAKey

import skift
import skift_server

ISSUER, AUDIENCE = "https://id.example.test", "skift-adversary"
KEY = RSAKey.generate_key(2048, parameters={"kid": "adv-1"})
_KEYS = Path(tempfile.mkdtemp(prefix="skift-adv-oidc-")) / "jwks.json"
atexit.register(shutil.rmtree, _KEYS.parent, ignore_errors=True)
_KEYS.write_text(json.dumps({"keys": [KEY.as_dict(private=False)]}))

SERVE_FLAGS = ("--oidc-issuer", ISSUER, "--oidc-audience", AUDIENCE, "--oidc-jwks", str(_KEYS))


async def test_a_huge_oidc_expiry_is_unauthenticated(target: Target) -> None:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "mallory", "iat": now}

    async def attack() -> None:
        for exp in (2**63, 10**400, 1e300):
            token = jwt.encode({"alg": "RS256", "kid": KEY.kid}, {**claims, "exp": exp}, KEY)
            async with skift_server.connect(target.grpc_url, token=token, attempts=1) as sk:
                for _ in range(5):
                    with pytest.raises(skift.Unauthenticated, match="expiry"):
                        await sk.list_projects()

    _, stats = await while_watched(target, attack)
    assert_unharmed(stats)
