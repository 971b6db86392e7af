"""A blocking gRPC unary call and a protobuf reader in the standard library alone: the thin path.

``skift ready`` and ``skift show`` (``skift_cli._thin``) call the server through this
module so that their process imports no more than ``socket``: importing the
``skift_server`` package loads betterproto2 and its codec, and the ``hpack`` package
its Huffman state table and ``logging``, which together were most of the command's
start-up. It is ``skift_server._unary``'s wire (HTTP/2 as RFC 9113, the gRPC length
prefix and trailers) cut to what these reads need:

- HPACK (RFC 7541): requests are sent as literals that are never indexed, so the
  server's decoder keeps no state of ours; answers are decoded with the static and
  dynamic tables and the canonical Huffman code, rebuilt from its code lengths;
- anything this module does not take (TLS, a request larger than a frame, a server
  that goes away, an answer that is not one gRPC message, any status but OK) raises
  :class:`NotTaken`, and the caller runs the command through the full client, which
  retries, waits for a starting server or words the error. Both commands only read.

tests/cli/test_cli_wire.py checks the HPACK decoder against the ``hpack`` package and
the reader against the generated messages.
"""

from __future__ import annotations

# _socket, not socket: socket.py makes enum classes of its constants at import (~10% of
# the command's start-up), and a blocking stream is all this needs of it.
import _socket as socket
import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a few ms)
if TYPE_CHECKING:
    from typing import Any

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, CONTINUATION = 0, 1, 3, 4, 6, 7, 9
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY = 0x1, 0x1, 0x4, 0x8, 0x20
MAX_WINDOW = 2**31 - 1
MAX_FRAME = 16_384


class NotTaken(Exception):
    """Not a call, or not an answer, this module takes: the full client makes it."""


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return (
        len(payload).to_bytes(3, "big") + bytes((kind, flags)) + stream.to_bytes(4, "big") + payload
    )


# ------------------------------------------------------------------ HPACK (RFC 7541)

STATIC: tuple[tuple[str, str], ...] = (
    ("", ""),
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    *(
        (name, "gzip, deflate" if name == "accept-encoding" else "")
        for name in [
            "accept-charset",
            "accept-encoding",
            "accept-language",
            "accept-ranges",
            "accept",
            "access-control-allow-origin",
            "age",
            "allow",
            "authorization",
            "cache-control",
            "content-disposition",
            "content-encoding",
            "content-language",
            "content-length",
            "content-location",
            "content-range",
            "content-type",
            "cookie",
            "date",
            "etag",
            "expect",
            "expires",
            "from",
            "host",
            "if-match",
            "if-modified-since",
            "if-none-match",
            "if-range",
            "if-unmodified-since",
            "last-modified",
            "link",
            "location",
            "max-forwards",
            "proxy-authenticate",
            "proxy-authorization",
            "range",
            "referer",
            "refresh",
            "retry-after",
            "server",
            "set-cookie",
            "strict-transport-security",
            "transfer-encoding",
            "user-agent",
            "vary",
            "via",
            "www-authenticate",
        ]
    ),
)
"""Appendix A, from index 1 (index 0 is no entry)."""

# Appendix B's code lengths of the symbols 0..256; the code is canonical (each length's
# codes count up in symbol order), so the lengths make the codes.
_LENGTHS = bytes.fromhex(
    "0d171c1c1c1c1c1c1c181e1c1c1e1c1c1c1c1c1c1c1c1e1c1c1c1c1c1c1c1c1c060a0a0c0d06080b0a0a080b"
    "080606060505050606060606060607080f060c0a0d0607070707070707070707070707070707070707070707"
    "0807080d130d0e060f05060506050606060507070606060506070605050607070707070f0b0e0d1c14161414"
    "1616161716171717171718171818161718171717171516171617171816151416161717151716161815161717"
    "151516151716171714161616171616171a1a1413161716191a1a1a1b1b1a181913151a1b1b1a1b1815151a1a"
    "1c1b1b1b14181415161515171616191918181a171a1b1a1a1b1b1b1b1b1c1b1b1b1b1b1a1e"
)
_codes: dict[tuple[int, int], int] = {}


def huffman_codes() -> dict[tuple[int, int], int]:
    """(length, code) -> symbol, for all 257 symbols (256 is EOS)."""
    if not _codes:
        code, prev = -1, 0
        for sym in sorted(range(257), key=lambda s: (_LENGTHS[s], s)):
            n = _LENGTHS[sym]
            code = (code + 1) << (n - prev)
            prev = n
            _codes[n, code] = sym
    return _codes


def huffman_decode(data: bytes) -> bytes:
    codes = huffman_codes()
    out = bytearray()
    code = n = 0
    for byte in data:
        for shift in (7, 6, 5, 4, 3, 2, 1, 0):
            code = (code << 1) | ((byte >> shift) & 1)
            n += 1
            sym = codes.get((n, code)) if n >= 5 else None
            if sym is not None:
                if sym == 256:
                    raise NotTaken("EOS in a Huffman string")
                out.append(sym)
                code = n = 0
    if n > 7 or code != (1 << n) - 1:  # padding: the EOS code's first bits, fewer than 8
        raise NotTaken("bad Huffman padding")
    return bytes(out)


def _int(data: bytes, i: int, prefix: int) -> tuple[int, int]:
    mask = (1 << prefix) - 1
    value = data[i] & mask
    i += 1
    if value < mask:
        return value, i
    shift = 0
    while True:
        b = data[i]
        i += 1
        value += (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i
        if shift > 28:
            raise NotTaken("an HPACK integer too large")


def encode_int(value: int, prefix: int, first: int = 0) -> bytes:
    mask = (1 << prefix) - 1
    if value < mask:
        return bytes((first | value,))
    out = bytearray((first | mask,))
    value -= mask
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_headers(headers: list[tuple[str, str]]) -> bytes:
    """Literals never indexed with new names, strings as they are (no Huffman)."""
    out = bytearray()
    for name, value in headers:
        n, v = name.encode(), value.encode()
        out += b"\x10" + encode_int(len(n), 7) + n + encode_int(len(v), 7) + v
    return bytes(out)


class Hpack:
    """An HPACK decoder: the dynamic table of one connection's answers."""

    def __init__(self) -> None:
        self.table: list[tuple[str, str]] = []  # newest first
        self.size = 0
        self.max = 4096  # SETTINGS_HEADER_TABLE_SIZE: we never send another

    def _entry(self, index: int) -> tuple[str, str]:
        if 0 < index < len(STATIC):
            return STATIC[index]
        index -= len(STATIC)
        if 0 <= index < len(self.table):
            return self.table[index]
        raise NotTaken(f"HPACK index {index + len(STATIC)} is not in the tables")

    def _evict(self) -> None:
        while self.size > self.max:
            name, value = self.table.pop()
            self.size -= len(name.encode()) + len(value.encode()) + 32

    def _string(self, data: bytes, i: int) -> tuple[str, int]:
        huffman = data[i] & 0x80
        length, i = _int(data, i, 7)
        raw = data[i : i + length]
        if len(raw) != length:
            raise NotTaken("a truncated HPACK string")
        if huffman:
            raw = huffman_decode(raw)
        try:
            return raw.decode("utf-8"), i + length
        except UnicodeDecodeError:
            raise NotTaken("a header that is not UTF-8") from None

    def decode(self, data: bytes) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        i = 0
        try:
            while i < len(data):
                b = data[i]
                if b & 0x80:  # indexed
                    index, i = _int(data, i, 7)
                    out.append(self._entry(index))
                    continue
                if b & 0xE0 == 0x20:  # a dynamic table size update
                    size, i = _int(data, i, 5)
                    if size > 4096:
                        raise NotTaken("a table size past the one we allow")
                    self.max = size
                    self._evict()
                    continue
                indexing = b & 0x40
                index, i = _int(data, i, 6 if indexing else 4)
                if index:
                    name = self._entry(index)[0]
                else:
                    name, i = self._string(data, i)
                value, i = self._string(data, i)
                out.append((name, value))
                if indexing:
                    self.table.insert(0, (name, value))
                    self.size += len(name.encode()) + len(value.encode()) + 32
                    self._evict()
        except IndexError:
            raise NotTaken("a truncated header block") from None
        return out


# ------------------------------------------------------------------ the connection


class Connection:
    """An HTTP/2 connection to ``skift serve`` over a unix socket or plain TCP."""

    def __init__(self, url: str, *, token: str | None, timeout: float) -> None:
        self.timeout = timeout
        self.metadata: list[tuple[str, str]] = []
        self.address: str | tuple[str, int]
        if url.startswith("unix://"):
            # as urlsplit reads it (a netloc is the path's first part); an escape, a query
            # or a fragment: the full client
            path = url[7:] if url[7:8] == "/" else "/" + url[7:]
            if len(path) < 2 or any(c in path for c in "%?#") or not trusted_socket(path):
                raise NotTaken(url)
            self.address, self.family, self.authority = path, socket.AF_UNIX, "localhost"
        else:
            from urllib.parse import urlsplit

            parts = urlsplit(url)
            host, port = parts.hostname, parts.port
            if parts.scheme != "http" or not host or not port:
                raise NotTaken(url)
            self.address = (host, port)
            self.family = socket.AF_INET6 if ":" in host else socket.AF_INET
            self.authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            if token:
                self.metadata.append(("authorization", f"Bearer {token}"))
        self.sock: socket.socket | None = None
        self.buffer = bytearray()
        self.hpack = Hpack()
        self.next_stream = 1

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def call(self, method: str, request: bytes) -> bytes:
        """The answer's bytes to one unary call of ``/skift.v1.SkiftService/{method}``."""
        body = b"\x00" + len(request).to_bytes(4, "big") + request
        if len(body) > MAX_FRAME:
            raise NotTaken("a request larger than a frame")
        out = bytearray()
        if self.sock is None:
            try:
                self.sock = socket.socket(self.family, socket.SOCK_STREAM)
                self.sock.settimeout(self.timeout)
                self.sock.connect(self.address)
                if self.family != socket.AF_UNIX:
                    self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError as exc:
                raise NotTaken(exc) from exc
            out += PREFACE
            out += frame(SETTINGS, 0, 0, b"\x00\x02\x00\x00\x00\x00\x00\x04\x7f\xff\xff\xff")
            out += frame(8, 0, 0, (MAX_WINDOW - 65_535).to_bytes(4, "big"))
        stream = self.next_stream
        self.next_stream += 2
        seconds = self.timeout  # grpc-timeout as grpclib writes it
        wait = (
            f"{int(seconds)}S"
            if seconds > 10
            else f"{int(seconds * 1000)}m"
            if seconds > 0.01
            else f"{int(seconds * 1_000_000)}u"
        )
        block = b"\x83\x86" + encode_headers(  # :method POST, :scheme http
            [
                (":path", f"/skift.v1.SkiftService/{method}"),
                (":authority", self.authority),
                ("grpc-timeout", wait),
                ("te", "trailers"),
                ("content-type", "application/grpc"),
                ("user-agent", "skift-cli"),
                *self.metadata,
            ]
        )
        if len(block) > MAX_FRAME:
            raise NotTaken("headers larger than a frame")
        out += frame(HEADERS, END_HEADERS, stream, block)
        out += frame(DATA, END_STREAM, stream, body)
        try:
            self.sock.sendall(out)
            return self._answer(self.sock, stream)
        except OSError as exc:
            raise NotTaken(exc) from exc

    def _frame(self, sock: socket.socket) -> tuple[int, int, int, bytes]:
        buf = self.buffer
        while True:
            if len(buf) >= 9:
                length = int.from_bytes(buf[:3], "big")
                if len(buf) >= 9 + length:
                    kind, flags = buf[3], buf[4]
                    stream = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
                    payload = bytes(buf[9 : 9 + length])
                    del buf[: 9 + length]
                    return kind, flags, stream, payload
            got = sock.recv(1 << 16)
            if not got:
                raise NotTaken("the server closed the connection")
            buf += got

    def _answer(self, sock: socket.socket, stream: int) -> bytes:
        blocks: list[dict[str, str]] = []
        block: bytearray | None = None
        data = bytearray()
        ended = False
        while not ended or block is not None:
            kind, flags, sid, payload = self._frame(sock)
            if kind == SETTINGS and not flags & ACK:
                sock.sendall(frame(SETTINGS, ACK, 0))
            elif kind == PING and not flags & ACK:
                sock.sendall(frame(PING, ACK, 0, payload))
            elif kind == GOAWAY:
                raise NotTaken("the server closed the connection (GOAWAY)")
            elif sid != stream:
                continue
            elif kind == RST_STREAM:
                raise NotTaken("the server reset the call")
            elif kind == HEADERS or (kind == CONTINUATION and block is not None):
                if kind == HEADERS:
                    pad = payload[0] if flags & PADDED else 0
                    start = (1 if flags & PADDED else 0) + (5 if flags & PRIORITY else 0)
                    payload = payload[start : len(payload) - pad]
                    ended = ended or bool(flags & END_STREAM)
                    block = bytearray()
                assert block is not None
                block += payload
                if flags & END_HEADERS:
                    blocks.append(dict(self.hpack.decode(bytes(block))))
                    block = None
            elif kind == DATA:
                pad = payload[0] if flags & PADDED else 0
                data += payload[(1 if flags & PADDED else 0) : len(payload) - pad]
                ended = ended or bool(flags & END_STREAM)
        if not blocks or blocks[0].get(":status") != "200":
            raise NotTaken("not an HTTP 200 answer")
        if blocks[-1].get("grpc-status") != "0":
            raise NotTaken("a gRPC status other than OK")  # the full client words it
        if len(data) < 5 or data[0] != 0 or int.from_bytes(data[1:5], "big") != len(data) - 5:
            raise NotTaken("not one uncompressed gRPC message")
        return bytes(data[5:])


def trusted_socket(path: str) -> bool:
    """``skift_server._paths.check_socket_owner`` as a question: False where it would refuse
    (the full client then says why)."""
    me = os.geteuid()
    for target, follow in ((os.path.dirname(path) or ".", True), (path, False)):
        try:
            owner = os.stat(target, follow_symlinks=follow).st_uid
        except FileNotFoundError:
            return True
        except OSError:
            return False
        if owner not in (me, 0):
            return False
    return True


def default_socket() -> str:
    """``skift_server._paths.default_socket_path()``, as text."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, "skift", "skift.sock")
    standard = f"/run/user/{os.getuid()}"
    try:
        if os.path.isdir(standard) and os.stat(standard).st_uid == os.getuid():
            return f"{standard}/skift/skift.sock"
    except OSError:
        pass
    if os.geteuid() == 0:
        return "/run/skift/skift.sock"
    return f"/tmp/skift-{os.getuid()}/skift.sock"


# ------------------------------------------------------------------ protobuf


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise NotTaken("a varint past 64 bits")


def read(buf: bytes, repeated: tuple[int, ...] = ()) -> dict[int, Any]:
    """A message's fields by number: an int (varint), bytes (length-delimited, fixed), or
    for the numbers in ``repeated`` a list of them; a repeated scalar must not be packed."""
    out: dict[int, Any] = {}
    i, n = 0, len(buf)
    try:
        while i < n:
            key, i = _varint(buf, i)
            num, wire = key >> 3, key & 7
            if wire == 0:
                value, i = _varint(buf, i)
            elif wire == 2:
                size, i = _varint(buf, i)
                value = buf[i : i + size]
                i += size
            elif wire == 1:
                value, i = buf[i : i + 8], i + 8
            elif wire == 5:
                value, i = buf[i : i + 4], i + 4
            else:
                raise NotTaken(f"wire type {wire}")
            if num in repeated:
                out.setdefault(num, []).append(value)
            else:
                out[num] = value
    except IndexError:
        raise NotTaken("a truncated message") from None
    if i != n or not all(0 < k < 2**29 for k in out):
        raise NotTaken("a malformed message")
    return out


def signed(value: int) -> int:
    """An int64 (or int32, sent as ten bytes) from its varint."""
    return value - (1 << 64) if value >= 1 << 63 else value


def text(value: Any) -> str:
    """A string field's value."""
    if not isinstance(value, bytes):
        raise NotTaken("a string field of another wire type")
    return value.decode("utf-8")


def key(num: int, wire: int) -> bytes:
    return encode_int_varint((num << 3) | wire)


def encode_int_varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def string_field(num: int, value: str) -> bytes:
    raw = value.encode("utf-8")
    return key(num, 2) + encode_int_varint(len(raw)) + raw


def env_timeout(default: float) -> float | None:
    """``SKIFT_TIMEOUT`` as seconds, the default without it; None when it is not a plain
    positive number (the full client words that error). As ``skift_server._unary``'s."""
    raw = os.environ.get("SKIFT_TIMEOUT", "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if value > 0 and value == value and value != float("inf") else None
