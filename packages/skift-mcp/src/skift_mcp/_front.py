"""``skift-mcp`` over stdio, first part: the handshake and a first ``ready`` call, blocking.

An agent harness starts ``skift-mcp`` for every session, waits for its
``initialize`` answer and the tool list, and the agent's first call is often
``ready``. This front answers those on the main thread with plain blocking
reads and writes: no asyncio, no anyio, no MCP SDK, no pydantic (each of
them costs more than the answers). ``initialize``, ``tools/list`` and
``ping`` get the results the SDK's own server gives (precomputed in
``_manifest.json``; a test regenerates them and compares), a ``ready`` call
whose arguments need no coercion gets ``skift_mcp._first``'s answer (straight
to ``skift serve`` over blocking HTTP/2, rendered by the tool's own
functions), and ``notifications/initialized`` waits for the SDK.

It hands the session to ``skift_mcp._stdio`` (anyio, which loads the SDK in
a thread and keeps answering what this front answers until the SDK's server
takes over) once it answered such a call (the next call may well need the
SDK), once a message needs the SDK, or LOAD_AFTER seconds after the start
(the import then overlaps the agent's first turn). A session that ends
before any of these never loads anyio or the SDK.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time
from typing import IO, TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from collections.abc import Callable

MANIFEST = os.path.join(os.path.dirname(__file__), "_manifest.json")
# The id of the replayed initialize: the client never sends it (ids it sends are its own).
REPLAY_ID = "skift-mcp:replayed-initialize"
METHOD_NOT_FOUND = -32601
LOAD_AFTER = 0.5  # seconds from the start: a harness's handshake and a first call come sooner


def load_manifest() -> dict[str, Any]:
    """The precomputed answers: per protocol version, the initialize result and the tool list."""
    with open(MANIFEST, encoding="utf-8") as fh:
        return json.load(fh)


def dumps(msg: dict[str, Any]) -> str:
    return json.dumps(msg, separators=(",", ":"), ensure_ascii=False)


def message(line: str) -> dict[str, Any]:
    """A JSON-RPC message as a dict; anything else as an empty one (the SDK answers it)."""
    try:
        msg: object = json.loads(line)
    except ValueError:
        return {}
    return cast("dict[str, Any]", msg) if isinstance(msg, dict) else {}


def params(msg: dict[str, Any]) -> dict[str, Any]:
    given: object = msg.get("params")
    return cast("dict[str, Any]", given) if isinstance(given, dict) else {}


def replay(msg: dict[str, Any]) -> str:
    """The client's initialize under an id of its own, for the SDK's server (its answer is dropped)."""
    return dumps({**msg, "id": REPLAY_ID})


class Answers:
    """What the front answers from the manifest: the handshake, the tool list and ping."""

    def __init__(self, manifest: dict[str, Any]) -> None:
        self.manifest = manifest
        self.version: str | None = None  # the protocol version the initialize answer named

    def answer(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        """The reply to ``msg`` when the front gives it, else None (the SDK will)."""
        method, rid = msg.get("method"), msg.get("id")
        if rid is None or not isinstance(method, str):
            return None
        if method == "server/discover" and self.version is None:
            error = {"code": METHOD_NOT_FOUND, "message": "Method not found"}
            return {"jsonrpc": "2.0", "id": rid, "error": error}
        given = params(msg)
        if method == "initialize" and self.version is None:
            asked = given.get("protocolVersion")
            versions: dict[str, Any] = self.manifest["versions"]
            version = asked if isinstance(asked, str) and asked in versions else None
            self.version = version or str(self.manifest["latest"])
            result: dict[str, Any] = versions[self.version]["initialize"]
            return {"jsonrpc": "2.0", "id": rid, "result": result}
        if self.version is None:
            return None
        if method == "tools/list" and not given.get("cursor"):
            tools = self.manifest["tool_lists"][self.manifest["versions"][self.version]["tools"]]
            return {"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}}
        if method == "ping":
            return {"jsonrpc": "2.0", "id": rid, "result": {}}
        return None

    def first_call(self, msg: dict[str, Any], url: str | None) -> dict[str, Any] | None:
        """The answer to a ``ready`` call the front gives itself (``_first``), or None. Blocks."""
        given = params(msg)
        if self.version is None or msg.get("id") is None or given.get("name") != "ready":
            return None
        arguments: object = given.get("arguments")
        if arguments is None:
            arguments = dict[str, Any]()
        from . import _first

        result = _first.ready(url, arguments)
        return None if result is None else {"jsonrpc": "2.0", "id": msg["id"], "result": result}


class Lines:
    """The client's lines from the wire's descriptor, each with its newline (the last may lack
    it); b"" once the input has ended."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buf = b""
        self._ended = False

    def next(self, timeout: float | None = None) -> bytes | None:
        """The next line, or None when none came within ``timeout`` seconds (None: wait)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buf:
            if self._ended:
                line, self._buf = self._buf, b""
                return line
            if deadline is not None:
                left = max(0.0, deadline - time.monotonic())
                if not select.select([self._fd], [], [], left)[0]:
                    return None
            chunk = os.read(self._fd, 1 << 16)
            if chunk:
                self._buf += chunk
            else:
                self._ended = True
        line, _, self._buf = self._buf.partition(b"\n")
        return line + b"\n"


class Early(Answers):
    """The session until it needs anyio: answers what it can, keeps the SDK's lines in order."""

    def __init__(self, manifest: dict[str, Any], out: IO[bytes], url: str | None) -> None:
        super().__init__(manifest)
        self.out = out
        self.url = url
        self.for_sdk: list[str] = []  # lines the SDK's server reads first, in order
        self.needs_sdk = False  # a message other than the handshake is among them

    def send(self, msg: dict[str, Any]) -> None:
        self.out.write(dumps(msg).encode("utf-8") + b"\n")
        self.out.flush()

    def run(self, lines: Lines, until: float) -> bool:
        """Serve until the SDK should load (True) or the input ended first (False)."""
        while True:
            raw = lines.next(max(0.0, until - time.monotonic()))
            if raw is None:
                return True  # LOAD_AFTER: load while the agent thinks
            if not raw:
                return False  # only the handshake came: nothing waits for the SDK
            line = raw.decode("utf-8", errors="replace")
            msg = message(line)
            handshake = self.version is None and msg.get("method") == "initialize"
            reply = self.answer(msg)
            if reply is not None:
                self.send(reply)
                if handshake and self.version is not None:
                    self.for_sdk.append(replay(msg))  # the SDK's server needs the handshake too
                continue
            if msg.get("method") == "tools/call":
                reply = self.first_call(msg, self.url)
                if reply is not None:
                    self.send(reply)
                    return True  # the next call may well need the SDK
            self.for_sdk.append(line)
            if msg.get("method") != "notifications/initialized":
                self.needs_sdk = True
                return True


def serve(url: str | None, hand_over: Callable[[Early, Lines], None]) -> None:
    """Serve MCP on stdin and stdout until stdin ends; ``hand_over`` goes on with the session
    once the SDK should load (``skift_mcp._stdio.resume``, run by the caller)."""
    start = time.monotonic()
    # The wire as private descriptors; fd 0 reads nothing and fd 1 goes to stderr meanwhile,
    # as the SDK's stdio transport does: a stray print or child process cannot write into it.
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
        with os.fdopen(wire_out, "wb") as out:
            try:
                early = Early(load_manifest(), out, url)
                lines = Lines(wire_in)
                if early.run(lines, start + LOAD_AFTER):
                    hand_over(early, lines)
            finally:
                os.close(wire_in)
    finally:
        sys.stdout.flush()
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        for fd in (null, saved_in, saved_out):
            os.close(fd)
