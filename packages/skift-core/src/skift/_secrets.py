"""How credentials are kept: the digest of a secret (bearer tokens, board sign-in codes)."""

from __future__ import annotations

import hashlib


def token_digest(secret: str) -> str:
    """How a bearer token is stored and looked up: ``sha256:<lowercase hex>`` of the secret."""
    return "sha256:" + hashlib.sha256(secret.encode()).hexdigest()
