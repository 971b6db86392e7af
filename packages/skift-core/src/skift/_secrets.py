"""How credentials are kept: the digest of a secret (bearer tokens, board sign-in codes)."""

from __future__ import annotations

import hashlib


def token_digest(secret: str) -> str:
    """How a bearer token is stored and looked up: ``sha256:<lowercase hex>`` of the secret."""
    return "sha256:" + hashlib.sha256(secret.encode()).hexdigest()


def redact_dsn(dsn: str) -> str:
    """A PostgreSQL DSN without its password (URL or ``key=value`` form), to show who asks."""
    import re
    from urllib.parse import urlsplit, urlunsplit

    if "://" in dsn:
        parts = urlsplit(dsn)
        if parts.password is None:
            return dsn
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        user = f"{parts.username}@" if parts.username else ""
        return urlunsplit(parts._replace(netloc=f"{user}{host}"))
    return re.sub(r"(?i)\bpassword\s*=\s*('[^']*'|\S+)", "password=…", dsn)
