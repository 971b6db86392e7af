"""A unary call's request frames taken from the bytes, around h2's frame parsing and dispatch.

h2 turns every frame it receives into a hyperframe object (its flags a set, its body
parsed), writes a ``repr()`` of it for a trace log that is off (h2's ``DummyLogger``
drops the line, the string is made anyway), dispatches it, and for a HEADERS frame counts
the streams open by walking them all. A plain unary request is one HEADERS frame and one
DATA frame; ``_h2.GuardedH2Protocol`` hands those to :func:`take_headers` and
:func:`take_data` straight from the bytes it has already cut into frames, and they do what
h2's connection does for such a frame with h2's own stream methods (the stream's state
machine, flow-control windows, header decoding, events): the same events, the same state.
Anything else (another frame type or flag, padding, a stream in another state, a connection
past its preface's first request or closing) is h2's, as before (``None``).

:func:`quiet_receive` gives a connection h2's ``_receive_frame`` without that ``repr()``
for the frames h2 still parses, when its logger is h2's ``DummyLogger``.
tests/server/test_h2_frames.py holds both to h2's own path (events and state, on random
sequences of frames), and pins the h2 code they stand for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, cast

from h2.config import DummyLogger
from h2.connection import (
    AllowedStreamIDs,
    ConnectionState,
    _decode_headers,  # pyright: ignore[reportPrivateUsage]
)
from h2.errors import ErrorCodes
from h2.exceptions import StreamClosedError, StreamIDTooLowError
from h2.stream import StreamClosedBy, StreamInputs, StreamState
from h2.utilities import is_informational_response
from hpack.table import HeaderTable
from hyperframe.frame import HeadersFrame, RstStreamFrame

from ._hpack_blocks import BlockDecoder

if TYPE_CHECKING:
    from h2.connection import H2Connection
    from h2.events import Event
    from h2.stream import H2StreamStateMachine
    from hyperframe.frame import Frame

__all__ = [
    "answered",
    "indexed_only",
    "quiet_receive",
    "refuse_streams_past",
    "take_data",
    "take_headers",
]

_END_STREAM: Final = 0x1
_END_HEADERS: Final = 0x4
_STATIC_ENTRIES: Final = HeaderTable.STATIC_TABLE_LENGTH
_OPEN: Final = ConnectionState.SERVER_OPEN
"""The connection state in which HEADERS and DATA leave the connection's state as it is
(h2's table: SERVER_OPEN + RECV_HEADERS / RECV_DATA -> SERVER_OPEN, no callback)."""


def take_headers(
    h2c: H2Connection, sid: int, flags: int, block: bytes, limit: int
) -> list[Event] | None:
    """h2's receipt of a HEADERS frame (``_receive_headers_frame``) opening stream ``sid``
    with the header block ``block`` whole in it (END_HEADERS; END_STREAM or not; no
    padding, no priority), and its events; None when the frame is not that case (h2 is to
    parse it). ``limit``: the streams the connection allows open at once (a stream past it is
    refused by :func:`refuse_streams_past`, through h2). Raises what h2 raises for it (a ProtocolError: HPACK)."""
    if (
        flags & ~_END_STREAM != _END_HEADERS
        or not _between_frames(h2c)
        or sid % 2 == 0
        or sid <= h2c.highest_inbound_stream_id
        or h2c.state_machine.state is not _OPEN
        or len(block) > h2c.max_inbound_frame_size
        or sid in h2c.streams
        or len(h2c.streams) >= limit  # (``refuse_streams_past`` may answer it: h2's)
    ):
        return None
    # as h2: the streams open counted (those closed meanwhile are forgotten as it counts)
    if h2c.open_inbound_streams + 1 > h2c.local_settings.max_concurrent_streams:
        return None  # h2 refuses it (TooManyStreamsError)
    decoder = h2c.decoder
    headers = _decode_headers(decoder, block)
    stream = h2c._begin_new_stream(sid, AllowedStreamIDs.ODD)  # pyright: ignore[reportPrivateUsage]
    end_stream = bool(flags & _END_STREAM)
    config = h2c.config
    encoding = config.header_encoding
    if (
        decoder.__class__ is not BlockDecoder
        or not isinstance(encoding, str)
        or config.normalize_inbound_headers
        or config.validate_inbound_headers
        or is_informational_response(headers)
    ):
        return stream.receive_headers(headers, end_stream, encoding)[1]
    # h2's H2Stream.receive_headers for a request opening a stream, the header list's
    # text made once per remembered block (BlockDecoder.text)
    sm = stream.state_machine
    events: list[Any] = sm.process_input(StreamInputs.RECV_HEADERS)
    if end_stream:
        ended = sm.process_input(StreamInputs.RECV_END_STREAM)
        events[0].stream_ended = ended[0]
        events += ended
    stream._initialize_content_length(headers)  # pyright: ignore[reportPrivateUsage]
    events[0].headers = cast(BlockDecoder, decoder).text(block, encoding, headers)
    return events


def take_data(h2c: H2Connection, sid: int, flags: int, payload: bytes) -> list[Event] | None:
    """h2's receipt of a DATA frame (``_receive_data_frame``) on stream ``sid``, open for
    both sides (no padding; END_STREAM or not), and its events; None when the frame is not
    that case. Raises what h2 raises for it (a ProtocolError: a window or a
    content-length exceeded)."""
    if flags & ~_END_STREAM or h2c.state_machine.state is not _OPEN or not _between_frames(h2c):
        return None
    stream = h2c.streams.get(sid)
    if (
        stream is None
        or stream.state_machine.state is not StreamState.OPEN
        or len(payload) > h2c.max_inbound_frame_size
    ):
        return None
    length = len(payload)
    h2c._inbound_flow_control_window_manager.window_consumed(length)  # pyright: ignore[reportPrivateUsage]
    _, events = stream.receive_data(payload, bool(flags & _END_STREAM), length)
    return events


def answered(sm: H2StreamStateMachine) -> None:
    """The stream's state machine after an answer is sent whole (HEADERS, DATA, trailing
    HEADERS with END_STREAM): h2's four inputs (SEND_HEADERS, SEND_DATA, SEND_HEADERS,
    SEND_END_STREAM), their outcome set at once for a server's stream whose request has
    ended and whose answer has not begun (HALF_CLOSED_REMOTE -> CLOSED, closed by the END_STREAM sent)."""
    if (
        sm.state is StreamState.HALF_CLOSED_REMOTE
        and sm.client is False
        and not sm.headers_sent
        and not sm.trailers_sent
    ):
        sm.headers_sent = True
        sm.trailers_sent = True
        sm.stream_closed_by = StreamClosedBy.SEND_END_STREAM
        sm.state = StreamState.CLOSED
        return
    sm.process_input(StreamInputs.SEND_HEADERS)
    sm.process_input(StreamInputs.SEND_DATA)
    sm.process_input(StreamInputs.SEND_HEADERS)
    sm.process_input(StreamInputs.SEND_END_STREAM)


def _between_frames(h2c: H2Connection) -> bool:
    """Whether h2 holds no part of a frame and no header block waiting for its CONTINUATION:
    the next bytes it would read begin a frame of their own."""
    incoming: Any = h2c.incoming_buffer
    return not incoming._data and not incoming._headers_buffer


def quiet_receive(h2c: H2Connection) -> None:
    """This connection's ``_receive_frame``: h2's (4.4.1) without the ``repr()`` of each
    frame made for its trace log, when that log is h2's ``DummyLogger`` (else h2's own)."""
    if h2c.config.logger.__class__ is not DummyLogger:
        return
    conn: Any = h2c
    table: dict[Any, Any] = conn._frame_dispatch_table
    prepare = conn._prepare_for_sending

    def receive_frame(frame: Frame) -> list[Event]:
        events: list[Event]
        try:
            frames, events = table[frame.__class__](frame)
        except StreamClosedError as e:
            if h2c._stream_is_closed_by_reset(e.stream_id):  # pyright: ignore[reportPrivateUsage]
                f = RstStreamFrame(e.stream_id)
                f.error_code = e.error_code
                prepare([f])
                events = cast("list[Event]", cast(Any, e)._events)
            else:
                raise
        except StreamIDTooLowError as e:
            if h2c._stream_is_closed_by_reset(e.stream_id):  # pyright: ignore[reportPrivateUsage]
                f = RstStreamFrame(e.stream_id)
                f.error_code = ErrorCodes.STREAM_CLOSED
                prepare([f])
                events = []
            elif h2c._stream_is_closed_by_end(e.stream_id):  # pyright: ignore[reportPrivateUsage]
                raise StreamClosedError(e.stream_id) from e
            else:
                raise
        else:
            prepare(frames)
        return events

    conn._receive_frame = receive_frame


def indexed_only(block: bytes, dynamic: int) -> bool:
    """Whether an HPACK header block is indexed fields alone, each naming an entry the
    tables hold (``dynamic``: entries in the dynamic table): decoding it changes no state."""
    i, n = 0, len(block)
    if not n:
        return False
    top = _STATIC_ENTRIES + dynamic
    while i < n:
        b = block[i]
        i += 1
        if not b & 0x80:
            return False
        index = b & 0x7F
        if index == 0x7F:
            shift = 0
            while True:
                if i >= n or shift > 21:
                    return False
                c = block[i]
                i += 1
                index += (c & 0x7F) << shift
                shift += 7
                if not c & 0x80:
                    break
        if index == 0 or index > top:
            return False
    return True


def refuse_streams_past(h2c: Any, limit: int) -> None:
    """A HEADERS frame that would open stream ``limit + 1`` is answered RST_STREAM
    (REFUSED_STREAM), a stream error as RFC 9113 5.1.2 allows and nginx does, where h2
    would close the whole connection. Its header block is still decoded, keeping HPACK's
    state in step with the client's."""
    table: dict[Any, Any] = h2c._frame_dispatch_table  # pyright: ignore[reportPrivateUsage]
    original = table[HeadersFrame]

    def receive(frame: HeadersFrame) -> Any:
        sid = frame.stream_id
        if (
            len(h2c.streams) >= limit  # else fewer open (h2 counts them by walking them all)
            and sid not in h2c.streams
            and sid > h2c.highest_inbound_stream_id
            and sid % 2 == 1
            and h2c.open_inbound_streams >= limit
        ):
            _decode_headers(h2c.decoder, frame.data)
            h2c.highest_inbound_stream_id = sid
            h2c._closed_streams[sid] = StreamClosedBy.SEND_RST_STREAM  # pyright: ignore[reportPrivateUsage]
            rst = RstStreamFrame(sid)
            rst.error_code = ErrorCodes.REFUSED_STREAM
            return [rst], []
        return original(frame)

    table[HeadersFrame] = receive
