"""``skift ready``'s table and ``skift show``'s panel written without rich are rich's bytes.

``skift_cli._plain`` writes them where rich would draw plain text (a pipe): each case
here is drawn by rich (as ``_render`` draws it into a pipe, at the same width) and by
``_plain``; where ``_plain`` writes, the bytes are the same, and where it declines
(wrapping, wide characters, markup, a lease) rich draws. The common cases are written
plainly (so the comparison is not vacuous).
"""

from __future__ import annotations

import functools
import io
import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from rich.console import Console

import skift
from skift_cli import _plain, _render

NOW = datetime.now(UTC)

TITLES = (
    "Write the parser",
    "node 1",
    "A title long enough that a table of it has to wrap somewhere in eighty columns",
    "Fix: the login [urgent]",
    "naïve café",
    "数据 pipeline",
    "tab\there",
    "x" * 74,
    "Fix: the login",  # one colon: text
    "see :x: and :smile:",  # emoji codes: rich's to read
)
BODIES = ("", "one line", "first\n\nthird", "ends\n", "y" * 90, "trailing  ", "a [b] :c:")
LABELS: tuple[tuple[str, ...], ...] = ((), ("backend",), ("ui", "research", "frontend"))


def node(i: int, **over: Any) -> skift.NodeInfo:
    fields: dict[str, Any] = {
        "ref": f"proj#{i + 1}",
        "id": f"01J{i:023d}",
        "number": i + 1,
        "project": "proj",
        "title": TITLES[i % len(TITLES)],
        "body": "",
        "kind": ("task", "bug", "spike")[i % 3],
        "status": skift.Status.OPEN,
        "priority": ("p0", "p1", "p2", "p3", "p4")[i % 5],
        "parent": None,
        "labels": LABELS[i % len(LABELS)],
        "assignee_kind": None,
        "assignee": None,
        "context_id": "d1e05d53-b50e-4806-bd9d-d2fa03ba41e6",
        "created_at": NOW - timedelta(days=3 + i),
        "blocked": False,
        "held": False,
        "claimed": False,
        "ready": True,
    }
    fields.update(over)
    return skift.NodeInfo(**fields)


def rich_bytes(draw: Any, width: int) -> str:
    buf = io.StringIO()
    before = _render._out  # pyright: ignore[reportPrivateUsage]
    _render._out = Console(file=buf, width=width, highlight=False, soft_wrap=True)  # pyright: ignore[reportPrivateUsage]
    try:
        draw()
    finally:
        _render._out = before  # pyright: ignore[reportPrivateUsage]
    return buf.getvalue()


def plain_bytes(draw: Any, capsys: pytest.CaptureFixture[str]) -> str | None:
    capsys.readouterr()
    wrote = draw()
    got = capsys.readouterr().out
    if not wrote:
        assert got == ""
        return None
    return got


def pages() -> list[skift.ReadyPage]:
    out: list[skift.ReadyPage] = []
    # a page token as the server writes them: longer than any line, a colon before it
    token = "eyJtIjoiUmVhZHkiLCJjIjoiW1wicmVhZHlcIixcImI2YmVhZWU1ZTk1YWJiODhhNzBkNTdmMTg3NGU0" * 3
    nexts = (None, "eyJtIjoiUmVhZHkifQ", token)
    for count, held, nxt in itertools.product((0, 1, 3, 8), (0, 120), nexts):
        nodes = tuple(
            node(i, assignee_kind="user" if i == 2 else None, ready=i != 5, held=i == 5)
            for i in range(count)
        )
        out.append(
            skift.ReadyPage(
                nodes=nodes, held_count=held, next_page=nxt, held_count_exact=held != 120
            )
        )
    # short titles only: every row fits
    out.append(
        skift.ReadyPage(
            nodes=tuple(node(i, title=f"short {i}") for i in range(12)),
            held_count=0,
            next_page=None,
        )
    )
    return out


@pytest.mark.parametrize("width", [80, 100, 132])
def test_ready_tables(width: int, capsys: pytest.CaptureFixture[str]) -> None:
    written = 0
    for pg in pages():

        def with_rich(pg: skift.ReadyPage = pg) -> None:
            if pg.nodes:
                _render.out().print(_render.node_table(pg.nodes, turn=True))
            _render.page_footer(pg, what="ready work")

        expected = rich_bytes(with_rich, width)
        got = plain_bytes(lambda pg=pg: _plain.ready_table(pg, width), capsys)
        if got is not None:
            written += 1
            assert got == expected, (pg, got, expected)
    assert written >= 4


def panels() -> list[tuple[skift.NodeInfo, list[Any], list[str], list[Any]]]:
    art = skift.ArtifactInfo(
        id="01JART",
        node="proj#1",
        name="report",
        description="",
        parts=(skift.TextPart(text="a short report"),),
        metadata={},
        author="ada",
        author_kind="user",
        created_at=NOW,
    )
    comment = skift.CommentInfo(
        id="c1",
        node="proj#1",
        node_title="t",
        author="ada",
        author_kind="user",
        body="why?",
        in_reply_to=None,
        created_at=NOW,
    )
    out: list[tuple[skift.NodeInfo, list[Any], list[str], list[Any]]] = []
    for i, body in enumerate(BODIES):
        for title in TITLES:
            out.append(
                (
                    node(i, title=title, body=body, body_author="ada", body_author_kind="user"),
                    [],
                    [],
                    [],
                )
            )
    out += [
        (
            node(
                1,
                status=skift.Status.DONE,
                result="done",
                result_author="bot",
                result_author_kind="agent",
                ready=False,
            ),
            [art],
            [],
            [],
        ),
        (node(2, blocked=True, ready=False), [], ["proj#1", "proj#9"], [comment]),
        (node(3, parent="proj#1", assignee_kind="user", assignee="ada"), [], [], [comment]),
        (node(4, held=True, ready=False), [], [], []),
        (node(5, kind="a:b:c"), [], [], []),
        (node(6, kind="a:b"), [], [], []),
        (node(7, blocked=True, ready=False), [], ["proj#1"], [comment, comment]),
    ]
    return out


@pytest.mark.parametrize("width", [80, 100, 60])
def test_show_panels(width: int, capsys: pytest.CaptureFixture[str]) -> None:
    from skift_cli import _shown

    written = 0
    for n, arts, blockers, cs in panels():

        def with_rich(n: Any = n, arts: Any = arts, blockers: Any = blockers, cs: Any = cs) -> None:
            # _shown.show's rich branch, as the full command line drew it before _plain
            _render.out().print(_render.node_panel(n, blockers=blockers, artifacts=arts))
            unresolved = sum(1 for c in cs if c.resolved_at is None)
            if cs:
                _render.out().print(
                    f"[dim]{len(cs)} comment(s), {unresolved} unresolved: "
                    f"'skift comments {n.ref}'[/dim]"
                )
            if n.status == "open" and not n.ready:
                _render.out().print(f"[dim]not ready: 'skift explain {n.ref}' says why[/dim]")

        expected = rich_bytes(with_rich, width)
        got = plain_bytes(
            functools.partial(_plain.node_panel, n, arts, blockers, cs, width), capsys
        )
        if got is not None:
            written += 1
            assert got == expected, (n, got, expected)
    assert written >= 8
    assert _shown is not None
