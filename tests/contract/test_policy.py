"""The default policy through the real API: every permission and refusal, as an agent and a user.

The policy's input is built by the engine from real calls (never by hand), so
these prove the rules as a caller meets them: what is allowed goes through,
and a refusal is ``skift.Refused`` naming the node and the rule, with a next
move, having written nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

import skift

if TYPE_CHECKING:
    from conftest import Snap

Act = Callable[[], Awaitable[object]]
Prep = Callable[[skift.LocalSkift, skift.LocalSkift], Awaitable[Act]]

GATE = skift.AssigneeKind.USER


@dataclass(frozen=True)
class Refusal:
    """What an agent is told: the message names ``msg``, the next move says ``next``."""

    msg: str
    next: str


@dataclass(frozen=True)
class Case:
    rule: str
    prep: Prep
    agent: Refusal | None  # None: allowed
    person: Refusal | None = None  # a person who is not an admin; None: allowed

    @property
    def id(self) -> str:
        return self.prep.__name__


CASES: list[Case] = []


def case(
    rule: str, agent: Refusal | None = None, person: Refusal | None = None
) -> Callable[[Prep], Prep]:
    """Register one row: ``prep(h, ada)`` does any setup as ``h`` and returns the act under test."""

    def register(prep: Prep) -> Prep:
        CASES.append(Case(rule, prep, agent, person))
        return prep

    return register


@pytest.fixture
async def world(sk: skift.LocalSkift) -> None:
    """Projects p and q, with work filed by the user ada and by the agent bot.

    p#1  ada   ready                     p#7  ada   epic (ready: its child is done)
    p#2  ada   ready, blocks p#5         p#8  ada   done child of p#7
    p#3  bot   epic of p#4               p#9  ada   gate (assignee_kind user), blocks p#10
    p#4  bot   child of p#3              p#10 ada   waits on the gate p#9
    p#5  bot   blocked by p#2            p#11 bot   done (ada completed it)
    p#6  ada   blocked by p#1
    q#1  ada   ready                     q#2  bot   ready
    """
    bot = sk.acting_as(skift.Agent("bot"))
    await sk.create_project("P")
    await sk.create_project("Q")
    await sk.patch(
        "p", [skift.CreateNode(title="Ada's work"), skift.CreateNode(title="Ada's second")]
    )
    await bot.patch(
        "p",
        [
            skift.CreateNode(alias="epic", title="Bot's epic"),
            skift.CreateNode(title="Bot's step", parent="epic"),
            skift.CreateNode(title="Bot's blocked", blocked_by=("#2",)),
        ],
    )
    await sk.patch(
        "p",
        [
            skift.CreateNode(title="Ada's blocked", blocked_by=("#1",)),
            skift.CreateNode(alias="epic", title="Ada's epic"),
            skift.CreateNode(alias="kid", title="Ada's done child", parent="epic"),
            skift.CompleteNode(node="kid"),
            skift.CreateNode(alias="gate", title="Ada's gate", assignee_kind=GATE),
            skift.CreateNode(title="Waits on the gate", blocked_by=("gate",)),
        ],
    )
    await bot.patch("p", [skift.CreateNode(title="Bot's finished")])
    await sk.complete("p#11")
    await sk.patch("q", [skift.CreateNode(title="Ada's q work")])
    await bot.patch("q", [skift.CreateNode(title="Bot's q work")])


def not_yours_to_change(ref: str) -> Refusal:
    return Refusal(f"{ref} is not yours to change", f"Claim {ref} and send the lease")


def not_yours_to_link(ref: str) -> Refusal:
    return Refusal(f"{ref} is not yours to block or unblock", f"Claim {ref} and send its lease")


def not_a_place_to_file(ref: str) -> Refusal:
    return Refusal(f"{ref} is none of these", f"place it under {ref}")


def across_projects(ref: str) -> Refusal:
    return Refusal(f"{ref} is in another project", "Link from the node you hold a lease on")


def gate_needs_a_person(ref: str, verb: str) -> Refusal:
    return Refusal(f"{ref} is a gate: only a person may {verb} it", "Ask its assignee")


HOLD = Refusal("only a person may hold or release work", "say so in a comment")
PROJECT = Refusal("only a person may rename, re-prioritize or archive a project", "File a gate")
ADMIN = Refusal("only a person administers principals, identities and tokens", "an admin")
ADMIN_ONLY = Refusal(
    "only an admin of the organization adds principals, binds identities, grants the admin "
    "role, and mints or revokes another principal's tokens",
    "you may mint and revoke your own tokens",
)
NEW_PROJECT = Refusal(
    "only a person creates a project: an agent files work in existing projects",
    "file a gate there asking a person to create the project",
)


async def lease_on(h: skift.LocalSkift, ref: str) -> str:
    return (await h.claim(ref)).lease.id


# ------------------------------------------------------------------------- filing


@case("an agent may file a node at a project's root with no lease")
async def file_at_root(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.patch("p", [skift.CreateNode(title="New")])


@case("an agent may file under a lineage it created itself, with no lease")
async def file_under_own_lineage(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.patch("p", [skift.CreateNode(title="Sub-step", parent="#4")])


@case("an agent may file under what it files in the same request")
async def file_under_new(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.patch(
        "p",
        [
            skift.CreateNode(alias="plan", title="Plan"),
            skift.CreateNode(title="Step", parent="plan"),
        ],
    )


@case(
    "an agent may not file under someone else's node without a lease",
    not_a_place_to_file("p#1"),
)
async def file_under_someone_elses(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.patch("p", [skift.CreateNode(title="Sneaked in", parent="#1")])


@case("an agent may file under the node it holds a lease on")
async def file_under_leased(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    lease = await lease_on(h, "p#2")
    return lambda: h.patch("p", [skift.CreateNode(title="Child", parent="#2")], lease=lease)


# ----------------------------------------------------------- blocking what it filed


@case("an agent may block what it filed on anything it can see in the project, without a lease")
async def block_what_it_filed(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.patch("p", [skift.AddEdge(from_="#1", to="#4")])


@case("an agent may block what it files, at filing, on anything it can see in the project")
async def file_blocked(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.patch("p", [skift.CreateNode(title="After p#6", blocked_by=("#6",))])


@case("an agent may unblock what it filed again, without a lease")
async def unblock_what_it_filed(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.patch("p", [skift.RemoveEdge(from_="#2", to="#5")])


@case("an agent may not block someone else's node without its lease", not_yours_to_link("p#1"))
async def block_someone_elses(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.patch("p", [skift.AddEdge(from_="#4", to="#1")])


@case("an agent may not unblock someone else's node without its lease", not_yours_to_link("p#6"))
async def unblock_someone_elses(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.patch("p", [skift.RemoveEdge(from_="#1", to="#6")])


# --------------------------------------------------- changing filed work needs its lease


@case("changing a filed node afterwards (update) needs its lease", not_yours_to_change("p#4"))
async def update_filed(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.patch("p", [skift.UpdateNode(node="#4", title="Renamed")])


@case("changing a filed node afterwards (complete) needs its lease", not_yours_to_change("p#4"))
async def complete_filed(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.complete("p#4", result="done")


@case("changing a filed node afterwards (drop) needs its lease", not_yours_to_change("p#4"))
async def drop_filed(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.drop("p#4", reason="not needed")


@case("changing a filed node afterwards (reopen) needs its lease", not_yours_to_change("p#11"))
async def reopen_filed(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.reopen("p#11", reason="again")


@case("what an agent files in a request it may still change in that request")
async def change_new_in_same_request(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.patch(
        "p",
        [
            skift.CreateNode(alias="n", title="Draft"),
            skift.UpdateNode(node="n", title="Final", priority=skift.Priority.P1),
            skift.CompleteNode(node="n", result="done at once"),
        ],
    )


# ---------------------------------------------------------------- under a lease


@case("a lease holder may update its node")
async def update_leased(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    lease = await lease_on(h, "p#2")
    return lambda: h.patch("p", [skift.UpdateNode(node="#2", title="Clarified")], lease=lease)


@case("a lease holder may complete its node")
async def complete_leased(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    lease = await lease_on(h, "p#2")
    return lambda: h.complete("p#2", lease=lease, result="done")


@case("a lease holder may drop its node")
async def drop_leased(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    lease = await lease_on(h, "p#2")
    return lambda: h.drop("p#2", lease=lease, reason="obsolete")


@case("a lease holder may mutate the children it created under its node")
async def mutate_own_child(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    lease = await lease_on(h, "p#2")
    res = await h.patch("p", [skift.CreateNode(alias="c", title="Child", parent="#2")], lease=lease)
    child = res.created["c"]
    return lambda: h.patch(
        "p",
        [skift.UpdateNode(node=child, title="Child, clarified"), skift.CompleteNode(node=child)],
        lease=lease,
    )


@case("a lease holder may mutate what it filed below its node, however deep")
async def mutate_own_grandchild(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    lease = await lease_on(h, "p#2")
    res = await h.patch(
        "p",
        [
            skift.CreateNode(alias="c", title="Child", parent="#2"),
            skift.CreateNode(alias="g", title="Grandchild", parent="c"),
        ],
        lease=lease,
    )
    grandchild = res.created["g"]
    return lambda: h.patch("p", [skift.UpdateNode(node=grandchild, title="Deep")], lease=lease)


@case(
    "a lease holder may not mutate children someone else created under its node",
    not_yours_to_change("p#8"),
)
async def mutate_foreign_child(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    lease = await lease_on(h, "p#7")
    return lambda: h.patch("p", [skift.UpdateNode(node="#8", title="Mine now")], lease=lease)


@case(
    "a lease holder may not reopen a child someone else created under its node",
    not_yours_to_change("p#8"),
)
async def reopen_foreign_child(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    lease = await lease_on(h, "p#7")
    return lambda: h.reopen("p#8", lease=lease, reason="redo")


@case(
    "a lease holder may not mutate a node someone else filed below its own children",
    not_yours_to_change("p#13"),
)
async def mutate_foreign_descendant(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    lease = await lease_on(h, "p#2")
    res = await h.patch("p", [skift.CreateNode(alias="c", title="Child", parent="#2")], lease=lease)
    added = await ada.patch(
        "p", [skift.CreateNode(alias="x", title="Ada's", parent=res.created["c"])]
    )
    assert added.created == {"x": "p#13"}
    return lambda: h.patch("p", [skift.UpdateNode(node="#13", title="Mine now")], lease=lease)


@case("a lease on one node gives no write on another", not_yours_to_change("p#1"))
async def lease_elsewhere(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    lease = await lease_on(h, "p#2")
    return lambda: h.patch("p", [skift.UpdateNode(node="#1", title="Mine now")], lease=lease)


@case("a lease holder may move its node under a lineage it filed")
async def reparent_under_own(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    lease = await lease_on(h, "p#2")
    return lambda: h.patch("p", [skift.UpdateNode(node="#2", parent="#3")], lease=lease)


@case(
    "a lease holder may not move its node under someone else's node",
    not_a_place_to_file("p#1"),
)
async def reparent_under_foreign(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    lease = await lease_on(h, "p#2")
    return lambda: h.patch("p", [skift.UpdateNode(node="#2", parent="#1")], lease=lease)


# ---------------------------------------------------------------------- edges


@case("a lease holder may add blocks edges into its own node")
async def edge_into_leased(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    lease = await lease_on(h, "p#2")
    return lambda: h.patch("p", [skift.AddEdge(from_="#1", to="#2")], lease=lease)


@case(
    "an edge out of its node needs link permission on the target",
    not_yours_to_link("p#1"),
)
async def edge_out_to_foreign(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    lease = await lease_on(h, "p#2")
    return lambda: h.patch("p", [skift.AddEdge(from_="#2", to="#1")], lease=lease)


@case("an edge out of its node to a target it filed is allowed")
async def edge_out_to_own(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    lease = await lease_on(h, "p#2")
    return lambda: h.patch("p", [skift.AddEdge(from_="#2", to="#4")], lease=lease)


@case(
    "a cross-project edge needs write on the source (not mere sight of it)",
    across_projects("q#1"),
)
async def cross_project_unwritable_source(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.patch("p", [skift.AddEdge(from_="q#1", to="#4")])


@case(
    "a cross-project edge needs write on the source (filing it is not enough)",
    across_projects("q#2"),
)
async def cross_project_filed_source(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.patch("p", [skift.AddEdge(from_="q#2", to="#4")])


@case("a cross-project edge with write on the source and link on the target is allowed")
async def cross_project_allowed(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    lease = await lease_on(h, "q#1")
    return lambda: h.patch("q", [skift.AddEdge(from_="#1", to="p#4")], lease=lease)


@case(
    "a cross-project edge needs link on the target, however writable the source",
    not_yours_to_link("p#1"),
)
async def cross_project_unlinkable_target(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    lease = await lease_on(h, "q#1")
    return lambda: h.patch("q", [skift.AddEdge(from_="#1", to="p#1")], lease=lease)


# ---------------------------------------------------------------- claims, gates


@case("an agent may claim ordinary ready work")
async def claim_work(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.claim("p#1")


@case(
    "an agent may not claim a gate: a person must act on it",
    Refusal("p#9 is a gate: a person must act on it", "its assignee completes it"),
)
async def claim_gate(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.claim("p#9")


@case("only a user may complete a gate", gate_needs_a_person("p#9", "complete"))
async def complete_gate(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.complete("p#9", result="did it")


@case("only a user may drop a gate", gate_needs_a_person("p#9", "drop"))
async def drop_gate(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.drop("p#9", reason="not needed")


@case("only a user may reassign a gate", gate_needs_a_person("p#9", "reassign or reclassify"))
async def reassign_gate(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.patch("p", [skift.UpdateNode(node="#9", assignee="bot")])


@case("only a user may reclassify a gate", gate_needs_a_person("p#9", "reassign or reclassify"))
async def reclassify_gate(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.patch("p", [skift.UpdateNode(node="#9", assignee_kind="agent")])


@case("only a user may unlink a gate", gate_needs_a_person("p#9", "unlink"))
async def unlink_gate(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.patch("p", [skift.RemoveEdge(from_="#9", to="#10")])


# ---------------------------------------------------------------------- holds


@case("only users may hold", HOLD)
async def hold(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.hold("p#1", reason="should wait")


@case("only users may hold, in a patch too", HOLD)
async def hold_in_patch(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.patch("p", [skift.HoldNode(node="#4", reason="should wait")])


@case("only users may release a hold", HOLD)
async def unhold(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    await ada.hold("p#1", reason="parked")
    return lambda: h.unhold("p#1", reason="let it go")


@case("only users may hold a project", HOLD)
async def hold_project(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.hold_project("p", reason="quiet week")


@case("only users may release a project's hold", HOLD)
async def unhold_project(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    await ada.hold_project("p", reason="quiet week")
    return lambda: h.unhold_project("p", reason="back")


@case("only users may focus", HOLD)
async def focus(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.focus(["q"], reason="only q this week")


@case("only users may clear a focus", HOLD)
async def clear_focus(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    await ada.focus(["q"], reason="only q this week")
    return lambda: h.clear_focus(reason="all of it again")


# ------------------------------------------------------------------- projects


@case("an agent may not create a project (it files work in existing ones)", NEW_PROJECT)
async def create_project(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.create_project("Spike")


@case("an agent may not rename a project", PROJECT)
async def rename_project(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.rename_project("p", "Renamed")


@case("an agent may not re-prioritize a project", PROJECT)
async def reprioritize_project(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.update_project("p", priority="p0")


@case("an agent may not archive a project", PROJECT)
async def archive_project(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.archive_project("p", reason="done")


RESTRICT = Refusal("only an admin of the organization restricts who reads p", "file a gate")


@case("only an admin restricts who reads a project", RESTRICT, RESTRICT)
async def restrict_project(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.restrict_project("p", readers=["bot"], reason="mine")


@case("only an admin unrestricts a project", RESTRICT, RESTRICT)
async def unrestrict_project(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    for who in PRINCIPALS.values():
        await ada.acting_as(who).list_projects()  # each exists before it is named
    await ada.restrict_project("p", readers=[p.name for p in PRINCIPALS.values()], reason="a few")
    return lambda: h.unrestrict_project("p", reason="everyone")


# ---------------------------------------------------------------------- admin


@case("only admins add principals", ADMIN, ADMIN_ONLY)
async def add_principal(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.add_principal("erin", "user")


@case("only admins invite identities", ADMIN, ADMIN_ONLY)
async def invite_identity(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.invite_identity("bot", "oidc", "https://id.example|bot")


@case("only admins mint a token for another principal", ADMIN, ADMIN_ONLY)
async def create_token(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.create_token("bot")


@case("only admins revoke another principal's token", ADMIN, ADMIN_ONLY)
async def revoke_token(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    token = await ada.create_token("bot")
    return lambda: h.revoke_token(token.id)


def _name(h: skift.LocalSkift) -> str:
    """The principal a handle acts as (a RemoteSkift names it ``principal``)."""
    spec = getattr(h, "spec", None) or getattr(h, "principal", None)
    assert spec is not None
    return spec.name


@case("a person mints a token for themself; an agent does not", ADMIN)
async def create_own_token(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    me = _name(h)
    return lambda: h.create_token(me)


@case("a person revokes their own token; an agent does not", ADMIN)
async def revoke_own_token(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    await h.list_projects()  # h exists
    token = await ada.create_token(_name(h))
    return lambda: h.revoke_token(token.id)


@case("only admins grant the admin role", ADMIN, ADMIN_ONLY)
async def grant_admin(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    await ada.acting_as(skift.User("erin")).list_projects()
    return lambda: h.grant_admin("erin", reason="runs ops")


@case("only admins revoke the admin role", ADMIN, ADMIN_ONLY)
async def revoke_admin(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    await ada.acting_as(skift.User("erin")).list_projects()
    await ada.grant_admin("erin", reason="runs ops")
    return lambda: h.revoke_admin("erin", reason="moved on")


# -------------------------------------------------------------------- atomicity


@case(
    "the patch is atomic under policy: one denied operation refuses all of it",
    not_yours_to_change("p#1"),
)
async def one_denied_op(h: skift.LocalSkift, ada: skift.LocalSkift) -> Act:
    return lambda: h.patch(
        "p",
        [
            skift.CreateNode(alias="fine", title="Filed at the root"),
            skift.AddEdge(from_="#1", to="fine"),
            skift.UpdateNode(node="#1", title="Not mine"),
        ],
    )


PRINCIPALS = {
    "agent": skift.Agent("bot"),
    "service": skift.Service("orchestrator"),
    "user": skift.User("carol"),
    "admin": skift.User("dora"),
}


@pytest.mark.usefixtures("world")
@pytest.mark.parametrize("actor", ["agent", "user", "admin"])
@pytest.mark.parametrize("row", CASES, ids=[c.id for c in CASES])
async def test_default_policy(sk: skift.LocalSkift, snap: Snap, row: Case, actor: str) -> None:
    """Every permission and every refusal of the default policy, as an agent, as a person
    and as an admin of the organization.

    An admin (dora, whom ada made one; neither filed any of it) may do anything; a person
    who is not an admin (carol) anything but what only an admin does. For the others each
    row's rule decides: allowed goes through and writes; refused is skift.Refused naming
    the node and the rule, with the next move, and writes nothing.
    """
    h = sk.acting_as(PRINCIPALS[actor])
    if actor == "admin":
        await h.list_projects()  # dora exists
        await sk.grant_admin("dora", reason="runs the organization")
    act = await row.prep(h, sk)
    before = await snap(sk)
    refusal = {"agent": row.agent, "user": row.person, "admin": None}[actor]
    if refusal is None:
        await act()
        assert await snap(sk) != before, f"allowed but wrote nothing: {row.rule}"
        return
    with pytest.raises(skift.Refused) as ei:
        await act()
    assert refusal.msg in ei.value.message, row.rule
    assert refusal.next.lower() in ei.value.next.lower(), row.rule
    assert await snap(sk) == before, f"a refusal wrote: {row.rule}"


# ------------------------------------------------------------ the five ways around a gate

FIVE_WAYS = {
    "drop": ("drop", lambda g, w: skift.DropNode(node=g, reason="not needed after all")),
    "complete": ("complete", lambda g, w: skift.CompleteNode(node=g, result="done it myself")),
    "reassign": ("reassign or reclassify", lambda g, w: skift.UpdateNode(node=g, assignee="bot")),
    "reclassify": (
        "reassign or reclassify",
        lambda g, w: skift.UpdateNode(node=g, assignee_kind="agent"),
    ),
    "unlink": ("unlink", lambda g, w: skift.RemoveEdge(from_=g, to=w)),
}


@pytest.mark.parametrize("way", list(FIVE_WAYS))
async def test_agent_cannot_get_around_a_gate_it_filed(
    sk: skift.LocalSkift, snap: Snap, way: str
) -> None:
    """An agent cannot dispose of the gate it filed: dropping, completing, reassigning,
    reclassifying or unlinking it is refused with a message naming the gate ("... is a gate you
    filed ...") and the next move, nothing is written, and the work stays waiting on the person."""
    bot = sk.acting_as(skift.Agent("bot"))
    await sk.create_project("P")
    # The work is the agent's own, so it may unblock it: only the gate rule stands in the way.
    await bot.patch("p", [skift.CreateNode(title="Integrate the payment API")])
    claim = await bot.claim("p#1")
    res = await bot.gate("p#1", lease=claim.lease.id, title="Put the API key in the vault")
    gate = res.created["gate"]
    assert gate == "p#2"
    verb, make = FIVE_WAYS[way]
    before = await snap(sk)
    with pytest.raises(skift.Refused) as ei:
        await bot.patch("p", [make(gate, "p#1")])
    assert ei.value.message == f"{gate} is a gate you filed; an agent may not {verb} it"
    assert ei.value.next == "Ask its assignee to complete it, or comment on it."
    assert await snap(sk) == before
    ex = await sk.explain("p#1")
    assert [r.kind for r in ex.reasons] == ["blocked_by", "waiting_on_person"]
    assert ex.reasons[0].detail["ref"] == gate


@pytest.mark.parametrize("way", list(FIVE_WAYS))
async def test_gate_rule_holds_where_the_agent_could_otherwise_write(
    sk: skift.LocalSkift, snap: Snap, way: str
) -> None:
    """The filer rules hold even where nothing else would stop the agent: a gate it files in the
    same request (which it may otherwise change freely) is still not its to dispose of."""
    bot = sk.acting_as(skift.Agent("bot"))
    await sk.create_project("P")
    await bot.patch("p", [skift.CreateNode(title="Bot's work")])
    verb, make = FIVE_WAYS[way]
    before = await snap(sk)
    with pytest.raises(skift.Refused) as ei:
        await bot.patch(
            "p",
            [
                skift.CreateNode(alias="g", title="Ask for access", assignee_kind=GATE),
                skift.AddEdge(from_="g", to="#1"),
                make("g", "#1"),
            ],
        )
    assert ei.value.message == f"p#2 is a gate you filed; an agent may not {verb} it"
    assert "Ask its assignee" in ei.value.next
    assert await snap(sk) == before


@pytest.mark.parametrize("way", list(FIVE_WAYS))
async def test_user_disposes_of_its_own_gates(sk: skift.LocalSkift, way: str) -> None:
    """A user disposes of its own gates: the filer rules are scoped to non-user principals, so a
    person may drop, complete, reassign, reclassify or unlink a gate they filed."""
    await sk.create_project("P")
    await sk.patch("p", [skift.CreateNode(title="Ship it")])
    claim = await sk.claim("p#1")
    res = await sk.gate("p#1", lease=claim.lease.id, title="Sign the contract")
    gate = res.created["gate"]
    _, make = FIVE_WAYS[way]
    await sk.patch("p", [make(gate, "p#1")])
    node = await sk.get(gate)
    assert (node.status, node.assignee, node.assignee_kind) == {
        "drop": (skift.Status.DROPPED, None, GATE),
        "complete": (skift.Status.DONE, None, GATE),
        "reassign": (skift.Status.OPEN, "bot", GATE),
        "reclassify": (skift.Status.OPEN, None, skift.AssigneeKind.AGENT),
        "unlink": (skift.Status.OPEN, None, GATE),
    }[way]
    # Completing or unlinking the gate frees the work; dropping a gate never satisfies it.
    assert (await sk.get("p#1")).ready is (way in ("complete", "unlink"))


async def test_user_completes_a_gate_an_agent_filed(sk: skift.LocalSkift) -> None:
    """Only a user may complete a gate: the person completes the gate the agent filed, and the
    agent's work is ready again with the person's result as its input."""
    bot = sk.acting_as(skift.Agent("bot"))
    await sk.create_project("P")
    await bot.patch("p", [skift.CreateNode(title="Deploy")])
    claim = await bot.claim("p#1")
    await bot.gate("p#1", lease=claim.lease.id, title="Approve the deploy")
    with pytest.raises(skift.Refused):
        await bot.complete("p#2", result="approved (by me)")
    await sk.complete("p#2", result="approved")
    assert (await sk.get("p#1")).ready
    again = await bot.claim("p#1")
    assert [(i.ref, i.result, i.author) for i in again.inputs] == [("p#2", "approved", "ada")]


async def test_service_is_held_to_the_agent_rules(sk: skift.LocalSkift, snap: Snap) -> None:
    """The rules for agents are the rules for every non-user principal: a service may not hold,
    claim or complete a gate, or administer principals."""
    svc = sk.acting_as(skift.Service("orchestrator"))
    await sk.create_project("P")
    await sk.patch(
        "p",
        [skift.CreateNode(title="Work"), skift.CreateNode(title="Ask", assignee_kind=GATE)],
    )
    before = await snap(sk)
    with pytest.raises(skift.Refused) as ei:
        await svc.hold("p#1", reason="parking")
    assert "only a person" in ei.value.message
    with pytest.raises(skift.Refused) as ei:
        await svc.claim("p#2")
    assert "p#2 is a gate" in ei.value.message
    with pytest.raises(skift.Refused) as ei:
        await svc.complete("p#2", result="done")
    assert "p#2 is a gate" in ei.value.message
    with pytest.raises(skift.Refused):
        await svc.add_principal("mallory", "user")
    assert await snap(sk) == before
    await svc.patch("p", [skift.CreateNode(title="Filed by the service")])


async def test_claim_next_never_hands_an_agent_a_gate(sk: skift.LocalSkift, snap: Snap) -> None:
    """ClaimNext goes through the same decision: an agent is never handed a gate (it finds
    nothing ready), while a person may take it."""
    await sk.create_project("P")
    await sk.patch("p", [skift.CreateNode(title="Sign up", assignee_kind=GATE)])
    bot = sk.acting_as(skift.Agent("bot"))
    before = await snap(sk)
    with pytest.raises(skift.NothingReady):
        await bot.claim_next()
    assert await snap(sk) == before
    assert (await sk.claim_next()).node.ref == "p#1"


async def test_refusal_lists_every_denial(sk: skift.LocalSkift) -> None:
    """A refused request names its first denial and carries all of them, each with a next move."""
    await sk.create_project("P")
    await sk.patch("p", [skift.CreateNode(title="One"), skift.CreateNode(title="Two")])
    bot = sk.acting_as(skift.Agent("bot"))
    with pytest.raises(skift.Refused) as ei:
        await bot.patch(
            "p",
            [
                skift.UpdateNode(node="#1", title="x"),
                skift.UpdateNode(node="#2", title="y"),
                skift.HoldNode(node="#1", reason="z"),
            ],
        )
    denials = ei.value.details["denials"]
    assert [d["msg"].split(":")[0] for d in denials] == [
        "only a person may hold or release work",
        "p#1 is not yours to change",
        "p#2 is not yours to change",
    ]
    assert all(d["next"] for d in denials)
    assert ei.value.message == denials[0]["msg"]


# ------------------------------------------------------------- an organization's policy

TWO_PERSON_RULE = """
package skift.authz

import rego.v1

# The unscoped filer rules: nobody, a person included, disposes of a gate they filed.
deny contains {
    "msg": sprintf("%s is a gate you filed: approval needs a second person", [n.ref]),
    "next": "Ask another person to complete it.",
} if {
    some i in input.intents
    i.action in {"complete", "drop"}
    n := i.node
    n.gate
    n.filed_by_me
}

deny contains {
    "msg": sprintf("%s is a gate you filed: approval needs a second person", [n.ref]),
    "next": "Ask another person to reassign it.",
} if {
    some i in input.intents
    i.action == "update"
    n := i.node
    n.gate
    n.filed_by_me
    some field in i.changes
    field in {"assignee", "assignee_kind"}
}

deny contains {
    "msg": sprintf("%s is a gate you filed: approval needs a second person", [n.ref]),
    "next": "Ask another person to unlink it.",
} if {
    some i in input.intents
    i.action == "unlink"
    n := i.from
    n.gate
    n.filed_by_me
}
"""


@pytest.mark.own_server  # reaches the server's database in process
async def test_organization_policy_two_person_approval(
    sk: skift.LocalSkift, store_url: str, snap: Snap
) -> None:
    """An organization may extend the default policy with its own Rego: re-adding the unscoped
    filer rules means a user can no longer complete or drop a gate they filed (approval needs a
    second person), a second user can, and the default policy still lets the first user."""
    # The policy is in-process configuration; on "remote" run it over the same database in process.
    url = store_url.removeprefix("remote+")
    policy = skift.Policy.default().extended(TWO_PERSON_RULE)
    async with skift.open(url, principal=skift.User("ada"), policy=policy) as ada:
        bob = ada.acting_as(skift.User("bob"))
        p = await ada.create_project("Release")
        res = await ada.patch(
            p.slug,
            [
                skift.CreateNode(alias="g1", title="Approve the release", assignee_kind=GATE),
                skift.CreateNode(alias="g2", title="Approve the budget", assignee_kind=GATE),
                skift.CreateNode(alias="w", title="Release", blocked_by=("g1", "g2")),
            ],
        )
        g1, g2, work = res.created["g1"], res.created["g2"], res.created["w"]
        before = await snap(ada)
        for attempt in (
            ada.complete(g1, result="approved by myself"),
            ada.drop(g1, reason="skip the approval"),
            ada.patch(p.slug, [skift.UpdateNode(node=g1, assignee_kind="agent")]),
            ada.patch(p.slug, [skift.RemoveEdge(from_=g1, to=work)]),
        ):
            with pytest.raises(skift.Refused) as ei:
                await attempt
            assert ei.value.message == f"{g1} is a gate you filed: approval needs a second person"
            assert "another person" in ei.value.next
        assert await snap(ada) == before
        await bob.complete(g1, result="approved by bob")
        await bob.drop(g2, reason="no budget needed")
        assert (await ada.get(g1)).status is skift.Status.DONE
        # An agent is still held to the default rules under the extended policy.
        with pytest.raises(skift.Refused) as ei:
            await ada.acting_as(skift.Agent("bot")).complete(work, result="x")
        assert "not yours to change" in ei.value.message

    # The default policy (the sk fixture): a user disposes of its own gates.
    q = await sk.create_project("Release default")
    res = await sk.patch(q.slug, [skift.CreateNode(alias="g", title="Approve", assignee_kind=GATE)])
    await sk.complete(res.created["g"], result="approved by myself")
    assert (await sk.get(res.created["g"])).status is skift.Status.DONE
