"""Large answers are encoded on a worker thread, never on the event loop.

Encoding a reply is pure Python (``_wirecodec``): a ListEvents page of big
events, a Ready page near its byte budget, a GetBlob of 3 MiB or an export's
chunks take milliseconds each, and on the event loop every other caller waits
them out. :func:`encode_off_loop` (the mirror of ``_wire.decode_off_loop``)
estimates a reply's size from its fields and a sample of each list
(:func:`weight`, microseconds) for the RPCs whose answers may be large
(:data:`LARGE_REPLIES`: pages, streams, blobs, nodes, trees; a claim, a
completion or a heartbeat is never weighed, so the hot path pays nothing); over :data:`INLINE_BYTES` it encodes the reply
on one of :data:`ENCODERS` worker threads (more wait their turn: the work is
bounded by the threads, each reply by the server's page and message limits)
and hands the codec the bytes as an ``Encoded`` (``_wirecodec``'s stand-in for a
message already encoded), which it sends as they are.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any, Final

import betterproto2

import skift

from ._wirecodec import Encoded

INLINE_BYTES: Final = 64 * 1024
"""Replies estimated up to this size are encoded on the event loop (well under a
millisecond)."""

ENCODERS: Final = 2
"""Worker threads encoding larger replies; more wait their turn."""

LARGE_REPLIES: Final = frozenset(
    rpc
    for rpc, op in skift.OPERATIONS_BY_RPC.items()
    if op.page_key is not None or op.stream is not skift.RpcStream.UNARY
) | {"GetBlob", "GetNode", "Explain", "Patch", "WatchEvents", "GetPolicy", "GetProjectUsage"}
"""The RPCs whose answers may be larger than :data:`INLINE_BYTES`: paged lists, streams,
and answers carrying bytes, bodies, trees or maps of many entries."""

_DEPTH: Final = 3
"""How deep :func:`weight` looks into nested messages (a list is sampled by its first item)."""

_pool: concurrent.futures.ThreadPoolExecutor | None = None


def weight(value: Any, depth: int = 0) -> int:
    """A cheap estimate of ``value``'s encoded size in bytes: strings and bytes by their
    length, a list by its length times its first item's weight, a message by its fields
    (to :data:`_DEPTH` levels)."""
    if value is None:
        return 0
    kind = value.__class__
    if kind is int or kind is bool or kind is float:
        return 8
    if kind is str or kind is bytes:
        return len(value)
    if kind is list:
        return len(value) * max(8, weight(value[0], depth + 1)) if value else 0
    if kind is Encoded:
        return len(value.data)
    if kind is dict:
        if not value:
            return 0
        key, item = next(iter(value.items()))
        return len(value) * (weight(key, depth + 1) + weight(item, depth + 1) + 4)
    if isinstance(value, betterproto2.Message):
        if depth >= _DEPTH:
            return 64
        return 8 + sum(weight(v, depth + 1) for v in value.__dict__.values())
    return 8


async def encode_off_loop(message: Any) -> Any:
    """``message`` as it is when it is small (the codec encodes it on the loop), else an
    :class:`Encoded` made on a worker thread."""
    if not isinstance(message, betterproto2.Message) or weight(message) <= INLINE_BYTES:
        return message
    global _pool
    if _pool is None:
        _pool = concurrent.futures.ThreadPoolExecutor(ENCODERS, thread_name_prefix="skift-encode")
    data = await asyncio.get_running_loop().run_in_executor(_pool, bytes, message)
    return Encoded(data)
