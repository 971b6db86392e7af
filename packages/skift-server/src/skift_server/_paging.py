"""Pages on the wire: AIP-158 page tokens, and the byte budget that keeps every response
under the smallest default gRPC client limit (4 MiB).

A page token is opaque to clients: URL-safe base64 of a small JSON document
naming the RPC that made it, the digest of the request's other arguments, and
where the list goes on: the core's keyset position (``skift.Page``), but for
ListEvents (the oldest event sent) and Ready (the engine's page and how many of its
nodes were sent). A token handed to another RPC,
made for other arguments, or edited is INVALID_ARGUMENT naming ``page_token``.

Every page is cut by count (``page_size``, checked by the engine's page-size
rule) and by bytes: items are taken while their encoded size stays within
:data:`RESPONSE_BUDGET`; the rest is the next page. A page always carries at
least one item, and no single item can reach the budget (skift's size limits
keep a node, comment, event or artifact far below it).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Sequence
from typing import Any, Final, TypeVar, cast

import attrs
import betterproto2

import skift

from ._convert import page_size as page_size  # the clients' import, here since before
from ._wirecodec import Encoded

T = TypeVar("T", bound=betterproto2.Message)

CLIENT_LIMIT: Final = 4 * 1024 * 1024
"""The smallest default receive limit of the common gRPC clients."""

RESPONSE_BUDGET: Final = CLIENT_LIMIT - 256 * 1024
"""What a page's items may take: the limit less room for the response's other fields."""


@attrs.frozen
class Token:
    """Where a page starts: the core window (``core``) and how much of it was sent.

    A token carries no page size: the request's ``page_size`` applies to every page
    (AIP-158). It carries the digest of the request's other fields (its filter), so a
    token used with another filter is refused rather than read as a position in a
    different list.
    """

    rpc: str
    core: str | None = None
    offset: int = 0
    filter: str | None = None


def filter_digest(request: Any) -> str:
    """The digest of a list request's fields other than ``page_token`` and ``page_size``."""
    token, size = request.page_token, getattr(request, "page_size", None)
    request.page_token = ""
    if size is not None:
        request.page_size = 0
    try:
        raw = bytes(request)
    finally:
        request.page_token = token
        if size is not None:
            request.page_size = size
    return hashlib.sha256(type(request).__name__.encode() + raw).hexdigest()[:16]


def encode(token: Token, request: Any = None) -> str:
    """The token as text; with ``request``, bound to its filter (see :class:`Token`)."""
    digest = filter_digest(request) if request is not None else token.filter
    doc = {"m": token.rpc, "c": token.core, "o": token.offset, "f": digest}
    raw = json.dumps(doc, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(rpc: str, request: Any) -> Token | None:
    """The token of ``rpc`` in ``request.page_token`` (None for the first page); a token of
    another RPC, an edited one, or one made for another filter is INVALID_ARGUMENT."""
    value: str = request.page_token
    if not value:
        return None
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        doc: Any = json.loads(raw)
        digest = doc.get("f")
        token = Token(
            rpc=str(doc["m"]),
            core=None if doc["c"] is None else str(doc["c"]),
            offset=int(doc["o"]),
            filter=None if digest is None else str(digest),
        )
    except (binascii.Error, ValueError, KeyError, TypeError, AttributeError):
        token = None
    if token is None or token.rpc != rpc or token.offset < 0:
        raise skift.Invalid(
            f"page_token is not a page token of {rpc}",
            next="Pass next_page_token exactly as the previous page of the same call returned it.",
            field="page_token",
        )
    if token.filter is not None and token.filter != filter_digest(request):
        raise skift.Invalid(
            f"page_token was made for a {rpc} request with other arguments",
            next="Send the same arguments as the first page with its next_page_token (only "
            "page_size may change), or leave page_token out to start over.",
            field="page_token",
        )
    return token


def next_token(page: skift.Page[Any], sent: int, request: Any) -> str:
    """The next_page_token after the first ``sent`` items of a core page (keyset: the
    core's position after the last item sent; empty at the list's end)."""
    core = page.after(sent)
    if core is None:
        return ""
    rpc = type(request).__name__.removesuffix("Request")
    return encode(Token(rpc, core=core), request)


def core_page(page: skift.Page[Any], message: type[T], request: Any) -> tuple[list[T], str]:
    """A core keyset page on the wire: its items as ``message`` (encoded once), as many as
    fit the byte budget, and the next_page_token after the last one sent."""
    from ._convert_wire import encoded as views

    items = cast(list[T], views(message, page))
    k = fit(items)
    return items[:k], next_token(page, k, request)


def size_of(item: betterproto2.Message | Encoded) -> int:
    """The bytes ``item`` takes inside its response (the tag and length prefix included)."""
    n = len(item.data if isinstance(item, Encoded) else bytes(item))  # a stand-in: its bytes
    return n + 1 + max(1, (n.bit_length() + 6) // 7)


def fit(items: Sequence[betterproto2.Message | Encoded], budget: int = RESPONSE_BUDGET) -> int:
    """How many of ``items``, from the first, fit in ``budget`` bytes (at least one)."""
    used = 0
    for i, item in enumerate(items):
        used += size_of(item)
        if used > budget and i > 0:
            return i
    return len(items)


def fit_from_end(items: Sequence[betterproto2.Message], budget: int = RESPONSE_BUDGET) -> int:
    """How many of ``items``, from the last, fit in ``budget`` bytes (at least one)."""
    return fit(list(reversed(items)), budget)


def cut_inputs(
    inputs: Sequence[Any], budget: int = RESPONSE_BUDGET, start: int = 0
) -> tuple[list[Any], int | None]:
    """The ``v1.Input`` messages from ``start`` that fit in ``budget`` bytes, and where the
    next page starts (None when all were taken).

    An input that does not fit goes to the next page, unless it is the first of this
    one: then it is sent with the artifacts that fit and ``artifacts_cut`` set (the
    client reads the rest with ListArtifacts), so every page makes progress. Its
    result alone is far below the budget (skift's result limit is 256 KiB).
    """
    out: list[Any] = []
    used = 0
    for i in range(start, len(inputs)):
        item = inputs[i]
        need = size_of(item)
        if used + need <= budget:
            out.append(item)
            used += need
            continue
        if out:
            return out, i
        bare = type(item)(
            ref=item.ref,
            title=item.title,
            result=item.result,
            author=item.author,
            author_kind=item.author_kind,
            artifacts_cut=True,
        )
        room = budget - size_of(bare) - 64
        bare.artifacts = list(item.artifacts[: fit(item.artifacts, room)]) if room > 0 else []
        if bare.artifacts and sum(size_of(a) for a in bare.artifacts) > room:
            bare.artifacts = []  # not even the first artifact fits beside the result
        out.append(bare)
        return out, (i + 1 if i + 1 < len(inputs) else None)
    return out, None
