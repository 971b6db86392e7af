"""A ``ready`` call answered before the MCP SDK has loaded (``skift_mcp._front``).

An agent often asks ``ready`` first, and the SDK (its pydantic models of the
protocol) takes most of a second to import. While it loads, the stdio front
answers a ``ready`` call whose arguments are plainly what the tool's schema
asks for (each known, each of its exact JSON type, the enums one of their
values, ``limit`` 1 or more) itself: the request goes to ``skift serve``
over ``skift_server._unary`` (blocking HTTP/2, no grpclib), the page becomes
the same view through the same converter, and the tool's own rendering
(``skift_mcp._render``: ``page``, ``node`` and ``result_parts``, which the
SDK's tool calls too) makes the result. Anything else (an argument the
schema would coerce or refuse, any skift error, a transport failure) returns
None and the call waits for the SDK, which answers it in full; ``ready``
only reads, so asking again changes nothing. tests/mcp/test_mcp_first.py
compares the answers with the SDK's.
"""

from __future__ import annotations

import os
from typing import Any, cast

LISTS = ("projects", "kinds", "labels", "any_labels")
CHOICES = {"assignee_kind": ("agent", "user"), "min_priority": ("p0", "p1", "p2", "p3", "p4")}
TEXTS = ("parent", "page")


def plain_arguments(arguments: object) -> dict[str, Any] | None:
    """``ready``'s arguments when each is exactly what the schema asks (no coercion needed)."""
    if not isinstance(arguments, dict):
        return None
    args: dict[str, Any] = {}
    given = cast("dict[object, object]", arguments)
    for key, value in given.items():
        if value is None and key in (*LISTS, *CHOICES, *TEXTS, "limit"):
            continue
        if key in LISTS:
            if not isinstance(value, list):
                return None
            if not all(isinstance(v, str) for v in cast("list[object]", value)):
                return None
        elif isinstance(key, str) and key in CHOICES:
            if value not in CHOICES[key]:
                return None
        elif key in TEXTS:
            if not isinstance(value, str):
                return None
        elif key == "limit":
            if type(value) is not int or value < 1:
                return None
        elif key == "verbose":
            if not isinstance(value, bool):
                return None
        else:
            return None  # unknown: the SDK's tool refuses it, naming the closest
        args[str(key)] = value
    return args


def server_url(url: str | None) -> str:
    """The server ``skift_server.connect(url)`` would reach."""
    if url:
        return url
    if os.environ.get("SKIFT_SERVER"):
        return os.environ["SKIFT_SERVER"]
    from skift_server._paths import find_socket

    return f"unix://{find_socket()[0]}"


def ready(url: str | None, arguments: object) -> dict[str, Any] | None:
    """The ``tools/call`` result of ``ready`` with ``arguments``, or None (the SDK answers)."""
    args = plain_arguments(arguments)
    if args is None:
        return None
    try:
        from skift_server import _unary

        timeout = _unary.env_timeout(30.0)
        if timeout is None:
            return None
        import skift
        from skift_server._convert import page_size
        from skift_server._convert_types import from_pb, to_pb
        from skift_server._proto.skift import v1
        from skift_server._wirecodec import read_exactly

        from . import _render as r

        flt = skift.filter_from(
            projects=list(args.get("projects") or ()),
            kinds=list(args.get("kinds") or ()),
            labels=list(args.get("labels") or ()),
            any_labels=list(args.get("any_labels") or ()),
            assignee_kind=args.get("assignee_kind"),
            min_priority=args.get("min_priority"),
            parent=args.get("parent"),
        )
        req = v1.ReadyRequest(
            filter=to_pb(v1.NodeFilter, flt),
            page_size=page_size(args.get("limit")),
            page_token=args.get("page") or "",
        )
        with _unary.Connection(
            server_url(url), token=os.environ.get("SKIFT_TOKEN") or None, timeout=timeout
        ) as conn:
            # read exactly as encoded: any other answer raises, and the SDK's tool (the
            # remote client, which reads strictly and words what is wrong) answers instead
            got = read_exactly(v1.ReadyResponse, conn.call("Ready", bytes(req)))
        p = from_pb(v1.ReadyResponse, skift.ReadyPage, got)
        verbose = bool(args.get("verbose", False))
        text, plain = r.result_parts(r.page(p, [r.node(n, verbose=verbose) for n in p.nodes]))
    except Exception:
        return None  # a refusal or a failure: the SDK's tool answers it, worded as always
    return {
        "content": [{"text": text, "type": "text"}],
        "isError": False,
        "structuredContent": plain,
    }
