"""Artifacts and blobs: content-addressed uploads, the three part kinds, limits, attach and inputs."""

from __future__ import annotations

import hashlib
import secrets
from typing import TYPE_CHECKING

import pytest

import skift

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import OpenSkift, Snap


COMMIT = "3f786850e387550fdab836ed7e6dc881de23001b"
OCI = "sha256:" + "ab" * 32


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


async def _project(sk: skift.LocalSkift) -> None:
    await sk.create_project("A")
    await sk.patch(
        "a",
        [
            skift.CreateNode(alias="research", title="Research"),
            skift.CreateNode(alias="build", title="Build", blocked_by=("research",)),
        ],
    )


async def test_blobs_are_content_addressed(sk: skift.LocalSkift, snap: Snap) -> None:
    """put_blob names bytes by their SHA-256; the same bytes twice are one blob; a digest that
    does not match the bytes is refused and nothing is stored; unknown digests are not found."""
    data = b"line one\nline two\n"
    first = await sk.put_blob(data, media_type="text/plain")
    assert first == skift.BlobInfo(digest=sha(data), media_type="text/plain", size=len(data))
    again = await sk.put_blob(data, media_type="text/plain", digest=sha(data).upper())
    assert again.digest == first.digest
    assert await sk.get_blob(first.digest) == data

    before = await snap(sk)
    other = b"something else"
    with pytest.raises(skift.Invalid, match="hash"):
        await sk.put_blob(other, media_type="text/plain", digest=first.digest)
    with pytest.raises(skift.NotFound):
        await sk.get_blob(sha(other))
    with pytest.raises(skift.Invalid, match="sha256"):
        await sk.get_blob("md5:abc")
    assert await snap(sk) == before


async def test_a_blob_is_nothing_to_another_organization(sk: skift.LocalSkift) -> None:
    """Blob bytes dedup across the store, but a blob belongs to the organization that uploaded
    it: another organization cannot read it, nor name it in an artifact, until it uploads the
    same bytes itself."""
    data = b"ada's design notes"
    blob = await sk.put_blob(data, media_type="text/plain")
    eve = sk.acting_as(skift.User("eve"), org=f"eve-{secrets.token_hex(4)}")
    with pytest.raises(skift.NotFound):
        await eve.get_blob(blob.digest)
    await eve.create_project("E")
    await eve.patch("e", [skift.CreateNode(title="Eve's work")])
    part = skift.BlobPart(digest=blob.digest, media_type="text/plain", size=len(data))
    with pytest.raises((skift.NotFound, skift.Invalid)):
        await eve.attach_artifact("e#1", skift.Artifact(name="notes", parts=[part]))
    assert await eve.artifacts("e#1") == []
    assert (await eve.put_blob(data, media_type="text/plain")).digest == blob.digest
    assert await eve.get_blob(blob.digest) == data


def test_file_blob_store_writes_once_by_digest(tmp_path: Path) -> None:
    """The filesystem backend keeps one file per digest, written whole (temp file + rename)."""
    import asyncio

    store = skift.FileBlobStore(tmp_path)
    data = b"x" * 1000
    digest = skift.digest_of(data)

    async def go() -> bytes | None:
        await store.put(digest, data)
        await store.put(digest, data)
        return await store.get(digest)

    assert asyncio.run(go()) == data
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files == [store.path(digest)]
    assert files[0].relative_to(tmp_path).parts[:2] == ("sha256", digest[7:9])


async def test_size_limits_write_nothing(open_skift: OpenSkift, snap: Snap) -> None:
    """A blob over blob_bytes, a text part over inline_part_bytes, too many parts or too many
    artifacts on a node: LimitExceeded naming the limit, and nothing written."""
    limits = skift.Limits(
        blob_bytes=16, inline_part_bytes=8, parts_per_artifact=2, artifacts_per_node=1
    )
    sk = await open_skift(limits=limits)
    await _project(sk)
    before = await snap(sk)
    with pytest.raises(skift.LimitExceeded) as ei:
        await sk.put_blob(b"x" * 17, media_type="text/plain")
    assert ei.value.details["limit"] == "blob_bytes"
    with pytest.raises(skift.NotFound):
        await sk.get_blob(sha(b"x" * 17))
    cases = {
        "inline_part_bytes": skift.Artifact(name="n", parts=[skift.TextPart(text="123456789")]),
        "parts_per_artifact": skift.Artifact(name="n", parts=[skift.TextPart(text="a")] * 3),
    }
    for limit, artifact in cases.items():
        with pytest.raises(skift.LimitExceeded) as ei:
            await sk.attach_artifact("a#1", artifact)
        assert ei.value.details["limit"] == limit
    with pytest.raises(skift.LimitExceeded) as ei:
        await sk.patch(
            "a",
            [
                skift.AttachArtifact(node="#1", artifact=skift.Artifact(name="one")),
                skift.AttachArtifact(node="#1", artifact=skift.Artifact(name="two")),
            ],
        )
    assert ei.value.details["limit"] == "artifacts_per_node"
    assert await snap(sk) == before
    assert await sk.artifacts("a#1") == []


async def test_references_record_what_they_resolved_to(sk: skift.LocalSkift, snap: Snap) -> None:
    """A reference is a well-formed URI; a git branch carries the commit it resolved to and an
    oci reference a digest; anything else is refused with nothing written."""
    await _project(sk)
    before = await snap(sk)
    bad = [
        skift.ReferencePart(uri="not a uri"),
        skift.ReferencePart(uri="git@github.com:acme/api.git", commit=COMMIT),
        skift.ReferencePart(uri="git+https://github.com/acme/api.git#branch=main"),
        skift.ReferencePart(uri="git+https://github.com/acme/api.git#branch=main", commit="abc"),
        skift.ReferencePart(uri="oci://ghcr.io/acme/api:latest"),
        skift.ReferencePart(uri="https://example.com/x", digest="sha256:nothex"),
    ]
    for part in bad:
        with pytest.raises(skift.Invalid):
            await sk.attach_artifact("a#1", skift.Artifact(name="ref", parts=[part]))
    assert await snap(sk) == before

    good = [
        skift.ReferencePart(uri="git+https://github.com/acme/api.git#branch=main", commit=COMMIT),
        skift.ReferencePart(uri=f"git+https://github.com/acme/api.git#commit={COMMIT}"),
        skift.ReferencePart(uri=f"oci://ghcr.io/acme/api@{OCI}"),
        skift.ReferencePart(uri="https://example.com/report.pdf", media_type="application/pdf"),
    ]
    await sk.attach_artifact("a#1", skift.Artifact(name="refs", parts=good))
    (got,) = await sk.artifacts("a#1")
    parts = [p for p in got.parts if isinstance(p, skift.ReferencePart)]
    assert [p.commit for p in parts] == [COMMIT, COMMIT, None, None]
    assert [p.digest for p in parts] == [None, None, OCI, None]


async def test_attach_in_a_patch_by_alias(sk: skift.LocalSkift) -> None:
    """attach_artifact is a patch operation: it may name a node created earlier in the patch, and
    its JSON form is checked field by field; the attach is an event attributed to its author."""
    await sk.create_project("A")
    blob = await sk.put_blob(b'{"ok": true}', media_type="application/json")
    doc = {
        "op": "attach_artifact",
        "node": "plan",
        "artifact": {
            "name": "plan.json",
            "description": "the plan",
            "parts": [
                {"type": "text", "text": "# Plan"},
                {"type": "blob", "digest": blob.digest, "media_type": blob.media_type, "size": 12},
            ],
            "metadata": {"tool": "planner", "version": 2},
        },
    }
    res = await sk.patch("a", [skift.CreateNode(alias="plan", title="Plan"), doc])
    ref = res.created["plan"]
    (art,) = await sk.artifacts(ref)
    assert (art.name, art.description, art.author, art.author_kind) == (
        "plan.json",
        "the plan",
        "ada",
        "user",
    )
    assert art.parts == (
        skift.TextPart(text="# Plan"),
        skift.BlobPart(digest=blob.digest, media_type="application/json", size=12),
    )
    assert art.metadata == {"tool": "planner", "version": 2}
    assert "attach_artifact" in [e.op for e in await sk.events(ref=ref)]
    assert skift.to_json(art)["parts"][1]["type"] == "blob"

    bad = {**doc, "artifact": {"name": "x", "parts": [{"type": "video", "uri": "x"}]}}
    with pytest.raises(skift.Invalid) as ei:
        await sk.patch("a", [skift.CreateNode(alias="plan", title="Plan"), bad])
    assert ei.value.details["field"] == "ops[1].artifact.parts[0].type"


async def test_blob_parts_name_uploaded_blobs(sk: skift.LocalSkift, snap: Snap) -> None:
    """A blob part must name a blob this organization uploaded, with its size."""
    await _project(sk)
    blob = await sk.put_blob(b"12345", media_type="text/plain")
    before = await snap(sk)
    with pytest.raises(skift.NotFound, match="put_blob"):
        await sk.attach_artifact(
            "a#1",
            skift.Artifact(
                name="x",
                parts=[skift.BlobPart(digest=sha(b"nope"), media_type="text/plain", size=4)],
            ),
        )
    with pytest.raises(skift.Invalid, match="5 bytes"):
        await sk.attach_artifact(
            "a#1",
            skift.Artifact(
                name="x",
                parts=[skift.BlobPart(digest=blob.digest, media_type="text/plain", size=9)],
            ),
        )
    assert await snap(sk) == before


async def test_complete_carries_artifacts_into_successors_inputs(sk: skift.LocalSkift) -> None:
    """complete() attaches artifacts with the result under the lease; the successor's claim
    carries them as inputs, attributed. An agent attaches only to what it may write."""
    await _project(sk)
    bot = sk.acting_as(skift.Agent("bot"))
    with pytest.raises(skift.Refused, match="not yours"):
        await bot.attach_artifact("a#1", skift.Artifact(name="early"))
    claim = await bot.claim("a#1")
    notes = await bot.put_blob(b"provider comparison", media_type="text/markdown")
    await bot.complete(
        "a#1",
        lease=claim.lease.id,
        result="Use provider B.",
        artifacts=[
            skift.Artifact(
                name="comparison.md",
                parts=[
                    skift.BlobPart(
                        digest=notes.digest, media_type=notes.media_type, size=notes.size
                    )
                ],
            ),
            {"name": "summary", "parts": [{"type": "text", "text": "B wins"}]},
        ],
    )
    nxt = await bot.claim("a#2")
    (inp,) = nxt.inputs
    assert (inp.ref, inp.result, inp.author) == ("a#1", "Use provider B.", "bot")
    assert [a.name for a in inp.artifacts] == ["comparison.md", "summary"]
    assert {a.author for a in inp.artifacts} == {"bot"}
    blob_part = inp.artifacts[0].parts[0]
    assert isinstance(blob_part, skift.BlobPart)
    assert await bot.get_blob(blob_part.digest) == b"provider comparison"


NO_AGENT_UPLOADS = """package skift.authz

import rego.v1

deny contains {"msg": "agents here attach links, not uploads", "next": "Attach a link part."} if {
    some i in input.intents
    i.action == "put_blob"
    input.principal.kind == "agent"
}
"""


async def test_uploading_a_blob_is_the_policys_call(sk: skift.LocalSkift, snap: Snap) -> None:
    """put_blob asks the policy (action ``put_blob``: anyone, by default); an organization's
    policy that keeps agents from uploading refuses theirs, naming its rule, and stores
    nothing (over gRPC before the server reads the upload's bytes)."""
    bot = sk.acting_as(skift.Agent("bot"))
    assert (await bot.put_blob(b"by default", media_type="text/plain")).size == 10
    await sk.set_policy({"uploads.rego": NO_AGENT_UPLOADS}, reason="links only for agents")
    before = await snap(sk)
    with pytest.raises(skift.Refused, match="not uploads") as ei:
        await bot.put_blob(b"x" * 100_000, media_type="text/plain")
    assert ei.value.next == "Attach a link part."
    assert await snap(sk) == before
    assert (await sk.put_blob(b"a person's", media_type="text/plain")).size == 10
