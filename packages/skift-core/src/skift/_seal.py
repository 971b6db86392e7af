"""Opaque event cursors: a cursor's position sealed with a server key and bound to one organization.

The stream's position is commit-ordered (PostgreSQL: a transaction id), so a
readable cursor would let one tenant watch the whole database's write rate,
and a cursor copied from another organization would name a position there.
A cursor handed to a client is therefore ``v2.`` and the base64url of a
96-bit nonce and the AES-256-GCM encryption of the position, with the
organization's id as associated data: the client learns nothing from it, and
a cursor minted for another organization (or tampered with) fails
authentication and is refused like a malformed one. The nonce is an HMAC of
the organization and the position under the key (a synthetic IV), so one
position is always one string (a webhook delivery's ``after`` is the previous
one's ``through``) and equal strings reveal only what equal positions would.

The key is the store's ``secret("event-cursor")``: made once and kept in the
database (PostgreSQL) so every server over it, and a restarted one, read the
same cursors.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from typing import TYPE_CHECKING

from ._errors import Invalid

if TYPE_CHECKING:
    from uuid import UUID

    from ._store import Store

PREFIX = "v2."
SECRET_NAME = "event-cursor"
_CONTEXT = b"skift event cursor v2|"


class CursorSeal:
    """Seals and opens the cursors of one organization with one key."""

    def __init__(self, key: bytes, org_id: UUID) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self._aead = AESGCM(key)
        self._mac_key = hmac.new(key, b"skift cursor nonce", hashlib.sha256).digest()
        self._aad = _CONTEXT + org_id.bytes

    def seal(self, plain: str) -> str:
        nonce = hmac.new(self._mac_key, self._aad + plain.encode(), hashlib.sha256).digest()[:12]
        sealed = self._aead.encrypt(nonce, plain.encode(), self._aad)
        return PREFIX + base64.urlsafe_b64encode(nonce + sealed).decode().rstrip("=")

    def open(self, token: str, bad: Invalid) -> str:
        """The position inside ``token``; ``bad`` (raised) when it is not one of ours."""
        from cryptography.exceptions import InvalidTag

        if not token.startswith(PREFIX):
            raise bad
        body = token[len(PREFIX) :]
        try:
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        except (binascii.Error, ValueError):
            raise bad from None
        if len(raw) < 12 + 16:
            raise bad
        try:
            return self._aead.decrypt(raw[:12], raw[12:], self._aad).decode()
        except (InvalidTag, UnicodeDecodeError):
            raise bad from None


_SEALS: dict[tuple[bytes, UUID], CursorSeal] = {}
_SEALS_AT_MOST = 4096


def seal_for(key: bytes, org_id: UUID) -> CursorSeal:
    """The seal of ``org_id``'s cursors under ``key``, made once: every read of the change
    stream seals cursors, and making a seal derives its MAC key and sets up the cipher."""
    found = _SEALS.get((key, org_id))
    if found is None:
        if len(_SEALS) >= _SEALS_AT_MOST:
            _SEALS.clear()
        found = _SEALS[key, org_id] = CursorSeal(key, org_id)
    return found


def load_cursor_cipher() -> None:
    """Import the cipher the seals use now. A server calls it as it starts (``skift serve``):
    made on first use, the import (about 0.1 s) held the server's event loop, and every
    caller's call with it, under the first WatchEvents after a start."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    del InvalidTag, AESGCM


def new_key() -> bytes:
    """A fresh 256-bit key."""
    return secrets.token_bytes(32)


async def cursor_seal(store: Store, org_id: UUID) -> CursorSeal:
    """The seal of an organization's cursors, from outside a transaction (a webhook worker)."""
    return seal_for(await store.secret(SECRET_NAME), org_id)
