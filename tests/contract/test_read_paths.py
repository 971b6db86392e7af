"""The last read paths around a restriction (issue 28, points 3, 4 and 7).

- Events under read policy: an event a principal may read never names a node,
  a title or a reason of a project it may not read; the reference becomes
  Explain's placeholder for an unreadable blocker (``""`` with
  ``"unreadable": true``).
- Blobs under read policy: a blob is read only through an artifact the
  principal may read (or by whoever uploaded it, before any artifact names
  it); otherwise the answer is exactly the one for a digest nobody stored.
- Hidden and absent answer alike, byte for byte: webhook and delivery ids of
  a hidden project, a sweep state in a hidden project.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import attrs
import pytest

import skift

SECRET = "classified"
WHY = "payroll leak"


def _text(events: Any) -> str:
    return json.dumps([attrs.asdict(e) for e in events], default=str)


async def _world(sk: skift.LocalSkift) -> dict[str, skift.LocalSkift]:
    """ada's ``secret`` (restricted to ada and carol) and ``open``; after the restriction
    carol links secret#1 to open#1 and drops secret#2 with cascade, which drops open#2."""
    who = {
        "ada": sk,
        "bob": sk.acting_as(skift.User("bob")),
        "carol": sk.acting_as(skift.User("carol")),
        "bot": sk.acting_as(skift.Agent("bot")),
    }
    for h in who.values():
        await h.list_projects()  # each principal exists before it is named
    await sk.create_project("Secret", slug="secret")
    await sk.create_project("Open", slug="open")
    await sk.patch(
        "secret",
        [
            skift.CreateNode(alias="a", title=f"{SECRET} plan"),
            skift.CreateNode(alias="b", title=f"{SECRET} follow-up"),
        ],
    )
    await sk.patch(
        "open",
        [skift.CreateNode(title="public work"), skift.CreateNode(title="downstream")],
    )
    await sk.restrict_project("secret", readers=["carol"], reason="payroll figures")
    carol = who["carol"]
    await carol.patch("open", [skift.AddEdge(from_="secret#1", to="open#1")])
    await carol.patch("open", [skift.AddEdge(from_="secret#2", to="open#2")])
    await carol.patch("open", [skift.RemoveEdge(from_="secret#1", to="open#1")])
    dropped = await carol.drop("secret#2", reason=WHY, cascade=5)
    assert sorted(dropped.dropped) == ["open#2", "secret#2"]
    return who


@pytest.mark.parametrize("name", ["bob", "bot"])
async def test_events_never_name_what_a_restriction_hides(sk: skift.LocalSkift, name: str) -> None:
    who = await _world(sk)
    h = who[name]
    listed = await h.events()
    streamed = (await h.watch_events(limit=500)).events
    of_node = await h.events(ref="open#2")
    for events in (listed, streamed, of_node):
        text = _text(events)
        assert "secret" not in text
        assert SECRET not in text
        assert WHY not in text
    edges = [e for e in streamed if e.op in ("add_edge", "remove_edge")]
    assert [e.op for e in edges] == ["add_edge", "add_edge", "remove_edge"]
    for e in edges:
        doc = e.after if e.op == "add_edge" else e.before
        assert doc is not None
        assert doc["from"] == ""
        assert doc["unreadable"] is True
        assert doc["to"] in ("open#1", "open#2")
    (cascade,) = [e for e in streamed if e.op == "drop_node"]
    assert cascade.node == "open#2"
    assert cascade.after == {"status": "dropped", "cascade_from": "", "unreadable": True}
    assert cascade.reason == ""
    # an archive of the public project carries the same events
    if name == "bob":
        archive = await h.export_archive("open")
        assert "secret" not in archive
        assert WHY not in archive


async def test_readers_still_see_every_reference(sk: skift.LocalSkift) -> None:
    who = await _world(sk)
    for h in (who["ada"], who["carol"]):
        streamed = (await h.watch_events(limit=500)).events
        (cascade,) = [e for e in streamed if e.op == "drop_node" and e.node == "open#2"]
        assert cascade.after == {"status": "dropped", "cascade_from": "secret#2"}
        assert cascade.reason == WHY
        froms = [e.after["from"] for e in streamed if e.op == "add_edge" and e.after]
        assert "secret#1" in froms
    # unrestricting gives the references back to everyone
    await sk.unrestrict_project("secret", reason="public again")
    streamed = (await who["bob"].watch_events(limit=500)).events
    (cascade,) = [e for e in streamed if e.op == "drop_node" and e.node == "open#2"]
    assert cascade.after == {"status": "dropped", "cascade_from": "secret#2"}


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


async def _absent_alike(hidden: Any, absent: Any, digest: str, other: str) -> None:
    """Both refused with NotFound, and the messages the same but for the digest."""
    with pytest.raises(skift.NotFound) as one:
        await hidden
    with pytest.raises(skift.NotFound) as two:
        await absent
    assert str(one.value).replace(digest, "D") == str(two.value).replace(other, "D")
    assert one.value.next == two.value.next


async def test_a_blob_is_read_only_through_an_artifact_one_may_read(
    sk: skift.LocalSkift,
) -> None:
    who = await _world(sk)
    bob, carol = who["bob"], who["carol"]
    data = f"{SECRET} payroll.csv".encode()
    blob = await sk.put_blob(data, media_type="text/csv")
    part = skift.BlobPart(digest=blob.digest, media_type="text/csv", size=len(data))
    await sk.attach_artifact("secret#1", skift.Artifact(name="payroll", parts=[part]))
    nobody = _sha(b"nobody stored this")
    await _absent_alike(bob.get_blob(blob.digest), bob.get_blob(nobody), blob.digest, nobody)
    await _absent_alike(who["bot"].get_blob(blob.digest), bob.get_blob(nobody), blob.digest, nobody)
    assert await carol.get_blob(blob.digest) == data
    assert await sk.get_blob(blob.digest) == data
    # an upload no artifact names yet is its uploader's alone
    draft = f"{SECRET} draft".encode()
    mine = await carol.put_blob(draft, media_type="text/plain")
    assert await carol.get_blob(mine.digest) == draft
    await _absent_alike(bob.get_blob(mine.digest), bob.get_blob(nobody), mine.digest, nobody)
    # named by an artifact of a project bob reads too: his to read
    await sk.attach_artifact("open#1", skift.Artifact(name="shared", parts=[part]))
    assert await bob.get_blob(blob.digest) == data


async def _alike(hidden: Any, absent: Any, hidden_id: str, absent_id: str) -> None:
    """Both NotFound, the same words and next move byte for byte once the ids are swapped."""
    with pytest.raises(skift.NotFound) as one:
        await hidden
    with pytest.raises(skift.NotFound) as two:
        await absent
    assert str(one.value).replace(hidden_id, "ID") == str(two.value).replace(absent_id, "ID")
    assert one.value.next == two.value.next


async def test_a_hidden_projects_webhooks_answer_as_ids_nobody_made(
    sk: skift.LocalSkift,
) -> None:
    who = await _world(sk)
    bob = who["bob"]
    hook = await sk.add_webhook("secret", "https://example.com/hook")
    delivery = await sk.test_webhook(hook.id)
    project_id = (await sk.get_project("secret")).id
    nobody = "01JD0000000000000000000000"
    for act in (
        bob.rotate_webhook_secret,
        bob.disable_webhook,
        bob.enable_webhook,
        bob.test_webhook,
        lambda ref: bob.webhook_deliveries(webhook=ref),
    ):
        await _alike(act(hook.id), act(nobody), hook.id, nobody)
    await _alike(bob.redeliver(delivery.id), bob.redeliver(nobody), delivery.id, nobody)
    with pytest.raises(skift.NotFound) as exc:
        await bob.rotate_webhook_secret(hook.id)
    assert project_id not in str(exc.value)
    assert "no project" not in str(exc.value)
