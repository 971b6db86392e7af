"""Large answers are encoded on a worker thread (skift_server._encode), never on the event
loop: the estimate that decides it, the bytes it sends (the codec's own), and the RPCs it
weighs (never the hot path's claim, completion or heartbeat)."""

from __future__ import annotations

import asyncio
import threading

import skift_server  # noqa: F401  # installs the fast codec
from skift_server import _encode, _wirecodec
from skift_server._proto.skift import v1
from skift_server._wire import StrictCodec


def _events(n: int, reason: int) -> v1.ListEventsResponse:
    return v1.ListEventsResponse(
        events=[v1.Event(op="patch", reason="r" * reason, project="p") for _ in range(n)]
    )


def test_the_estimate_follows_the_encoded_size() -> None:
    for page in (_events(1, 10), _events(500, 100), _events(50, 4000)):
        size, guess = len(bytes(page)), _encode.weight(page)
        assert size / 3 <= guess <= size * 3 + 64, (size, guess)
    blob = v1.GetBlobResponse(data=b"x" * 3_000_000)
    assert _encode.weight(blob) >= 3_000_000
    stand_ins = v1.ReadyResponse(nodes=[_wirecodec.Encoded(b"n" * 1000)] * 100)  # pyright: ignore[reportArgumentType]
    assert _encode.weight(stand_ins) >= 100_000


async def test_a_large_answer_is_encoded_on_a_worker_thread() -> None:
    small = _events(2, 10)
    assert await _encode.encode_off_loop(small) is small  # the codec encodes it on the loop
    big = _events(400, 400)
    seen: list[str] = []

    class Watched(v1.ListEventsResponse):
        def __bytes__(self) -> bytes:
            seen.append(threading.current_thread().name)
            return super().__bytes__()

    got = await _encode.encode_off_loop(Watched(events=big.events))
    assert isinstance(got, _wirecodec.Encoded)
    assert got.data == bytes(big)
    assert seen
    assert seen[0].startswith("skift-encode")
    assert StrictCodec().encode(got, v1.ListEventsResponse) == bytes(big)
    # at most ENCODERS at once; the rest wait their turn, each answered
    many = await asyncio.gather(*(_encode.encode_off_loop(big) for _ in range(6)))
    assert {bytes(m.data) for m in many} == {bytes(big)}


def test_the_hot_path_is_never_weighed() -> None:
    assert {"Claim", "ClaimNext", "Complete", "Heartbeat", "Release"}.isdisjoint(
        _encode.LARGE_REPLIES
    )
    assert {"ListEvents", "Ready", "GetBlob", "ExportArchive", "WatchEvents"} <= (
        _encode.LARGE_REPLIES
    )
