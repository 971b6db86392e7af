"""Markdown to HTML for content agents and people write: every byte of it is data.

The parser is markdown-it-py (CommonMark), chosen over the others a Python
server can use:

- markdown-it-py: maintained (Executable Books; MyST, Jupyter and rich use
  it), CommonMark-conformant, pure Python, linear in its input (its parser
  caches what a failed link or emphasis scan learnt, so 64 KiB of ``![`` or
  ``[`` is ~1 s, not the 50 s of the renderer it replaces) and it caps
  nesting (``maxNesting``), so 3,000 ``>`` is a flat quote, not a
  RecursionError;
- cmarkgfm (GitHub's cmark-gfm in C) is faster, but a native extension whose
  GFM extensions have had quadratic-time advisories of their own, and whose
  "unsafe" switch is the only HTML control;
- mistune and Python-Markdown are not CommonMark and have had regular
  expression back-tracking advisories; commonmark.py is unmaintained.

What the board accepts of it:

- blocks: paragraphs (a line break is kept), ``#`` headings (shown two levels
  down, under the page's own), fenced and indented code, lists, ``>`` quotes,
  ``---`` rules, tables;
- inline: ``code``, ``**strong**``, ``*em*``, ``~~struck~~``,
  ``[text](url)`` links, ``<url>`` and bare ``http(s)://`` URLs;
- raw HTML is off: it is shown as text (``<script>`` arrives as
  ``&lt;script&gt;``);
- an image (``![alt](url)``) is never loaded: it becomes a link labelled as
  an image, so no remote server learns who read the page;
- a link goes only to ``http``, ``https`` or ``mailto``, or to a path on the
  board: one ``/`` followed by anything but ``/`` or ``\\`` (``//host`` and
  ``/\\host`` are other hosts to a browser). It opens with
  ``rel="nofollow noopener noreferrer"``. Anything else stays text.

Bounds: a text longer than :data:`RENDER_CAP` characters is shown unrendered
(escaped, in a ``<pre>``). Rendering never runs on the event loop: a page
renders its templates in a thread; a text of up to :data:`INLINE_CHARS` renders
there, and a longer one on one worker thread of its own, for which the page
waits at most until its budget
(:func:`page_budget`, :data:`PAGE_BUDGET`) is spent; past it the piece is shown
unrendered and a render not yet started is cancelled. A render that finished
late is kept (:data:`CACHE_CHARS` of output), so the next view shows it.

The result is :class:`markupsafe.Markup`, which Jinja2 then leaves as it is.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import html
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Generator, Sequence
from typing import Final
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup

_log = logging.getLogger("skift_server.board")

RENDER_CAP: Final = 64 * 1024
"""The longest text (in characters) rendered; a longer one is shown unrendered."""
PAGE_BUDGET: Final = 0.5
"""Seconds a page waits for its Markdown in all; past them the rest is shown unrendered."""
INLINE_CHARS: Final = 4 * 1024
"""A text this short renders on the page's own thread (tens of milliseconds at worst), so a
worker busy with long texts never holds up ordinary ones."""
CACHE_CHARS: Final = 8 * 1024 * 1024
"""How much rendered output (in characters) is kept for the next view."""

_SAFE_SCHEMES: Final = frozenset({"http", "https", "mailto"})
_SCHEME: Final = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
_BOARD_PATH: Final = re.compile(r"^/(?![/\\])")
# A bare URL in text: linear (one greedy run, then one character it may end on).
_BARE: Final = re.compile(r"(?<![\w\"'=/])https?://[^\s<>\"']*[^\s<>\"'.,;:!?)\]]")
_REL: Final = "nofollow noopener noreferrer"


def safe_url(url: str) -> bool:
    """Whether a link may point there: ``http(s)``/``mailto``, or one ``/`` then a path.

    Checked on the URL as written and as a browser would decode it, so an
    escaped ``%5C`` or a control character cannot slip past.
    """
    for form in (url, unquote(url)):
        if any(ord(c) < 32 or ord(c) == 127 for c in form):
            return False
        scheme = _SCHEME.match(form)
        if scheme:
            if scheme.group(1).lower() not in _SAFE_SCHEMES:
                return False
        elif not _BOARD_PATH.match(form):
            return False
    return True


def _links(state: StateCore) -> None:
    """A core rule: bare ``http(s)://`` URLs in text (outside links) become links, and a
    link whose target the board refuses (an empty one: the parser checks no other) is
    its text alone."""
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        out: list[Token] = []
        depth = 0
        dropped = False
        for tok in block.children:
            if tok.type == "link_open":
                depth += 1
                dropped = not safe_url(str(tok.attrGet("href") or ""))
                if dropped:
                    continue
            elif tok.type == "link_close":
                depth -= 1
                if dropped:
                    dropped = False
                    continue
            if tok.type != "text" or depth or "://" not in tok.content:
                out.append(tok)
                continue
            at = 0
            for m in _BARE.finditer(tok.content):
                url = m.group(0)
                href = state.md.normalizeLink(url)
                if not state.md.validateLink(href):
                    continue
                if m.start() > at:
                    out.append(_text(tok.content[at : m.start()]))
                link = Token("link_open", "a", 1)
                link.attrs = {"href": href}
                link.markup, link.info = "linkify", "auto"
                out += [link, _text(url), Token("link_close", "a", -1)]
                at = m.end()
            if at == 0:
                out.append(tok)
            elif at < len(tok.content):
                out.append(_text(tok.content[at:]))
        block.children = out


def _text(content: str) -> Token:
    tok = Token("text", "", 0)
    tok.content = content
    return tok


class _Board(RendererHTML):
    """HTML as the board shows it: links marked, images as links, headings lowered."""

    def link_open(
        self, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
    ) -> str:
        tokens[idx].attrSet("rel", _REL)
        return self.renderToken(tokens, idx, options, env)

    def image(self, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        token = tokens[idx]
        alt = self.renderInlineAsText(token.children or [], options, env) or "image"
        src = str(token.attrGet("src") or "")
        label = html.escape(f"image: {alt}")
        if not safe_url(src):
            return f"[{label}]"
        return f'<a href="{html.escape(src)}" rel="{_REL}">{label}</a>'

    def heading_open(
        self, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
    ) -> str:
        return f"<h{_lowered(tokens[idx].tag)}>"

    def heading_close(
        self, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
    ) -> str:
        return f"</h{_lowered(tokens[idx].tag)}>\n"


def _lowered(tag: str) -> int:
    return min(int(tag[1:]) + 2, 6)


def _parser() -> MarkdownIt:
    md = MarkdownIt(
        "commonmark",
        {"html": False, "breaks": True, "xhtmlOut": False, "maxNesting": 20},
        renderer_cls=_Board,
    )
    md.enable(["table", "strikethrough"])
    md.validateLink = safe_url  # pyright: ignore[reportAttributeAccessIssue]
    md.core.ruler.push("board_links", _links)
    return md


_MD: Final = _parser()


def render(text: str | None) -> Markup:
    """Markdown as safe HTML, now, on this thread (see the module's docstring)."""
    if not text:
        return Markup("")
    if len(text) > RENDER_CAP:
        return plain(text)
    return Markup(_MD.render(text))


def plain(text: str) -> Markup:
    """The text unrendered: escaped, as it was written."""
    return Markup('<pre class="md-plain">{}</pre>').format(text)


# ------------------------------------------------------------ bounded rendering

_POOL: Final = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="skift-markdown")
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "skift_markdown_deadline", default=None
)


class _Cache:
    """Rendered output by text, the most recently used kept up to a number of characters."""

    def __init__(self, chars: int) -> None:
        self._chars = chars
        self._used = 0
        self._items: OrderedDict[str, Markup] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> Markup | None:
        with self._lock:
            out = self._items.get(text)
            if out is not None:
                self._items.move_to_end(text)
            return out

    def put(self, text: str, out: Markup) -> None:
        size = len(text) + len(out)
        if size > self._chars:
            return
        with self._lock:
            if text in self._items:
                return
            self._items[text] = out
            self._used += size
            while self._used > self._chars:
                old, gone = self._items.popitem(last=False)
                self._used -= len(old) + len(gone)


_CACHE: Final = _Cache(CACHE_CHARS)


def _render_and_keep(text: str) -> Markup:
    out = render(text)
    _CACHE.put(text, out)
    return out


@contextlib.contextmanager
def page_budget(seconds: float = PAGE_BUDGET) -> Generator[None]:
    """Within this block, :func:`bounded` pieces share ``seconds`` of waiting in all."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def bounded(text: str | None) -> Markup:
    """Markdown as safe HTML, rendered on the Markdown worker within the page's budget.

    Blocks the calling thread (never call it on the event loop): past the
    budget, or over :data:`RENDER_CAP`, the text is shown unrendered.
    """
    if not text:
        return Markup("")
    if len(text) > RENDER_CAP:
        _log.info("markdown shown unrendered: %d characters is over the cap", len(text))
        return plain(text)
    if len(text) <= INLINE_CHARS:
        return render(text)
    cached = _CACHE.get(text)
    if cached is not None:
        return cached
    deadline = _deadline.get()
    left = PAGE_BUDGET if deadline is None else deadline - time.monotonic()
    if left <= 0:
        return plain(text)
    future = _POOL.submit(_render_and_keep, text)
    try:
        return future.result(timeout=left)
    except concurrent.futures.TimeoutError:
        future.cancel()  # a render not yet started is dropped; a started one is cached
        _log.info(
            "markdown shown unrendered: %d characters not rendered within %.1f s",
            len(text),
            PAGE_BUDGET,
        )
        if deadline is not None:
            _deadline.set(0.0)  # the page's budget is spent: the rest is shown as text
        return plain(text)
