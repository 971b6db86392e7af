"""``skift ready``'s table and ``skift show``'s panel without rich, where rich's are plain text.

Into a pipe (no terminal, no width or colour variable, UTF-8) rich draws no colour,
and a table whose cells all fit, or a panel whose lines all fit, is simple text:
columns as wide as their widest cell, two spaces apart; a box of ``─ │`` around lines
padded to its width. These functions write exactly that, from the same cells
``skift_cli._render`` gives rich (``_facts``), and return False (rich draws it, as
before) whenever anything would need rich's judgement: a cell to wrap or crop, a
character other than printable ASCII (wide or combining characters, tabs, control
characters), text rich would read as markup or an emoji code, a leased node.
Importing rich and drawing with it was a third of ``skift show``'s start-up.
tests/cli/test_cli_plain.py draws the same views both ways and compares the bytes.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence

from . import _facts

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (skift show: a few ms)
if TYPE_CHECKING:
    from typing import Any

    import skift

_PRINTABLE = re.compile(r"[ -~]*")
_BRACKETS = re.compile(r"[\[\]\\]")


def _marked(text: str) -> bool:
    """Whether rich may read ``text``, given as a ``str``, as more than its characters: a
    tag or an escape (``[``, ``]``, ``\\``) or an emoji code (``:name:``, two colons). A
    single colon (``more: --page ...``, ``1 unresolved: ...``) is text."""
    return _BRACKETS.search(text) is not None or text.count(":") > 1


def width() -> int | None:
    """The width rich renders at into this process's stdout, or None where rich may draw
    more than plain text (a terminal, a variable that changes width, colour or theme, an
    output that is not UTF-8)."""
    from . import HELP_ENV

    out = sys.stdout
    if any(name in os.environ for name in (*HELP_ENV, "TERM_PROGRAM_JUPYTER")):
        return None
    try:
        if out.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    encoding = (getattr(out, "encoding", None) or "").lower().replace("_", "-")
    if encoding not in ("utf-8", "utf8"):
        return None
    got: int | None = None
    for fd in (0, 1, 2):  # as rich's Console.size asks
        try:
            got = os.get_terminal_size(fd).columns
        except (AttributeError, ValueError, OSError):
            continue
        break
    return got or 80


def _plain(text: str) -> bool:
    return _PRINTABLE.fullmatch(text) is not None


def _text(pieces: Sequence[_facts.Piece]) -> str | None:
    """A cell's text, or None where rich may draw it otherwise."""
    out = ""
    for text, _style, markup in pieces:
        if not _plain(text) or (markup and _marked(text)):
            return None
        out += text
    return out


def _write(lines: list[str]) -> None:
    sys.stdout.write("".join(line + "\n" for line in lines))
    sys.stdout.flush()


def ready_table(page: skift.ReadyPage, cols: int) -> bool:
    """Write a page's table and footer as rich would into a pipe ``cols`` wide; False if
    rich must draw it."""
    heads, rows = _facts.node_rows(page.nodes, turn=True)
    cells: list[list[str]] = []
    for row in rows:
        texts = [_text(cell) for cell in row]
        if any(t is None for t in texts):
            return False
        cells.append([t or "" for t in texts])
    widths = [max([len(h.name), *(len(r[i]) for r in cells)]) for i, h in enumerate(heads)]
    if sum(widths) + 2 * (len(widths) - 1) > cols:
        return False  # rich shares the width out, wrapping titles: its own judgement
    lines: list[str] = []
    if cells:
        for row in ([h.name for h in heads], *cells):
            lines.append(
                "  ".join(
                    text.rjust(w) if h.right else text.ljust(w)
                    for text, w, h in zip(row, widths, heads, strict=True)
                )
            )
    footer = _facts.page_footer(page, what="ready work")
    if footer is not None:
        if not _plain(footer) or _marked(footer):
            return False
        lines.append(footer)
    _write(lines)
    return True


def node_panel(
    n: skift.NodeInfo,
    arts: Sequence[skift.ArtifactInfo],
    blockers: Sequence[str],
    cs: Sequence[Any],
    cols: int,
) -> bool:
    """Write ``skift show``'s panel and notes as rich would into a pipe ``cols`` wide;
    False if rich must draw them."""
    if n.lease is not None:
        return False
    title, grid, body = _facts.node_facts(n, blockers=blockers, artifacts=arts)
    inner = cols - 4
    if not _plain(title) or _marked(title) or len(title) + 2 > inner or inner < 10:
        return False
    labels: list[str] = []
    values: list[str] = []
    for label, pieces in grid:
        value = _text(pieces)
        if value is None:
            return False
        labels.append(label)
        values.append(value)
    lw = max(map(len, labels))
    content = [
        (label.ljust(lw) + "  " + value) for label, value in zip(labels, values, strict=True)
    ]
    for pieces in body:
        if len(pieces) == 1 and "\n" in pieces[0][0]:  # a body or a result: a Text of lines
            text, style, markup = pieces[0]
            if text.endswith("\n") or markup:
                return False
            split = [_text([(line, style, False)]) for line in text.split("\n")]
        else:
            split = [_text(pieces)]
        if any(t is None for t in split):
            return False
        content += [t or "" for t in split]
    if any(len(line) > inner or line != line.rstrip() for line in content):
        return False
    lines = ["╭─" + f" {title} ".ljust(cols - 4, "─") + "─╮"]
    lines += ["│ " + line.ljust(inner) + " │" for line in content]
    lines.append("╰" + "─" * (cols - 2) + "╯")
    for note in _facts.node_notes(n, cs):
        if not _plain(note) or _marked(note):
            return False
        lines.append(note)
    _write(lines)
    return True
