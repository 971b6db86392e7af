"""An import acts as the importer (issue 28, point 6): an archive cannot make history say that
somebody else acted. Its events, results, comments, artifacts, leases and usage record the
importing principal; the author the archive names stays visible as imported text, never as
an identity. Only an admin's import maps the archive's authors to principals of the same
names (the lossless move docs/archive.md describes), and its event says so.
"""

from __future__ import annotations

import json
import secrets

import pytest

import skift

NO_ADMIN_FOR_BOB = """package skift.authz

import rego.v1

deny contains {"msg": "bob administers nothing here", "next": "Ask ada."} if {
    input.principal.name == "bob"
    some i in input.intents
    i.action == "admin"
}
"""


async def _archive(sk: skift.LocalSkift) -> tuple[str, str]:
    """ada's project: a node completed with a result, a comment, an artifact; its archive."""
    p = await sk.create_project("History", slug=f"hist-{secrets.token_hex(3)}")
    await sk.patch(p.slug, [skift.CreateNode(title="Decide"), skift.CreateNode(title="Later")])
    await sk.add_comment(f"{p.slug}#1", "ada's note")
    await sk.attach_artifact(
        f"{p.slug}#1", skift.Artifact(name="notes", parts=[skift.TextPart(text="by ada")])
    )
    await sk.complete(f"{p.slug}#1", result="ada decided")
    return p.slug, await sk.export_archive(p.slug)


def _without_principals(text: str) -> str:
    """The archive with its principal records left out: its events then name ada's id
    directly, as a forged archive would name any principal's."""
    lines = text.splitlines()
    return "\n".join(x for x in lines if json.loads(x).get("type") != "principal")


@pytest.mark.parametrize("forged", [False, True])
async def test_an_import_is_the_importers_act(sk: skift.LocalSkift, forged: bool) -> None:
    slug, text = await _archive(sk)
    if forged:
        text = _without_principals(text)
    bob = sk.acting_as(skift.User("bob"))
    moved = await bob.import_archive(text, project=f"{slug}-copy")
    copy = moved.project
    events = (await bob.watch_events(projects=[copy], limit=500)).events
    assert events
    assert {e.principal for e in events} == {"bob"}
    original = "an unlisted principal" if forged else "ada"
    imported = [e for e in events if e.op != "import_archive"]
    assert imported
    for e in imported:
        assert e.after is not None
        assert e.after["imported"]["principal"] == original
        assert e.after["imported"]["principal_kind"] == "user"
        assert e.occurred_at >= events[0].occurred_at
    (last,) = [e for e in events if e.op == "import_archive"]
    assert last.after is not None
    assert last.after["authors"] == "the importer"
    node = await bob.get(f"{copy}#1")
    assert node.result == "ada decided"
    assert node.result_author == "bob"
    (comment,) = await bob.comments(f"{copy}#1")
    assert comment.author == "bob"
    assert f"written by {original}" in comment.body
    assert comment.body.endswith("ada's note")
    (art,) = await bob.artifacts(f"{copy}#1")
    assert art.author == "bob"
    assert art.metadata["imported_author"] == original


async def test_only_an_admin_maps_authors_by_name_and_says_so(sk: skift.LocalSkift) -> None:
    slug, text = await _archive(sk)
    bob = sk.acting_as(skift.User("bob"))
    await bob.list_projects()
    await sk.set_policy({"no-admin.rego": NO_ADMIN_FOR_BOB}, reason="bob is no admin")
    with pytest.raises(skift.Refused):
        await bob.import_archive(text, project=f"{slug}-bob", map_authors=True)
    with pytest.raises(skift.Refused):
        await sk.acting_as(skift.Agent("bot")).import_archive(
            text, project=f"{slug}-bot", map_authors=True
        )
    moved = await sk.import_archive(text, project=f"{slug}-moved", map_authors=True)
    events = (await sk.watch_events(projects=[moved.project], limit=500)).events
    assert {e.principal for e in events} == {"ada"}
    assert all("imported" not in (e.after or {}) for e in events)
    (last,) = [e for e in events if e.op == "import_archive"]
    assert last.after is not None
    assert last.after["authors"] == "mapped by name"
    assert last.after["principals"] == ["ada"]
