"""A node's inputs read without claiming it, and a claim whose inputs are large.

``inputs(ref)`` gives what a claim of the node carries: its blocking
predecessors' results and artifacts, attributed. Over the wire a claim's
answer is cut to fit a 4 MiB client limit and the client reads the rest, so a
claim whose inputs total 20 MB still hands every input over whole.
"""

from __future__ import annotations

import pytest

import skift

PART = 63 * 1024  # under the 64 KiB inline part limit
RESULT = 255 * 1024  # under the 256 KiB result limit


async def test_inputs_are_what_a_claim_carries(sk: skift.LocalSkift) -> None:
    await sk.create_project("In")
    await sk.patch(
        "in",
        [
            skift.CreateNode(title="a", alias="a"),
            skift.CreateNode(title="b", alias="b"),
            skift.CreateNode(title="c", alias="c", blocked_by=("a", "b")),
        ],
    )
    note = skift.Artifact(name="notes.md", parts=[skift.TextPart(text="findings")])
    await sk.complete("in#1", result="from a", artifacts=[note])
    await sk.complete("in#2", result="from b")
    before = await sk.inputs("in#3")
    assert [(i.ref, i.result) for i in before] == [("in#1", "from a"), ("in#2", "from b")]
    assert [a.name for a in before[0].artifacts] == ["notes.md"]
    claim = await sk.claim("in#3")
    assert claim.inputs == tuple(before)
    assert await sk.inputs("#3", project="in") == before
    with pytest.raises(skift.NotFound):
        await sk.inputs("in#9")


async def test_a_claim_with_twenty_megabytes_of_inputs(sk: skift.LocalSkift) -> None:
    """Twenty predecessors of about 1 MB each (a 255 KiB result and an artifact of twelve
    63 KiB parts): the claim succeeds and carries every input whole."""
    await sk.create_project("Big")
    count = 20
    ops: list[skift.Op] = [skift.CreateNode(title=f"p{k}", alias=f"p{k}") for k in range(count)]
    ops.append(skift.CreateNode(title="sink", blocked_by=tuple(f"p{k}" for k in range(count))))
    await sk.patch("big", ops)
    for k in range(count):
        parts = [skift.TextPart(text=f"{k}-{j}-" + "x" * PART) for j in range(12)]
        await sk.complete(
            f"big#{k + 1}",
            result=f"r{k}-" + "y" * RESULT,
            artifacts=[skift.Artifact(name=f"a{k}", parts=parts)],
        )
    claim = await sk.claim(f"big#{count + 1}")
    assert [i.ref for i in claim.inputs] == [f"big#{k + 1}" for k in range(count)]
    total = 0
    for k, got in enumerate(claim.inputs):
        assert got.result == f"r{k}-" + "y" * RESULT
        (artifact,) = got.artifacts
        texts = [p.text for p in artifact.parts if isinstance(p, skift.TextPart)]
        assert texts == [f"{k}-{j}-" + "x" * PART for j in range(12)]
        total += len(got.result or "") + sum(len(t) for t in texts)
    assert total > 20_000_000
