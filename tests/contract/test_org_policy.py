"""An organization's own policy, stored with its data: its admin sets Rego modules layered on the
default, they decide the organization's next requests (through any handle, any server over the
store), a module that does not compile is refused before it takes effect, every change is an
event, and a reset goes back to the default."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

import skift

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from conftest import Snap

# A worked restriction: in the project `release`, only a person completes work.
RELEASE_RULE = """package skift.authz

import rego.v1

deny contains {
    "msg": sprintf("%s is release work: only a person completes it", [i.node.ref]),
    "next": "Comment on it with what you found; a person completes it.",
} if {
    some i in input.intents
    i.action == "complete"
    i.node.project == "release"
    not person
}
"""

LOCKOUT_RULE = """package skift.authz

import rego.v1

deny contains {"msg": "nobody changes anything", "next": "Ask the policy's author."} if true
"""


async def _release_work(sk: skift.LocalSkift, titles: list[str]) -> list[str]:
    p = await sk.create_project("Release")
    res = await sk.patch(
        p.slug, [skift.CreateNode(alias=f"n{i}", title=t) for i, t in enumerate(titles)]
    )
    return [res.created[f"n{i}"] for i in range(len(titles))]


async def test_a_stored_policy_decides_the_organizations_requests(sk: skift.LocalSkift) -> None:
    """set_policy layers the modules on the default: an agent may no longer complete release
    work it holds, a person still may; policy() shows the modules and who set them; reset goes
    back to the default, and each change is an event with its reason."""
    assert await sk.policy() == skift.OrgPolicy()
    one, two = await _release_work(sk, ["Tag the release", "Write the notes"])
    bot = sk.acting_as(skift.Agent("bot"))

    got = await sk.set_policy({"release.rego": RELEASE_RULE}, reason="a person signs releases")
    assert got.modules == (skift.PolicyModule(name="release.rego", source=RELEASE_RULE),)
    assert got.updated_by == "ada"
    assert got.updated_at is not None
    assert await sk.policy() == got

    claim = await bot.claim(one)
    with pytest.raises(skift.Refused) as ei:
        await bot.complete(one, lease=claim.lease.id, result="tagged")
    assert ei.value.message == f"{one} is release work: only a person completes it"
    assert ei.value.next == "Comment on it with what you found; a person completes it."
    assert (await sk.get(one)).status is skift.Status.OPEN
    await sk.complete(two, result="notes written")  # a person still completes it
    # the default's rules still hold beneath it
    with pytest.raises(skift.Refused, match="only a person creates a project"):
        await bot.create_project("Mine")

    reset = await sk.reset_policy(reason="the release is out")
    assert reset.modules == ()
    assert reset.updated_by == "ada"
    await bot.complete(one, lease=claim.lease.id, result="tagged")

    ops = [e for e in await sk.events() if e.op in ("set_policy", "reset_policy")]
    assert [(e.op, e.reason, e.principal) for e in ops] == [
        ("set_policy", "a person signs releases", "ada"),
        ("reset_policy", "the release is out", "ada"),
    ]
    assert ops[0].after == {"modules": [{"name": "release.rego", "source": RELEASE_RULE}]}
    assert ops[0].before == {"modules": []}
    assert ops[1].before == {"modules": ["release.rego"]}
    assert ops[1].after == {"modules": []}


async def test_setting_the_same_modules_again_changes_nothing(sk: skift.LocalSkift) -> None:
    await sk.set_policy({"release.rego": RELEASE_RULE}, reason="first")
    await sk.set_policy({"release.rego": RELEASE_RULE}, reason="again")
    await sk.reset_policy(reason="back")
    await sk.reset_policy(reason="back again")
    ops = [e.reason for e in await sk.events() if e.op in ("set_policy", "reset_policy")]
    assert ops == ["first", "back"]


@pytest.mark.parametrize(
    ("modules", "message"),
    [
        (
            {"bad.rego": "package skift.authz\n\ndeny contains {"},
            "policy module bad.rego does not compile",
        ),
        ({"other.rego": "package elsewhere\n\nx := 1\n"}, "no module is in package skift.authz"),
        (
            {"set.rego": "package skift.authz\n\ndeny := 5\n"},
            "does not evaluate data.skift.authz.deny",
        ),
        (
            {"unsafe.rego": "package skift.authz\nimport rego.v1\ndeny contains 1 if nowhere\n"},
            "does not evaluate data.skift.authz.deny",
        ),
        ({}, "at least one module"),
        ({"a.rego" if i == 0 else f"m{i}.rego": RELEASE_RULE for i in range(40)}, "at most 32"),
        ({"": RELEASE_RULE}, "1 to 100 printable"),
    ],
    ids=["syntax", "package", "not-a-set", "unsafe", "empty", "too-many", "no-name"],
)
async def test_a_module_that_does_not_work_is_refused_before_it_takes_effect(
    sk: skift.LocalSkift, snap: Snap, modules: dict[str, str], message: str
) -> None:
    """Invalid names the error, and nothing changes: no stored modules, no event, the default
    still decides."""
    await sk.set_policy({"release.rego": RELEASE_RULE}, reason="in force")
    before = await snap(sk)
    shown = await sk.policy()
    with pytest.raises(skift.Invalid) as ei:
        await sk.set_policy(modules, reason="try")
    assert message in ei.value.message
    assert "Stack backtrace" not in ei.value.message
    assert ei.value.next
    assert await snap(sk) == before
    assert await sk.policy() == shown


async def test_a_change_needs_a_reason(sk: skift.LocalSkift) -> None:
    for attempt in (
        sk.set_policy({"release.rego": RELEASE_RULE}, reason=" "),
        sk.reset_policy(reason=""),
    ):
        with pytest.raises(skift.Invalid, match="needs a reason"):
            await attempt
    assert await sk.policy() == skift.OrgPolicy()


async def test_only_an_admin_sets_the_policy_and_a_bad_one_never_locks_them_out(
    sk: skift.LocalSkift, snap: Snap
) -> None:
    """An agent, and a person who is not an admin, are refused with the next move; anyone may
    read it. Who may set or reset it is the default's call, never the stored modules': a module
    denying everything still lets an admin reset it."""
    bot = sk.acting_as(skift.Agent("bot"))
    bob = sk.acting_as(skift.User("bob"))
    await bob.list_projects()  # bob exists, a person of the organization
    before = await snap(sk)
    for attempt in (
        bot.set_policy({"release.rego": RELEASE_RULE}, reason="mine"),
        bot.reset_policy(reason="mine"),
        bob.set_policy({"release.rego": RELEASE_RULE}, reason="mine"),
        bob.reset_policy(reason="mine"),
    ):
        with pytest.raises(skift.Refused) as ei:
            await attempt
        assert ei.value.message == "only an admin of the organization sets its policy"
        assert "gate" in ei.value.next
    assert await snap(sk) == before

    await sk.set_policy({"lockout.rego": LOCKOUT_RULE}, reason="oops")
    assert (await bot.policy()).modules[0].name == "lockout.rego"
    with pytest.raises(skift.Refused, match="nobody changes anything"):
        await sk.create_project("Anything")
    await sk.set_policy({"release.rego": RELEASE_RULE}, reason="fixed")
    await sk.reset_policy(reason="and back")
    await sk.create_project("Anything")


@pytest.mark.own_server  # a second process over the server's database
async def test_organizations_keep_their_own_policies(
    sk: skift.LocalSkift, local: skift.LocalSkift
) -> None:
    """One organization's modules decide nothing in another."""
    await sk.set_policy({"lockout.rego": LOCKOUT_RULE}, reason="ours only")
    made = await local.create_org("acme", admin="wile")
    wile = await local.authenticate("token", made.token)
    assert await wile.policy() == skift.OrgPolicy()
    await wile.create_project("Skates")
    with pytest.raises(skift.Refused):
        await sk.create_project("Ours")


@pytest.fixture
async def local(sk: skift.LocalSkift, store_url: str) -> AsyncIterator[skift.LocalSkift]:
    """In process over the store under test (on "remote": over the server's database): what a
    transport does itself (authenticate), and a second process over the same database."""
    if store_url == "memory:":
        yield sk
        return
    async with skift.open(store_url.removeprefix("remote+"), principal=skift.User("ada")) as h:
        yield h


@pytest.mark.own_server
async def test_a_change_applies_from_the_next_transaction_everywhere(
    sk: skift.LocalSkift, local: skift.LocalSkift
) -> None:
    """A handle that already decided under the old policy (another store over the same database
    on pg; on remote, this process beside the server) applies a change made through the other
    from its very next request, both ways, and a reset likewise."""
    one, two, three = await _release_work(sk, ["Tag", "Notes", "Announce"])
    mine = local.acting_as(skift.Agent("bot"))
    theirs = sk.acting_as(skift.Agent("bot"))
    lease = (await mine.claim(one)).lease.id
    await mine.complete(one, lease=lease, result="tagged")  # decided (and cached) under the default

    await sk.set_policy({"release.rego": RELEASE_RULE}, reason="through the first")
    lease = (await mine.claim(two)).lease.id
    with pytest.raises(skift.Refused, match="only a person completes it"):
        await mine.complete(two, lease=lease, result="notes")

    await local.reset_policy(reason="through the second")
    lease3 = (await theirs.claim(three)).lease.id
    await theirs.complete(three, lease=lease3, result="announced")

    await local.set_policy({"release.rego": RELEASE_RULE}, reason="again, through the second")
    await sk.reopen(three, reason="announce again")
    lease3 = (await theirs.claim(three)).lease.id
    with pytest.raises(skift.Refused, match="only a person completes it"):
        await theirs.complete(three, lease=lease3, result="announced")
    assert (await sk.policy()).updated_by == "ada"


TWO_PERSON_RULE = """package skift.authz

import rego.v1

deny contains {
    "msg": sprintf("%s is a gate you filed: approval needs a second person", [i.node.ref]),
    "next": "Ask another person to complete it.",
} if {
    some i in input.intents
    i.action == "complete"
    i.node.gate
    i.node.filed_by_me
}
"""


@pytest.mark.own_server  # a program embedding skift over the server's database
async def test_a_programs_own_policy_is_the_base_the_stored_modules_layer_on(
    sk: skift.LocalSkift, store_url: str
) -> None:
    """A program that opens skift with its own Policy keeps its rules, and the organization's
    stored modules (set through the server or the program) hold in it too."""
    url = "memory:" if store_url == "memory:" else store_url.removeprefix("remote+")
    policy = skift.Policy.default().extended(TWO_PERSON_RULE)
    async with skift.open(url, principal=skift.User("ada"), policy=policy) as ada:
        stored = ada if url == "memory:" else sk
        await stored.set_policy({"release.rego": RELEASE_RULE}, reason="a person signs releases")
        p = await ada.create_project("Release")
        res = await ada.patch(
            p.slug,
            [
                skift.CreateNode(alias="g", title="Approve", assignee_kind=skift.AssigneeKind.USER),
                skift.CreateNode(alias="w", title="Tag"),
            ],
        )
        with pytest.raises(skift.Refused, match="approval needs a second person"):
            await ada.complete(res.created["g"], result="approved by myself")  # the program's
        bot = ada.acting_as(skift.Agent("bot"))
        lease = (await bot.claim(res.created["w"])).lease.id
        with pytest.raises(skift.Refused, match="only a person completes it"):  # the stored
            await bot.complete(res.created["w"], lease=lease, result="tagged")
        await ada.acting_as(skift.User("bob")).complete(res.created["g"], result="approved")


HR_RULE = """package skift.authz

import rego.v1

unreadable contains "hr" if input.principal.kind != "user"
"""


async def test_a_stored_module_decides_reads_too(sk: skift.LocalSkift) -> None:
    """The read decision is the stored policy's too: a module that keeps project `hr` from
    agents hides it from them like a slug nobody created, from the next request on; a person
    still reads it; a reset shows it again. A read rule that is not a set is refused."""
    hr = await sk.create_project("HR", slug="hr")
    ref = (await sk.patch(hr.slug, [skift.CreateNode(title="Pay rise")])).nodes[0].ref
    bot = sk.acting_as(skift.Agent("bot"))
    assert ref in [n.ref for n in (await bot.ready()).nodes]

    await sk.set_policy({"hr.rego": HR_RULE}, reason="HR is for people")
    assert ref not in [n.ref for n in (await bot.ready()).nodes]
    assert "hr" not in [p.slug for p in await bot.list_projects()]
    with pytest.raises(skift.NotFound):
        await bot.get(ref)
    assert (await sk.get(ref)).title == "Pay rise"

    with pytest.raises(skift.Invalid, match=r"does not evaluate data\.skift\.authz\.unreadable"):
        await sk.set_policy({"bad.rego": "package skift.authz\n\nunreadable := 5\n"}, reason="try")
    await sk.reset_policy(reason="open again")
    assert (await bot.get(ref)).title == "Pay rise"
