"""``skift-mcp`` over stdio, second part: the SDK loads while the front keeps answering.

``skift_mcp._front`` answers the handshake (and a first ``ready`` call)
without anyio or the SDK, then hands the session here when the SDK should
load. Importing the MCP SDK takes most of a second (its pydantic models of
the protocol), so it loads in a thread, connects to ``skift serve``, then
takes the session over: the front's answers (the handshake, the tool list,
``ping``, a ``ready`` call that needs no coercion) go on meanwhile. The
hand-over replays the client's ``initialize`` (its answer is dropped: the
client has had it) and forwards every other message in the order it came,
so the tools, their arguments, results and errors are the SDK server's own.

A ``server/discover`` probe (the 2026 protocol's stateless era) gets "method
not found" before the hand-over, which the official client reads as a server
of the initialize handshake; that is the era this front speaks.
"""

from __future__ import annotations

import json
import math
import threading
from contextlib import suppress
from importlib import import_module
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel
import anyio.streams.memory
import anyio.to_thread

from . import _front
from ._front import REPLAY_ID, Answers, dumps, load_manifest, message, replay

if TYPE_CHECKING:
    from ._front import Early, Lines

MANIFEST = Path(_front.MANIFEST)

__all__ = ["MANIFEST", "ClientLines", "Front", "load_manifest", "resume"]


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


class Front(Answers):
    """Answers what it can from the manifest until the SDK's server takes over, and queues the rest."""

    def __init__(self, manifest: dict[str, Any], wire: Wire, url: str | None) -> None:
        super().__init__(manifest)
        self.wire = wire
        self.url = url
        self.forwarding = False  # the SDK's server reads the queue: everything goes there
        self.needs_sdk = False  # a message other than the handshake is queued
        self.loading = False
        self.queue_in, self.queue_out = anyio.create_memory_object_stream[str](math.inf)

    async def _first_call(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        """The answer to a ``ready`` call the front gives itself (``_first``), or None."""
        return await anyio.to_thread.run_sync(self.first_call, msg, self.url)

    async def take(self, line: str, tg: anyio.abc.TaskGroup) -> None:
        """One line from the client."""
        if self.forwarding:
            await self.queue_in.send(line)
            return
        msg = message(line)
        handshake = self.version is None and msg.get("method") == "initialize"
        reply = self.answer(msg)
        if reply is not None:
            await self.wire.send(dumps(reply))
            if handshake and self.version is not None:
                # The SDK's server needs the handshake too: the same request under an id of
                # its own, whose answer SdkOutput drops.
                await self.queue_in.send(replay(msg))
            return
        if msg.get("method") == "tools/call":
            reply = await self._first_call(msg)
            if reply is not None:
                await self.wire.send(dumps(reply))
                self.load(tg)  # the next call may well need it
                return
        await self.queue_in.send(line)
        if msg.get("method") != "notifications/initialized":
            self.needs_sdk = True
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


async def resume(early: Early, lines: Lines) -> None:
    """Go on with the session ``_front`` began (its lines for the SDK first), loading the SDK
    at once, until stdin ends."""
    front = Front(early.manifest, Wire(early.out), early.url)
    front.version = early.version
    front.needs_sdk = early.needs_sdk
    for line in early.for_sdk:
        front.queue_in.send_nowait(line)
    async with front.queue_in, front.queue_out, anyio.create_task_group() as tg:
        front.load(tg)
        while True:
            raw = lines.next(0.0)  # a line already read costs no thread
            if raw is None:
                raw = await anyio.to_thread.run_sync(lines.next)
            if not raw:
                break
            await front.take(raw.decode("utf-8", errors="replace"), tg)
        front.queue_in.close()
        if not front.needs_sdk:
            tg.cancel_scope.cancel()  # only the handshake came: nothing waits for the SDK
