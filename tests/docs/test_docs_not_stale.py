"""No page calls something planned, later or not yet built when it exists.

Each sentence-sized piece of docs/*.md and README.md (a prose paragraph, a
list item, a table row) that speaks of the future ("not yet", "planned",
"(later)", "not built", "does not exist yet"...) is read for the names it
puts in backticks; a name that exists (a ``skift`` command, a method of
``skift.LocalSkift``, a public name of skift or skift_server, a patch
operation, an MCP tool) fails the test, naming the page and line.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import click

import skift
import skift_server

ROOT = Path(__file__).resolve().parents[2]
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
FUTURE = re.compile(
    r"not yet (?:built|implemented|exist|available|supported|in the|there)|\bplanned\b|\(later\)|not built|(?:does|do) not exist yet|no process runs"
    r"|until the `?skift`? command gains|is not (?:built|implemented)",
    re.IGNORECASE,
)
NAME = re.compile(r"`([^`]+)`")
# Sentences that speak of the future and name something that exists, on purpose.
ALLOWED = {
    ("docs/python.md", "Refused"): "delegation is planned; Refused is what passing it raises now",
}


def _cli_paths() -> set[str]:
    from skift_cli._app import cli, load_all

    load_all()
    out: set[str] = set()

    def walk(cmd: click.Command, path: str) -> None:
        out.add(path)
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                walk(sub, f"{path} {name}")

    walk(cli, "skift")
    return out


def _existing() -> tuple[set[str], set[str]]:
    """(command paths, identifiers) that exist."""
    idents: set[str] = set()
    idents |= {n for n in dir(skift.LocalSkift) if not n.startswith("_")}
    idents |= set(skift.__all__) | set(skift_server.__all__)
    for name in skift.__all__:
        cls = getattr(skift, name)
        if isinstance(cls, type) and attrs.has(cls):
            for f in attrs.fields(cls):
                if f.name == "op" and isinstance(f.default, str):
                    idents.add(f.default)  # a patch operation: create_node, attach_artifact...
    idents |= {
        "ready", "claim", "heartbeat", "complete", "release", "gate", "patch", "get", "list",
        "explain", "comment", "search", "usage",
    }  # fmt: skip  # the MCP tools
    return _cli_paths(), idents


def _pieces(text: str) -> list[tuple[int, str]]:
    """(first line, text) of each paragraph, list item and table row."""
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    start = 0
    fenced = False
    for i, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        own_line = line.lstrip().startswith(("|", "- ", "* ", "#"))
        if not line.strip() or own_line:
            if buf:
                out.append((start, " ".join(buf)))
                buf = []
            if own_line:
                out.append((i, line))
            continue
        if not buf:
            start = i
        buf.append(line)
    if buf:
        out.append((start, " ".join(buf)))
    return out


def _sentences(piece: str) -> list[str]:
    return re.split(r"(?<=[.;!?])\s+(?=[A-Z`(])", piece)


def _exists(name: str, paths: set[str], idents: set[str]) -> bool:
    name = name.strip().rstrip("…").strip()
    if name.startswith("skift "):
        words = [w for w in name.split() if re.fullmatch(r"[a-z][a-z-]*", w)]
        return " ".join(words) in paths and len(words) > 1
    m = re.fullmatch(r"(?:skift(?:_server)?\.|sk\.)?([A-Za-z_][A-Za-z0-9_]*)(?:\(.*\))?", name)
    return bool(m) and m.group(1) in idents


def test_no_page_calls_planned_what_exists() -> None:
    paths, idents = _existing()
    stale: list[str] = []
    for page in DOCS:
        for line, piece in _pieces(page.read_text(encoding="utf-8")):
            for sentence in _sentences(piece):
                if not FUTURE.search(sentence):
                    continue
                for name in NAME.findall(sentence):
                    allowed = (str(page.relative_to(ROOT)), name) in ALLOWED
                    if _exists(name, paths, idents) and not allowed:
                        where = f"{page.relative_to(ROOT)}:{line}"
                        stale.append(f"{where}: `{name}` exists: {sentence[:140]}")
    assert not stale, "pages call existing things planned or not yet built:\n" + "\n".join(stale)


def test_the_check_catches_a_stale_sentence() -> None:
    paths, idents = _existing()
    text = "Artifacts do not exist yet: `attach_artifact` will come.\n\n`skift serve` is planned."
    flagged = [
        name
        for _, piece in _pieces(text)
        for sentence in _sentences(piece)
        if FUTURE.search(sentence)
        for name in NAME.findall(sentence)
        if _exists(name, paths, idents)
    ]
    assert flagged == ["attach_artifact", "skift serve"]
