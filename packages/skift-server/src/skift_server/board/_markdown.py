"""Markdown to HTML for content agents and people write: every byte of it is data.

A small renderer of our own that escapes first and then recognises a safe
subset, so nothing in a body can become markup the board did not write:

- blocks: paragraphs, ``#`` headings (shown one level down, under the page's
  own), fenced code, indented code, ``-``/``*``/``+`` and ``1.`` lists,
  ``>`` quotes, ``---`` rules;
- inline: ``code``, ``**strong**``, ``*em*``/``_em_``, ``[text](url)``
  links and bare ``http(s)://`` URLs;
- raw HTML is shown as text (``<script>`` arrives as ``&lt;script&gt;``);
- an image (``![alt](url)``) is never loaded: it becomes a link labelled as
  an image, so no remote server learns who read the page;
- a link goes only to ``http``, ``https`` or ``mailto`` or a path on the
  board; it opens with ``rel="nofollow noopener noreferrer"``.

The result is :class:`markupsafe.Markup`, which Jinja2 then leaves as it is.
"""

from __future__ import annotations

import html
import re
from urllib.parse import urlsplit

from markupsafe import Markup

_FENCE = re.compile(r"^(```|~~~)\s*([\w+-]*)\s*$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s{0,3}[-*+]\s+(.*)$")
_ORDERED = re.compile(r"^\s{0,3}(\d{1,9})[.)]\s+(.*)$")
_QUOTE = re.compile(r"^\s{0,3}>\s?(.*)$")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")

# Inline patterns run over already-escaped text, so a match can only ever wrap
# escaped text in tags this module writes.
_CODE = re.compile(r"`([^`\n]+)`")
_IMAGE = re.compile(r"!\[([^\]\n]*)\]\(([^()\s]+)\)")
_LINK = re.compile(r"\[([^\]\n]+)\]\(([^()\s]+)\)")
_BARE = re.compile(r"(?<![\w\"'=/])(https?://[^\s<>\"']+[^\s<>\"'.,;:!?)\]])")
_STRONG = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_EM = re.compile(
    r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])|(?<!\w)_(?=\S)([^_\n]+?)(?<=\S)_(?!\w)"
)

_SAFE_SCHEMES = frozenset({"http", "https", "mailto"})
_SLOT = "\x00{}\x00"


def safe_url(escaped: str) -> str | None:
    """The URL (still escaped for an attribute) if it may be linked to, else None."""
    raw = html.unescape(escaped)
    if any(ord(c) < 32 for c in raw):
        return None
    parts = urlsplit(raw)
    if parts.scheme:
        return escaped if parts.scheme.lower() in _SAFE_SCHEMES else None
    if raw.startswith("//"):
        return None  # a scheme-relative URL is another host
    return escaped if raw.startswith(("/", "#")) else None


def _a(url: str, text: str) -> str:
    return f'<a href="{url}" rel="nofollow noopener noreferrer">{text}</a>'


def inline(text: str) -> str:
    """One escaped run of inline markdown (the text must not be escaped yet)."""
    slots: list[str] = []

    def keep(fragment: str) -> str:
        slots.append(fragment)
        return _SLOT.format(len(slots) - 1)

    out = html.escape(text, quote=True)
    out = _CODE.sub(lambda m: keep(f"<code>{m.group(1)}</code>"), out)

    def image(m: re.Match[str]) -> str:
        alt, url = m.group(1) or "image", m.group(2)
        ok = safe_url(url)
        label = f"image: {alt}"
        return keep(_a(ok, label) if ok else f"[{label}]")

    def link(m: re.Match[str]) -> str:
        ok = safe_url(m.group(2))
        return keep(_a(ok, m.group(1)) if ok else m.group(1))

    out = _IMAGE.sub(image, out)
    out = _LINK.sub(link, out)
    out = _BARE.sub(lambda m: keep(_a(m.group(1), m.group(1))), out)
    out = _STRONG.sub(r"<strong>\1</strong>", out)
    out = _EM.sub(lambda m: f"<em>{m.group(1) or m.group(2)}</em>", out)
    return re.sub("\x00(\\d+)\x00", lambda m: slots[int(m.group(1))], out)


def render(text: str | None) -> Markup:
    """Markdown as safe HTML (see the module's docstring)."""
    if not text:
        return Markup("")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out: list[str] = []
    para: list[str] = []
    i = 0

    def flush() -> None:
        if para:
            out.append("<p>" + "<br>".join(inline(p) for p in para) + "</p>")
            para.clear()

    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            flush()
            body: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].startswith(fence.group(1)):
                body.append(lines[i])
                i += 1
            i += 1
            out.append("<pre><code>" + html.escape("\n".join(body)) + "</code></pre>")
            continue
        if not line.strip():
            flush()
            i += 1
            continue
        if line.startswith(("    ", "\t")) and not para:
            body = []
            while i < len(lines) and (lines[i].startswith(("    ", "\t")) or not lines[i].strip()):
                body.append(lines[i][4:] if lines[i].startswith("    ") else lines[i][1:])
                i += 1
            out.append("<pre><code>" + html.escape("\n".join(body).rstrip("\n")) + "</code></pre>")
            continue
        heading = _HEADING.match(line)
        if heading:
            flush()
            level = min(len(heading.group(1)) + 2, 6)
            out.append(f"<h{level}>{inline(heading.group(2))}</h{level}>")
            i += 1
            continue
        if _RULE.match(line):
            flush()
            out.append("<hr>")
            i += 1
            continue
        if _QUOTE.match(line):
            flush()
            quoted: list[str] = []
            while i < len(lines) and (m := _QUOTE.match(lines[i])):
                quoted.append(m.group(1))
                i += 1
            out.append(f"<blockquote>{render(chr(10).join(quoted))}</blockquote>")
            continue
        if _BULLET.match(line) or _ORDERED.match(line):
            flush()
            ordered = _BULLET.match(line) is None
            pattern = _ORDERED if ordered else _BULLET
            items: list[str] = []
            while i < len(lines):
                m = pattern.match(lines[i])
                if m:
                    items.append(m.group(m.lastindex or 1))
                elif lines[i].startswith("  ") and lines[i].strip() and items:
                    items[-1] += " " + lines[i].strip()
                else:
                    break
                i += 1
            tag = "ol" if ordered else "ul"
            out.append(f"<{tag}>" + "".join(f"<li>{inline(x)}</li>" for x in items) + f"</{tag}>")
            continue
        para.append(line)
        i += 1
    flush()
    return Markup("\n".join(out))
