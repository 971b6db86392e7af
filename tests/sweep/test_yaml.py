"""The YAML subset: what the writer emits the reader reads back, and the reader is the seed's.

Round trips over random documents (any depth of maps, lists, unicode and
awkward keys), and the one-pass reader checked against a plain recursive
reading of the seed's grammar on random, often hand-mangled, line sequences:
both give the same document, or both refuse it.
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from skift.sweep import emit_document, parse_document

keys = st.one_of(
    st.sampled_from(["schema_version", "lease", "items", "status", "a.b-c_d", "1st", "x y", "a:b", "", "true", "#c", "é"]),
    st.text(max_size=6),
)  # fmt: skip
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(doc=st.dictionaries(keys, values, min_size=1, max_size=5))
def test_what_the_writer_emits_the_reader_reads_back(doc: dict[str, Any]) -> None:
    text = emit_document(doc)
    back = parse_document(text)
    assert json.dumps(back, sort_keys=True) == json.dumps(doc, sort_keys=True)
    assert emit_document(back) == text


def _recursive(text: str) -> dict[str, Any]:
    """The seed's reader, written plainly: recursive block mappings over non-blank lines."""
    rows = [
        (len(r) - len(r.lstrip(" ")), r.strip())
        for r in text.split("\n")
        if r.strip() and not r.strip().startswith("#")
    ]
    pos = 0

    def value(rest: str) -> Any:
        rest = rest.strip()
        if rest in ("null", "true", "false"):
            return {"null": None, "true": True, "false": False}[rest]
        if rest[0] in '"{[':
            return json.loads(rest)
        if rest[0] == "-" or rest[0].isdigit():
            try:
                return float(rest) if any(c in rest for c in ".eE") else int(rest)
            except ValueError:
                pass
        return rest

    def mapping(indent: int) -> dict[str, Any]:
        nonlocal pos
        out: dict[str, Any] = {}
        while pos < len(rows):
            cur, content = rows[pos]
            if cur < indent:
                break
            pos += 1
            if cur > indent:
                continue
            if content.startswith('"'):
                key, end = json.JSONDecoder().raw_decode(content)
                if not content[end:].startswith(":"):
                    raise ValueError("no colon")
                rest = content[end + 1 :]
            else:
                if ":" not in content:
                    raise ValueError("no colon")
                key, rest = content.split(":", 1)
            if rest.strip():
                out[key] = value(rest)
            elif pos < len(rows) and rows[pos][0] > indent:
                out[key] = mapping(rows[pos][0])
            else:
                out[key] = {}
        return out

    return mapping(rows[0][0]) if rows else {}


line = st.tuples(
    st.sampled_from([0, 0, 2, 2, 4, 4, 6, 1, 3]),
    st.sampled_from(
        ["a:", "b:", 'k: "v"', "n: 12", "f: -1.5e3", "x: [1, {\"b\": 2}]", "e: {}",
         '"q:k": null', '"q": true', "bare: hello world", "nocolon", "# comment", "",
         'bad: "open', 'two: "a" "b"', "i: 1_000", "inf: inf", "d: -", "t: \ttab"]
    ),
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(line, max_size=12))
def test_the_one_pass_reader_reads_as_the_grammar_says(lines: list[tuple[int, str]]) -> None:
    text = "\n".join(" " * indent + content for indent, content in lines)
    try:
        expected: Any = _recursive(text)
    except ValueError:
        expected = "refused"
    try:
        got: Any = parse_document(text)
    except ValueError:
        got = "refused"
    if isinstance(expected, dict) and isinstance(got, dict):
        assert json.dumps(got, default=str) == json.dumps(expected, default=str)
    else:
        assert got == expected


def test_non_finite_floats_take_the_reference_spelling() -> None:
    text = emit_document({"schema_version": 1, "a": math.inf, "b": -math.inf})
    assert text == "schema_version: 1\na: inf\nb: -inf\n"
    # read back as the bare words they are (the reference reader does the same)
    assert parse_document(text) == {"schema_version": 1, "a": "inf", "b": "-inf"}
