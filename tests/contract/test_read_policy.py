"""Reads follow policy: a restricted project is, to everyone but its readers, a slug nobody created.

``restrict_project`` stores a project's readers; the default policy's read
decision (``data.skift.authz.unreadable``) is asked once per request and every
read path leaves an unreadable project out: show, list, ready, explain, search,
the change stream, comments, artifacts, usage, a claim's inputs, leases, and
writes into it find nothing. Its readers (and the person who restricted it)
see it as before; unrestricting gives it back to the whole organization.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

import skift

SECRET = "classified"


async def _world(sk: skift.LocalSkift) -> dict[str, skift.LocalSkift]:
    """ada's projects ``secret`` (restricted to carol) and ``open``.

    secret#1 done (result and comment say "classified"), secret#2 open and ready,
    open#1 blocked by secret#1 (done: an input), open#2 blocked by secret#2 (open).
    """
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
            skift.CreateNode(alias="a", title=f"{SECRET} plan", body=f"{SECRET} body"),
            skift.CreateNode(alias="b", title=f"{SECRET} follow-up"),
        ],
    )
    await sk.complete("secret#1", result=f"{SECRET} result")
    await sk.add_comment("secret#1", f"{SECRET} remark")
    await sk.patch(
        "open",
        [
            skift.CreateNode(title="uses the plan", blocked_by=("secret#1",)),
            skift.CreateNode(title="waits on the follow-up", blocked_by=("secret#2",)),
        ],
    )
    got = await sk.restrict_project("secret", readers=["carol"], reason="payroll figures")
    assert got.readers == ("ada", "carol")
    return who


async def _not_found_like_a_typo(act: object, typo: object) -> None:
    with pytest.raises(skift.NotFound) as hidden:
        await act  # type: ignore[misc]
    with pytest.raises(skift.NotFound) as nothing:
        await typo  # type: ignore[misc]
    assert str(hidden.value).replace("secret", "X") == str(nothing.value).replace("nosuch", "X")


@pytest.mark.parametrize("name", ["bob", "bot"])
async def test_a_restricted_project_is_invisible_to_everyone_else(
    sk: skift.LocalSkift, name: str
) -> None:
    who = await _world(sk)
    h = who[name]
    # named: exactly the answer for a slug nobody created
    await _not_found_like_a_typo(h.get_project("secret"), h.get_project("nosuch"))
    await _not_found_like_a_typo(h.get("secret#1"), h.get("nosuch#1"))
    await _not_found_like_a_typo(h.resolve("secret#2"), h.resolve("nosuch#2"))
    await _not_found_like_a_typo(h.explain("secret#2"), h.explain("nosuch#2"))
    await _not_found_like_a_typo(h.comments("secret#1"), h.comments("nosuch#1"))
    await _not_found_like_a_typo(h.artifacts("secret#1"), h.artifacts("nosuch#1"))
    await _not_found_like_a_typo(h.inputs("secret#2"), h.inputs("nosuch#2"))
    await _not_found_like_a_typo(h.project_usage("secret"), h.project_usage("nosuch"))
    await _not_found_like_a_typo(h.usage("secret#1"), h.usage("nosuch#1"))
    await _not_found_like_a_typo(h.ready(projects=["secret"]), h.ready(projects=["nosuch"]))
    await _not_found_like_a_typo(
        h.list_nodes(projects=["secret"]), h.list_nodes(projects=["nosuch"])
    )
    await _not_found_like_a_typo(
        h.search(SECRET, projects=["secret"]), h.search("x", projects=["nosuch"])
    )
    await _not_found_like_a_typo(
        h.watch_events(projects=["secret"]), h.watch_events(projects=["nosuch"])
    )
    await _not_found_like_a_typo(
        h.claim_next(projects=["secret"]), h.claim_next(projects=["nosuch"])
    )
    await _not_found_like_a_typo(h.claim("secret#2"), h.claim("nosuch#2"))
    # writes into it find nothing either
    await _not_found_like_a_typo(
        h.patch("secret", [skift.CreateNode(title="x")]),
        h.patch("nosuch", [skift.CreateNode(title="x")]),
    )
    await _not_found_like_a_typo(h.add_comment("secret#1", "hi"), h.add_comment("nosuch#1", "hi"))
    # unnamed: simply absent
    assert "secret" not in [p.slug for p in await h.list_projects(archived=True)]
    assert [n.project for n in (await h.ready()).nodes] == ["open"]
    assert {n.project for n in (await h.list_nodes()).nodes} == {"open"}
    assert await h.search(SECRET) == []
    assert all(e.project != "secret" for e in await h.events())
    page = await h.watch_events()
    assert page.events
    assert all(e.project != "secret" for e in page.events)
    await _not_found_like_a_typo(h.export_beads("secret"), h.export_beads("nosuch"))
    assert "secret" not in await h.export_beads("open")  # a dependency there is left out
    await _not_found_like_a_typo(h.edges(["secret#1"]), h.edges(["nosuch#1"]))
    assert await h.edges(["open#1", "open#2"]) == []
    # a claim never hands out its work, and leaves its result out of the inputs
    claim = await h.claim("open#1")
    assert claim.inputs == ()
    assert await h.inputs("open#1") == []
    # Explain says a blocker holds open#2 up, and nothing about it
    ex = await h.explain("open#2")
    blockers = [r for r in ex.reasons if r.kind == "blocked_by"]
    assert len(blockers) == 1
    assert blockers[0].detail.get("unreadable") is True
    assert SECRET not in repr(ex)


async def test_claim_next_never_hands_out_an_unreadable_node(sk: skift.LocalSkift) -> None:
    who = await _world(sk)
    bot = who["bot"]
    claim = await bot.claim_next(ttl=timedelta(minutes=5))
    assert claim.node.project == "open"
    await bot.release(claim.node.ref, lease=claim.lease.id, reason=skift.ReleaseReason.CRASH)
    await sk.patch(
        "open",
        [
            skift.DropNode(node="open#1", reason="moot"),
            skift.DropNode(node="open#2", reason="moot"),
        ],
    )
    with pytest.raises(skift.NothingReady):
        await bot.claim_next()


async def test_its_readers_see_it_and_its_live_lease_stays_theirs(sk: skift.LocalSkift) -> None:
    who = await _world(sk)
    for name in ("ada", "carol"):
        h = who[name]
        assert (await h.get_project("secret")).readers == ("ada", "carol")
        assert (await h.get("secret#1")).result == f"{SECRET} result"
        assert [i.ref for i in await h.inputs("open#1")] == ["secret#1"]
        assert "secret-1" in await h.export_beads("open")
        edges = await h.edges(["open#1", "open#2"])
        assert sorted(x.source.ref for x in edges) == ["secret#1", "secret#2"]
        hits = [hit.node.ref for hit in await h.search(SECRET)]
        assert "secret#1" in hits
        assert [c.body for c in await h.comments("secret#1")] == [f"{SECRET} remark"]
        assert "secret" in {e.project for e in await h.events()}
    carol = who["carol"]
    claim = await carol.claim("secret#2")
    assert claim.node.ref == "secret#2"
    assert [lease.node for lease in await carol.leases()] == ["secret#2"]
    assert await who["bob"].leases() == []
    assert [lease.node for lease in await sk.leases()] == ["secret#2"]


async def test_restrict_and_unrestrict_are_events_and_an_admins_call(
    sk: skift.LocalSkift,
) -> None:
    """Only an admin of the organization restricts or unrestricts (ada is the organization's
    first person, so its admin): an agent and a person who is not an admin are refused, a
    reader or not; to a person who does not read the project it is still nothing."""
    who = await _world(sk)
    with pytest.raises(skift.Refused) as refused:
        await who["bot"].restrict_project("open", readers=["bot"], reason="mine")
    assert "only an admin of the organization" in str(refused.value)
    assert refused.value.next
    # a non-reader cannot unrestrict what it cannot see
    with pytest.raises(skift.NotFound):
        await who["bob"].unrestrict_project("secret", reason="let me in")
    # a reader who is not an admin may not lift or change the restriction either
    for attempt in (
        who["carol"].unrestrict_project("secret", reason="figures published"),
        who["carol"].restrict_project("secret", readers=["bob"], reason="bob helps"),
        who["bob"].restrict_project("open", readers=[], reason="mine"),
    ):
        with pytest.raises(skift.Refused, match="only an admin of the organization"):
            await attempt
    with pytest.raises(skift.Invalid):
        await sk.unrestrict_project("secret", reason=" ")
    with pytest.raises(skift.NotFound):
        await sk.restrict_project("open", readers=["nobody"], reason="x")
    got = await sk.unrestrict_project("secret", reason="figures published")
    assert got.readers is None
    bob = who["bob"]
    assert (await bob.get("secret#1")).result == f"{SECRET} result"
    ops = [(e.op, e.reason) for e in await bob.events() if e.project == "secret"]
    assert ("restrict_project", "payroll figures") in ops
    assert ("unrestrict_project", "figures published") in ops
    with pytest.raises(skift.Refused):
        await sk.unrestrict_project("secret", reason="again")
    # restricting again replaces the readers; the admin restricting is always one
    again = await sk.restrict_project("secret", readers=["bob"], reason="bob's now")
    assert again.readers == ("ada", "bob")
    with pytest.raises(skift.NotFound):
        await who["carol"].get("secret#1")
