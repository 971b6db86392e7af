"""The adversary suite's harness: a real ``skift serve``, a bystander, and bounded attacks.

Every attack of issue 29's table runs against a real ``skift serve`` process
over loopback only, bounded in count and time, and stops by itself. While it
runs a *bystander* (a person of another organization) makes simple reads at a
steady pace; the test asserts its p95 stays under :data:`BYSTANDER_P95` and
that nothing, bystander or attack, was answered INTERNAL.

- :func:`start_target` starts the server (``--dsn`` on a fresh database, gRPC on
  TCP, HTTP for the board) with short connection timeouts, and makes two
  organizations: ``bystanders`` and ``attackers``, each with a person and a
  bearer token (:class:`Target`).
- :class:`Bystander` reads (ListProjects) until stopped; :meth:`Bystander.stats`.
- :class:`RawH2` speaks HTTP/2 by hand (the h2 library) for what no gRPC client
  sends: resets, truncated frames, oversized headers, unfinished prefaces.
- The attacks themselves (``rapid_reset``, ``silent_connections``, ...) return
  what the server answered, for the test to assert on.

The bench's ``adversary`` scenario (``bench/_adversary.py``) runs the same
attacks and reports the bystander's p50/p95 with and without each.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import multiprocessing
import statistics
import struct
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from datetime import timedelta
from typing import Any, Final

import attrs
import h2.config
import h2.connection
import h2.events
import h2.exceptions
from hyperframe.frame import Frame
from serverproc import ServerProcess, _context, free_port  # pyright: ignore[reportPrivateUsage]

import skift
import skift_server

BYSTANDER_P95: Final = 1.0
"""Seconds: the bystander's p95 bound in CI on a shared 2-core machine."""

TIMEOUTS: Final = (
    "--preface-timeout", "2", "--header-timeout", "2", "--idle-timeout", "60",
)  # fmt: skip
"""Short connection timeouts, so the timeout attacks end within seconds (the idle
timeout longer than any pause of the suite's own clients between calls)."""


def in_thread(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro`` on an event loop of its own (module fixtures are synchronous)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


@attrs.define
class Target:
    """A running ``skift serve`` and the two organizations the suite uses."""

    process: ServerProcess
    dsn: str
    grpc_port: int
    http_port: int
    bystander_token: str
    attacker_token: str
    attacker_admin: str = "mallory"

    @property
    def grpc_url(self) -> str:
        return f"http://127.0.0.1:{self.grpc_port}"

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def bystander(self) -> skift_server.RemoteSkift:
        return skift_server.connect(self.grpc_url, token=self.bystander_token, attempts=1)

    def attacker(self, **kw: Any) -> skift_server.RemoteSkift:
        return skift_server.connect(self.grpc_url, token=self.attacker_token, attempts=1, **kw)

    def owner(self) -> skift_server.RemoteSkift:
        return skift_server.connect(self.process.url)


async def start_target(dsn: str, *flags: str) -> Target:
    """``skift serve --dsn DSN`` on TCP and HTTP with :data:`TIMEOUTS` (then ``flags``)."""
    grpc_port, http_port = free_port(), free_port()
    process = ServerProcess(
        "--dsn", dsn, "--listen", f"127.0.0.1:{grpc_port}", "--http", f"127.0.0.1:{http_port}",
        "--sweep-every", "0", "--prune-every", "0", "--webhook-workers", "0",
        *TIMEOUTS, *flags,
        fork=True,
    )  # fmt: skip
    await process.start()
    try:
        async with skift_server.connect(process.url) as owner:
            by = await owner.create_org("bystanders", admin="bea")
            at = await owner.create_org("attackers", admin="mallory")
        target = Target(process, dsn, grpc_port, http_port, by.token, at.token)
        async with target.bystander() as bea:
            project = await bea.create_project("Quiet work")
            await bea.patch(project.slug, [skift.CreateNode(title="Read me")])
        async with target.attacker() as mallory:
            await mallory.create_project("Noise")
    except BaseException:
        process.kill()
        process.cleanup()
        raise
    return target


async def stop_target(target: Target) -> None:
    try:
        code = await target.process.stop()
        assert code == 0, f"skift serve exited with {code}:\n{target.process.log()}"
    finally:
        target.process.cleanup()


# ------------------------------------------------------------------ the bystander


@attrs.frozen
class Stats:
    """What the bystander saw: latencies in seconds and the status of each call."""

    latencies: tuple[float, ...]
    statuses: Counter[str]

    @property
    def n(self) -> int:
        return len(self.latencies)

    def quantile(self, q: float) -> float:
        if not self.latencies:
            return float("inf")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    @property
    def p50(self) -> float:
        return statistics.median(self.latencies) if self.latencies else float("inf")

    @property
    def p95(self) -> float:
        return self.quantile(0.95)

    def summary(self) -> str:
        return (
            f"n={self.n} p50={self.p50 * 1000:.1f}ms p95={self.p95 * 1000:.1f}ms "
            f"max={max(self.latencies, default=0) * 1000:.1f}ms statuses={dict(self.statuses)}"
        )


class Bystander:
    """A person of another organization reading ListProjects every ``interval`` seconds
    over its own TCP connection, each call timed (a call that fails counts too).

    It runs in a process of its own (forked from the servers' fork server), so what
    the attack costs the test's own event loop never shows in its timings."""

    def __init__(self, target: Target, *, interval: float = 0.05) -> None:
        self.target = target
        self.interval = interval
        self._stats = Stats((), Counter())
        self._conn: Any = None
        self._process: Any = None

    async def __aenter__(self) -> Bystander:
        ours, theirs = multiprocessing.Pipe()
        self._conn = ours
        self._process = _context().Process(
            target=_bystander_main,
            args=(self.target.grpc_url, self.target.bystander_token, self.interval, theirs),
            daemon=True,
        )
        self._process.start()
        ready = await asyncio.to_thread(ours.poll, 60)
        assert ready, "the bystander did not start"
        assert ours.recv() == "ready"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._conn.send("stop")
        got = await asyncio.to_thread(self._conn.poll, 60)
        if got:
            latencies, statuses = self._conn.recv()
            self._stats = Stats(tuple(latencies), Counter(statuses))
        self._process.join(5)
        if self._process.exitcode is None:
            self._process.kill()
        self._conn.close()

    def stats(self) -> Stats:
        return self._stats


def _bystander_main(url: str, token: str, interval: float, conn: Any) -> None:
    asyncio.run(_bystander(url, token, interval, conn))


async def _bystander(url: str, token: str, interval: float, conn: Any) -> None:
    latencies: list[float] = []
    statuses: Counter[str] = Counter()
    async with skift_server.connect(url, token=token, attempts=1) as bea:
        await bea.list_projects()  # connected before the clock starts
        conn.send("ready")
        while not conn.poll():
            started = time.perf_counter()
            try:
                await asyncio.wait_for(bea.list_projects(), 30)
                status = "OK"
            except skift.SkiftError as exc:
                status = type(exc).__name__
            except Exception as exc:
                status = f"{type(exc).__name__}: {exc}"
            latencies.append(time.perf_counter() - started)
            statuses[status] += 1
            await asyncio.sleep(interval)
    conn.send((latencies, dict(statuses)))


def assert_unharmed(stats: Stats, *, p95: float = BYSTANDER_P95) -> None:
    """The bystander's p95 under ``p95`` seconds (:data:`BYSTANDER_P95`), every call
    answered OK."""
    assert stats.n >= 5, f"the bystander hardly ran: {stats.summary()}"
    assert set(stats.statuses) == {"OK"}, f"the bystander was refused: {stats.summary()}"
    assert stats.p95 < p95, f"the bystander waited: {stats.summary()}"


async def while_watched(
    target: Target, attack: Callable[[], Awaitable[Any]], *, settle: float = 0.5
) -> tuple[Any, Stats]:
    """Run ``attack`` while a bystander reads; what the attack returned and what the
    bystander saw (the bystander also reads ``settle`` seconds after it ends)."""
    async with Bystander(target) as bystander:
        result = await attack()
        await asyncio.sleep(settle)
    return result, bystander.stats()


# ------------------------------------------------------------------ raw HTTP/2


def grpc_headers(
    method: str, *, token: str | None = None, extra: list[tuple[str, str]] | None = None
) -> list[tuple[str, str]]:
    headers = [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", f"/skift.v1.SkiftService/{method}"),
        (":authority", "127.0.0.1"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ]
    if token is not None:
        headers.append(("authorization", f"Bearer {token}"))
    return headers + (extra or [])


def frame(message: bytes, *, length: int | None = None) -> bytes:
    """A gRPC length-prefixed message (``length`` overrides the prefix)."""
    return struct.pack(">BI", 0, len(message) if length is None else length) + message


class RawH2:
    """One HTTP/2 connection spoken by hand: whatever the test sends, and every event
    the server answers with (kept in :attr:`events`)."""

    def __init__(self) -> None:
        self.conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
        )
        self.events: list[h2.events.Event] = []
        self.sent: dict[int, int] = {}
        """Body bytes sent on each stream (:meth:`call`), as the server's window allowed."""
        self.closed = asyncio.Event()
        self._changed = asyncio.Event()
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._task: asyncio.Task[None] | None = None

    async def open(self, port: int) -> RawH2:
        self._reader, self._writer = await asyncio.open_connection("127.0.0.1", port)
        self.conn.initiate_connection()
        self.flush()
        self._task = asyncio.create_task(self._read())
        return self

    def flush(self) -> None:
        assert self._writer is not None
        data = self.conn.data_to_send()
        if data and not self._writer.is_closing():
            self._writer.write(data)

    async def drain(self) -> None:
        assert self._writer is not None
        self.flush()
        with contextlib.suppress(ConnectionError):
            await self._writer.drain()

    async def _read(self) -> None:
        assert self._reader is not None
        try:
            while data := await self._reader.read(65536):
                try:
                    events = self.conn.receive_data(data)
                except h2.exceptions.ProtocolError:
                    break
                for event in events:
                    if isinstance(event, h2.events.DataReceived):
                        self.conn.acknowledge_received_data(
                            event.flow_controlled_length, event.stream_id
                        )
                self.events += events
                self._changed.set()
                with contextlib.suppress(Exception):
                    self.flush()
        except ConnectionError:
            pass
        finally:
            self.closed.set()
            self._changed.set()

    async def until(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``predicate()`` holds (checked on each batch of events), or the
        connection closes, or ``timeout``; whether it holds."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if self.closed.is_set():
                return predicate()
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)
        return True

    def goaway(self) -> h2.events.ConnectionTerminated | None:
        for e in self.events:
            if isinstance(e, h2.events.ConnectionTerminated):
                return e
        return None

    def grpc_status(self, stream_id: int) -> tuple[str, str] | None:
        """The stream's ``grpc-status`` and ``grpc-message``, once answered."""
        for e in self.events:
            if isinstance(e, h2.events.TrailersReceived | h2.events.ResponseReceived) and (
                e.stream_id == stream_id
            ):
                got = dict(e.headers or ())
                if "grpc-status" in got:
                    return str(got["grpc-status"]), str(got.get("grpc-message", ""))
        return None

    def reset(self, stream_id: int) -> bool:
        return any(
            isinstance(e, h2.events.StreamReset) and e.stream_id == stream_id for e in self.events
        )

    async def call(
        self,
        method: str,
        body: bytes,
        *,
        token: str | None = None,
        extra: list[tuple[str, str]] | None = None,
        timeout: float = 10.0,
    ) -> tuple[str, str] | None:
        """One request whose body is ``body`` as given (frames and all), sent as the
        flow-control windows allow; the grpc-status it got (None: none in time)."""
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(sid, grpc_headers(method, token=token, extra=extra))
        await self.drain()
        deadline = time.monotonic() + timeout
        sent = 0
        while sent < len(body) and time.monotonic() < deadline:
            if self.grpc_status(sid) is not None or self.reset(sid) or self.closed.is_set():
                break
            room = min(
                self.conn.local_flow_control_window(sid),
                self.conn.max_outbound_frame_size,
                len(body) - sent,
            )
            if room <= 0:
                await self.until(
                    lambda: (
                        self.conn.local_flow_control_window(sid) > 0
                        or self.grpc_status(sid) is not None
                        or self.reset(sid)
                    ),
                    max(0.0, deadline - time.monotonic()),
                )
                continue
            self.conn.send_data(sid, body[sent : sent + room])
            sent += room
            self.sent[sid] = sent
            await self.drain()
        if sent >= len(body):
            with contextlib.suppress(h2.exceptions.ProtocolError):
                self.conn.end_stream(sid)
                await self.drain()
        await self.until(
            lambda: self.grpc_status(sid) is not None or self.reset(sid),
            max(0.0, deadline - time.monotonic()),
        )
        return self.grpc_status(sid)

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


# ------------------------------------------------------------------ attacks


async def rapid_reset(port: int, *, count: int = 20_000, seconds: float = 10.0) -> dict[str, Any]:
    """HEADERS then RST_STREAM, ``count`` times on one connection with no credentials
    (CVE-2023-44487); how many went out and the GOAWAY's error code, if one came."""
    raw = await RawH2().open(port)
    sent = 0
    deadline = time.monotonic() + seconds
    try:
        while sent < count and time.monotonic() < deadline and not raw.closed.is_set():
            try:
                for _ in range(100):
                    sid = raw.conn.get_next_available_stream_id()
                    raw.conn.send_headers(sid, grpc_headers("ListProjects"))
                    raw.conn.reset_stream(sid)
                    sent += 1
            except h2.exceptions.ProtocolError:
                break
            await raw.drain()
            await asyncio.sleep(0)
        await raw.until(lambda: raw.goaway() is not None, 3.0)
    finally:
        await raw.close()
    got = raw.goaway()
    return {"sent": sent, "goaway": None if got is None else got.error_code}


async def silent_connections(
    port: int, *, count: int = 500, send: bytes = b"", wait: float = 10.0
) -> dict[str, Any]:
    """``count`` TCP connections that send ``send`` (nothing: not even the preface) and
    then nothing more; how many the server closed within ``wait`` seconds, and the
    first bytes it sent on one of them."""
    conns: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    try:
        for _ in range(count):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            if send:
                writer.write(send)
            conns.append((reader, writer))
        replies: list[bytes] = []

        async def closed(reader: asyncio.StreamReader) -> bool:
            got = b""
            try:
                while chunk := await reader.read(65536):
                    got += chunk
            except ConnectionError:
                pass
            replies.append(got)
            return True

        started = time.monotonic()
        done, pending = await asyncio.wait(
            [asyncio.create_task(closed(r)) for r, _ in conns], timeout=wait
        )
        for task in pending:
            task.cancel()
        return {
            "closed": len(done),
            "open": len(pending),
            "seconds": round(time.monotonic() - started, 2),
            "a_reply": replies[0] if replies else b"",
        }
    finally:
        for _, writer in conns:
            writer.close()


async def read_frames(
    reader: asyncio.StreamReader, *, seconds: float, enough: Callable[[list[Frame]], bool]
) -> list[Frame]:
    """HTTP/2 frames as the server sends them (parsed by hand: no client state to
    disagree with what a disobedient client sent), until ``enough`` or ``seconds``."""
    frames: list[Frame] = []
    buf = b""
    deadline = time.monotonic() + seconds
    while not enough(frames):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            chunk = await asyncio.wait_for(reader.read(65536), left)
        except TimeoutError:
            break
        if not chunk:
            break
        buf += chunk
        while len(buf) >= 9:
            f, length = Frame.parse_frame_header(memoryview(buf[:9]))
            if len(buf) < 9 + length:
                break
            f.parse_body(memoryview(buf[9 : 9 + length]))
            frames.append(f)
            buf = buf[9 + length :]
    return frames


WATCHES = 1000
CLAIMS = 200
WAIT = timedelta(seconds=4)


async def long_poll_flood(target: Target) -> Counter[str]:
    """WATCHES WatchEvents and CLAIMS ClaimNext, each waiting WAIT, at once from the
    attackers' one token over a dozen connections; how each was answered."""
    clients = [target.attacker(pool_size=4) for _ in range(6)]
    for c in clients:
        await c.__aenter__()
    try:
        await asyncio.gather(*(c.list_projects() for c in clients))  # connected
        page = await clients[0].watch_events()
        while page.events:
            page = await clients[0].watch_events(after=page.cursor)
        head = page.cursor  # nothing after it: a watch from here waits

        async def one(i: int) -> str:
            c = clients[i % len(clients)]
            try:
                if i < WATCHES:
                    got = await c.watch_events(wait=WAIT, after=head)
                    return "answered" if got.events else "waited"
                else:
                    await c.claim_next(wait=WAIT)
            except skift.LimitExceeded as exc:
                return f"RESOURCE_EXHAUSTED {exc.details.get('limit')}"
            except skift.NothingReady:
                return "waited"
            except skift.SkiftError as exc:
                return f"{type(exc).__name__}: {exc}"[:150]
            return "answered"

        got = await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(WATCHES + CLAIMS))), 60)
        return Counter(got)
    finally:
        for c in clients:
            await c.__aexit__(None, None, None)


def big_patch(size: int = 4_100_000) -> bytes:
    """A PatchRequest of about ``size`` bytes: many small creates (what costs most to decode)."""
    from skift_server._proto.skift import v1

    op = v1.PatchOp(create_node=v1.CreateNodeOp(title="t" * 40, body="b" * 40))
    one = len(bytes(op)) + 2
    ops = [op] * max(1, size // one)
    return bytes(v1.PatchRequest(project="noise", ops=ops))


async def no_token_patch(port: int, *, size: int = 4_100_000) -> dict[str, Any]:
    """One ``size``-byte Patch with no token; how it was answered and how fast."""
    body = frame(big_patch(size))
    raw = await RawH2().open(port)
    try:
        started = time.perf_counter()
        got = await raw.call("Patch", body, timeout=30)
        return {"status": got, "seconds": round(time.perf_counter() - started, 3)}
    finally:
        await raw.close()
