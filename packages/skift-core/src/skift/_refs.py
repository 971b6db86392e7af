"""References: how people and agents name nodes and projects.

A node is ``slug#N``, bare ``#N`` or ``N`` inside the current project,
``org/slug#N`` fully qualified, or its ULID. A project is its slug, a retired
slug, or its ULID. The ULID stays internal; the API accepts either form.
"""

from __future__ import annotations

import functools
import os
import re
import threading
import time
import unicodedata
from typing import Final
from uuid import UUID

import attrs

from ._errors import Invalid

SLUG_MAX = 100
_ULID_RE = re.compile(r"^[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{26}$")
_NODE_RE = re.compile(r"^(?:(?:(?P<org>[^/#\s]+)/)?(?P<slug>[^/#\s]+))?#(?P<num>\d+)$")
_SLUG_RE = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,98}[a-z0-9])?$")


_last_id = 0
_id_lock = threading.Lock()
_random = bytearray()
_RANDOM_BATCH: Final = 10 * 512
"""Random bytes read from the OS at once for ids (an import mints hundreds of thousands)."""


def new_id() -> UUID:
    """A fresh ULID, as the UUID the stores keep: 48 bits of Unix milliseconds, then 80
    random bits.

    Monotonic within this process: two ids minted in the same millisecond still
    sort in the order they were made, so id order is creation order.
    """
    global _last_id
    ms = time.time_ns() // 1_000_000
    with _id_lock:
        if not _random:
            _random.extend(os.urandom(_RANDOM_BATCH))
        value = ms << 80 | int.from_bytes(_random[-10:], "big")
        del _random[-10:]
        if value <= _last_id:
            value = _last_id + 1
        _last_id = value
    return UUID(int=value)


# Crockford base32, the ULID alphabet; a ULID's 26 characters are 130 bits (the top two
# zero) read as 13 groups of 10, each group two characters of _PAIRS. Written out here
# rather than through ULID objects because every request formats dozens of ids.
_B32 = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_PAIRS = tuple(a + b for a in _B32 for b in _B32)
_SHIFTS = tuple(range(120, -1, -10))
_DIGITS = {c: i for i, c in enumerate(_B32)}


@functools.lru_cache(maxsize=4096)
def ulid_str(value: UUID) -> str:
    """The 26-character ULID of an id (the same ids recur in every request: cached)."""
    n = value.int
    return "".join([_PAIRS[(n >> s) & 1023] for s in _SHIFTS])


def parse_ulid(text: str) -> UUID | None:
    """The id a 26-character ULID names, or None if ``text`` is not one."""
    if not _ULID_RE.match(text):
        return None
    n = 0
    for c in text.upper():
        n = (n << 5) | _DIGITS[c]
    if n >> 128:  # above 7ZZZZZZZZZZZZZZZZZZZZZZZZZ: more than 128 bits
        return None
    return UUID(int=n)


def slugify(title: str) -> str:
    """A project slug derived from a title: lowercase ASCII, dashes, at most 100 characters."""
    folded = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", folded.lower()).strip("-")
    slug = slug[:SLUG_MAX].rstrip("-")
    return slug or "project"


def check_slug(slug: str) -> str:
    """Normalize an explicitly given slug, refusing what cannot be one."""
    norm = slug.strip().lower()
    if not _SLUG_RE.match(norm) or "--" in norm:
        raise Invalid(
            f"{slug!r} is not a usable slug",
            next="Use 1 to 100 lowercase letters, digits and single dashes, e.g. oauth-spike.",
            field="slug",
        )
    return norm


def disambiguate(base: str, taken: set[str]) -> str:
    """``base``, or ``base-2``, ``base-3``… whichever is first free, within 100 characters."""
    if base not in taken:
        return base
    n = 2
    while True:
        suffix = f"-{n}"
        candidate = base[: SLUG_MAX - len(suffix)].rstrip("-") + suffix
        if candidate not in taken:
            return candidate
        n += 1


@attrs.frozen
class NodeRef:
    """A parsed node reference. Exactly one of ``id`` or ``number`` is set."""

    id: UUID | None = None
    number: int | None = None
    project: str | None = None
    org: str | None = None


def parse_node_ref(text: str) -> NodeRef:
    """Parse ``slug#N``, ``#N``, ``N``, ``org/slug#N`` or a ULID."""
    raw = text.strip()
    if raw.isdigit():
        return NodeRef(number=int(raw))
    ident = parse_ulid(raw)
    if ident is not None:
        return NodeRef(id=ident)
    m = _NODE_RE.match(raw)
    if m is None:
        raise Invalid(
            f"{text!r} is not a node reference",
            next="Write slug#N (oauth-spike#7), #N inside the current project, org/slug#N, or a node id.",
            field="ref",
        )
    return NodeRef(
        number=int(m.group("num")),
        project=m.group("slug").lower() if m.group("slug") else None,
        org=m.group("org"),
    )


def format_ref(slug: str, number: int) -> str:
    return f"{slug}#{number}"
