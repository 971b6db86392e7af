"""``skift-mcp`` over stdio, answering at once while the MCP SDK loads.

An agent harness starts ``skift-mcp`` for every session and waits for its
``initialize`` answer (and then the tool list) before the session begins.
Importing the MCP SDK takes most of a second (its pydantic models of the
protocol), so the stdio front imports neither the SDK nor pydantic: it
answers ``initialize``, ``tools/list`` and ``ping`` with the results the
SDK's own server gives (precomputed in ``_manifest.json``; a test regenerates
them and compares), loads the SDK and connects to ``skift serve`` in the
background, then hands the session to the SDK's server. The hand-over
replays the client's ``initialize`` (its answer is dropped: the client has
had it) and forwards every other message in the order it came, so the tools,
their arguments, results and errors are the SDK server's own.

Before the hand-over the front also answers a ``ready`` call whose arguments
need no coercion (``skift_mcp._first``: straight to ``skift serve``, rendered
by the tool's own functions), so an agent's first look at the work does not
wait for the SDK. The SDK starts loading once the front answered such a call,
once a message needs it, or LOAD_AFTER seconds after the spawn: not at once,
where its import thread would share the interpreter with that first answer
(which the front still gives while the SDK loads).

A ``server/discover`` probe (the 2026 protocol's stateless era) gets "method
not found" before the hand-over, which the official client reads as a server
of the initialize handshake; that is the era this front speaks.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
from contextlib import contextmanager, suppress
from importlib import import_module
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel
import anyio.streams.memory
import anyio.to_thread

if TYPE_CHECKING:
    from collections.abc import Generator

MANIFEST = Path(__file__).with_name("_manifest.json")
# The id of the replayed initialize: the client never sends it (ids it sends are its own).
REPLAY_ID = "skift-mcp:replayed-initialize"
METHOD_NOT_FOUND = -32601
LOAD_AFTER = 0.5  # seconds from the spawn: a harness's handshake and a first call come sooner


def load_manifest() -> dict[str, Any]:
    """The precomputed answers: per protocol version, the initialize result and the tool list."""
    return json.loads(MANIFEST.read_text(encoding="utf-8"))


def _dumps(msg: dict[str, Any]) -> str:
    return json.dumps(msg, separators=(",", ":"), ensure_ascii=False)


def _message(line: str) -> dict[str, Any]:
    """A JSON-RPC message as a dict; anything else as an empty one (the SDK answers it)."""
    try:
        msg: object = json.loads(line)
    except ValueError:
        return {}
    return cast("dict[str, Any]", msg) if isinstance(msg, dict) else {}


def _params(msg: dict[str, Any]) -> dict[str, Any]:
    params: object = msg.get("params")
    return cast("dict[str, Any]", params) if isinstance(params, dict) else {}


class Wire:
    """The harness's end of stdout: whole lines, one writer at a time (the front and the SDK share it)."""

    def __init__(self, out: IO[bytes]) -> None:
        self._out = anyio.wrap_file(out)
        self._lock = anyio.Lock()

    async def send(self, line: str) -> None:
        async with self._lock:
            await self._out.write(line.encode("utf-8") + b"\n")
            await self._out.flush()


class ClientLines:
    """The client's lines as the SDK's stdio transport reads them: an async iterator of text."""

    def __init__(self, lines: anyio.streams.memory.MemoryObjectReceiveStream[str]) -> None:
        self._lines = lines

    def __aiter__(self) -> ClientLines:
        return self

    async def __anext__(self) -> str:
        try:
            return await self._lines.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class SdkOutput:
    """What the SDK's stdio transport writes, to the wire, without its answer to the replay."""

    def __init__(self, wire: Wire) -> None:
        self._wire = wire

    async def write(self, text: str) -> None:
        line = text.rstrip("\n")
        if REPLAY_ID in line and json.loads(line).get("id") == REPLAY_ID:
            return
        await self._wire.send(line)

    async def flush(self) -> None:
        return None


class Front:
    """Answers what it can from the manifest until the SDK's server takes over, and queues the rest."""

    def __init__(self, manifest: dict[str, Any], wire: Wire, url: str | None) -> None:
        self.manifest = manifest
        self.wire = wire
        self.url = url
        self.version: str | None = None  # the protocol version the front's initialize answer named
        self.forwarding = False  # the SDK's server reads the queue: everything goes there
        self.needs_sdk = False  # a message other than the handshake is queued
        self.loading = False
        self.queue_in, self.queue_out = anyio.create_memory_object_stream[str](math.inf)

    def _answer(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        """The reply to ``msg`` when the front gives it, else None (the SDK will)."""
        method, rid = msg.get("method"), msg.get("id")
        if rid is None or not isinstance(method, str):
            return None
        if method == "server/discover" and self.version is None:
            error = {"code": METHOD_NOT_FOUND, "message": "Method not found"}
            return {"jsonrpc": "2.0", "id": rid, "error": error}
        params = _params(msg)
        if method == "initialize" and self.version is None:
            asked = params.get("protocolVersion")
            versions: dict[str, Any] = self.manifest["versions"]
            version = asked if isinstance(asked, str) and asked in versions else None
            self.version = version or str(self.manifest["latest"])
            result: dict[str, Any] = versions[self.version]["initialize"]
            return {"jsonrpc": "2.0", "id": rid, "result": result}
        if self.version is None:
            return None
        if method == "tools/list" and not params.get("cursor"):
            tools = self.manifest["tool_lists"][self.manifest["versions"][self.version]["tools"]]
            return {"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}}
        if method == "ping":
            return {"jsonrpc": "2.0", "id": rid, "result": {}}
        return None

    async def _first_call(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        """The answer to a ``ready`` call the front gives itself (``_first``), or None."""
        params = _params(msg)
        if self.version is None or msg.get("id") is None or params.get("name") != "ready":
            return None
        arguments: object = params.get("arguments")
        if arguments is None:
            arguments = dict[str, Any]()
        from . import _first

        result = await anyio.to_thread.run_sync(_first.ready, self.url, arguments)
        return None if result is None else {"jsonrpc": "2.0", "id": msg["id"], "result": result}

    async def take(self, line: str, tg: anyio.abc.TaskGroup) -> None:
        """One line from the client."""
        if self.forwarding:
            await self.queue_in.send(line)
            return
        msg = _message(line)
        handshake = self.version is None and msg.get("method") == "initialize"
        reply = self._answer(msg)
        if reply is not None:
            await self.wire.send(_dumps(reply))
            if handshake and self.version is not None:
                # The SDK's server needs the handshake too: the same request under an id of
                # its own, whose answer SdkOutput drops.
                await self.queue_in.send(_dumps({**msg, "id": REPLAY_ID}))
            return
        if msg.get("method") == "tools/call":
            reply = await self._first_call(msg)
            if reply is not None:
                await self.wire.send(_dumps(reply))
                self.load(tg)  # the next call may well need it
                return
        await self.queue_in.send(line)
        if msg.get("method") != "notifications/initialized":
            self.needs_sdk = True
        self.load(tg)

    async def load_after(self, tg: anyio.abc.TaskGroup, seconds: float) -> None:
        await anyio.sleep(seconds)
        self.load(tg)

    def load(self, tg: anyio.abc.TaskGroup) -> None:
        if not self.loading:
            self.loading = True
            tg.start_soon(self._run_sdk)

    async def _run_sdk(self) -> None:
        """Import the SDK in a thread (the front keeps answering), then serve the queue with it."""
        loaded = anyio.Event()
        token = anyio.lowlevel.current_token()
        failed: list[BaseException] = []

        def load() -> None:
            try:
                for name in ("skift_server._client", "mcp.server.stdio", "skift_mcp._server"):
                    import_module(name)
            except BaseException as exc:  # re-raised in the event loop
                failed.append(exc)
            with suppress(RuntimeError):  # the session ended meanwhile
                anyio.from_thread.run_sync(loaded.set, token=token)

        # A daemon thread: a session that ends before the SDK is needed does not wait for it.
        threading.Thread(target=load, name="skift-mcp: load the MCP SDK", daemon=True).start()
        await loaded.wait()
        if failed:
            raise failed[0]

        from mcp.server.stdio import stdio_server

        import skift_server

        from ._server import build_server

        async with skift_server.connect(self.url) as sk, self.queue_out:
            server = build_server(sk)
            lowlevel = server._lowlevel_server  # pyright: ignore[reportPrivateUsage]
            lines: Any = ClientLines(self.queue_out)
            output: Any = SdkOutput(self.wire)
            async with stdio_server(stdin=lines, stdout=output) as (read, write):
                self.forwarding = True
                await lowlevel.run(read, write, lowlevel.create_initialization_options())


@contextmanager
def _claim_stdio() -> Generator[tuple[IO[bytes], IO[bytes]]]:
    """The wire as private descriptors; fd 0 reads nothing and fd 1 goes to stderr meanwhile.

    As the SDK's stdio transport does: a stray print or child process cannot
    write into the protocol stream.
    """
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
        with os.fdopen(wire_in, "rb") as rin, os.fdopen(wire_out, "wb") as rout:
            yield rin, rout
    finally:
        sys.stdout.flush()
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        for fd in (null, saved_in, saved_out):
            os.close(fd)


async def serve(url: str | None) -> None:
    """Serve MCP on stdin and stdout until stdin ends."""
    with _claim_stdio() as (rin, rout):
        front = Front(load_manifest(), Wire(rout), url)
        lines = anyio.wrap_file(rin)
        async with front.queue_in, front.queue_out, anyio.create_task_group() as tg:
            # Load soon: the import overlaps the agent's first turn (the handshake and a
            # first ready call are answered without it, and faster without its thread).
            tg.start_soon(front.load_after, tg, LOAD_AFTER)
            async for raw in lines:
                await front.take(raw.decode("utf-8", errors="replace"), tg)
            front.queue_in.close()
            if not front.needs_sdk:
                tg.cancel_scope.cancel()  # only the handshake came: nothing waits for the SDK
