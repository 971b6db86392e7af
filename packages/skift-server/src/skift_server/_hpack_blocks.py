"""A connection's HPACK decoder that remembers the header blocks which neither read nor
change its dynamic table (``_h2``: every request block of the remote client), so that a
block sent again is answered from memory with HPACK's checks kept."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, cast

from hpack import Decoder, HPACKDecodingError
from hpack.hpack import decode_integer
from hpack.table import HeaderTable

__all__ = ["BlockDecoder", "remember_blocks", "stateless_block"]

_STATIC_ENTRIES: Final = HeaderTable.STATIC_TABLE_LENGTH

_BLOCKS_AT_MOST: Final = 16
"""Header blocks a connection's decoder remembers (a client sends the same few again)."""
_BLOCK_BYTES_AT_MOST: Final = 1024
"""The largest header block remembered (a request's is ~100 bytes): what one connection
holds in memory for this stays small whatever its client sends."""


class BlockDecoder(Decoder):
    """HPACK's decoder, remembering what it decoded from a header block that neither reads
    nor changes the dynamic table (:func:`stateless_block`: static entries and literals
    not indexed). Such a block means the same whatever the table holds, so the next time
    it comes (a client's request headers, made once per route: ``_client_h2``) its header
    list is answered from memory, without decoding it again. The decoder's checks stay:
    the header list's size against ``max_header_list_size`` and the table's size against
    the largest allowed (a block answered from memory left the table as it was)."""

    _blocks: dict[tuple[bytes, bool], tuple[list[Any], int]]
    _texts: dict[tuple[bytes, str], list[Any]]

    def decode(self, data: bytes, raw: bool = False) -> Any:
        key = (data, raw)
        hit = self._blocks.get(key) if data.__class__ is bytes else None
        if hit is not None and hit[1] <= self.max_header_list_size:
            self._assert_valid_table_size()
            return list(hit[0])
        headers = super().decode(data, raw)
        if data.__class__ is bytes and len(data) <= _BLOCK_BYTES_AT_MOST and stateless_block(data):
            if len(self._blocks) >= _BLOCKS_AT_MOST:
                self._blocks.clear()
                self._texts.clear()
            got = list(headers)
            size = sum(32 + _octets(k) + _octets(v) for k, v in got)  # as HPACK counts
            self._blocks[key] = (got, size)
        return headers

    def text(self, block: bytes, encoding: str, headers: Iterable[Any]) -> list[Any]:
        """``headers`` (what :meth:`decode` just answered for ``block``, raw) with their
        names and values decoded with ``encoding``, as h2 hangs them on its event
        (``h2.stream._decode_headers``: each tuple's own class); made once for a block
        this decoder remembers."""
        known = (block, True) in self._blocks
        key = (block, encoding)
        got = self._texts.get(key) if known else None
        if got is None:
            got = [h.__class__(h[0].decode(encoding), h[1].decode(encoding)) for h in headers]
            if known:
                self._texts[key] = got
        return list(got)


def _octets(value: bytes | str) -> int:
    return len(value) if isinstance(value, bytes) else len(value.encode("utf-8"))


def remember_blocks(decoder: Decoder) -> None:
    """Make h2's ``decoder`` a :class:`BlockDecoder` (its state kept: the same object)."""
    decoder.__class__ = BlockDecoder
    cast(BlockDecoder, decoder)._blocks = {}  # pyright: ignore[reportPrivateUsage]
    cast(BlockDecoder, decoder)._texts = {}  # pyright: ignore[reportPrivateUsage]


def _hpack_int(block: bytes, i: int, prefix: int) -> tuple[int, int]:
    """The HPACK integer at ``block[i]`` with a ``prefix``-bit prefix (hpack's own reading),
    and where it ends; (-1, i) if it is cut short."""
    try:
        value, used = decode_integer(memoryview(block)[i:], prefix)
    except HPACKDecodingError:
        return -1, i
    return value, i + used


def stateless_block(block: bytes) -> bool:
    """Whether an HPACK header block reads no dynamic table entry and adds none (RFC 7541:
    indexed fields of the static table, literals without indexing or never indexed whose
    name is a literal or the static table's, no table size update): it decodes to the
    same header list whatever the table holds, and leaves the table as it was."""
    i, n = 0, len(block)
    while i < n:
        b = block[i]
        if b & 0x80:  # an indexed field
            index, i = _hpack_int(block, i, 7)
            if index <= 0 or index > _STATIC_ENTRIES:
                return False
            continue
        if b & 0x60:  # a literal added to the table, or a table size update
            return False
        index, i = _hpack_int(block, i, 4)  # a literal not indexed, or never indexed
        if index < 0 or index > _STATIC_ENTRIES:
            return False
        for _ in range(1 if index else 2):  # the value, and first the name if a literal
            if i >= n:
                return False
            length, i = _hpack_int(block, i, 7)
            if length < 0 or i + length > n:
                return False
            i += length
    return i == n
