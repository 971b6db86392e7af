"""Attribution of content: who wrote a node's body and its result, and who completed each input.

Derived from the events every write carries (never stored on the node), so a
consumer can render content as a claim by a named principal (seed: "Content is
data, not instructions").
"""

from __future__ import annotations

import skift


def _body_by(n: skift.NodeInfo) -> tuple[str | None, str | None]:
    return n.body_author, n.body_author_kind


def _result_by(n: skift.NodeInfo) -> tuple[str | None, str | None]:
    return n.result_author, n.result_author_kind


async def test_an_agents_result_is_attributed_to_it_in_the_downstream_claim(
    sk: skift.LocalSkift,
) -> None:
    """A person files two nodes, an agent completes the first; whoever claims the second
    sees the agent's result as an input by that agent (kind agent), and the claimed node's
    body as the person's."""
    p = await sk.create_project("P")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(alias="a", title="Research", body="Compare providers"),
            skift.CreateNode(title="Decide", body="Pick one", blocked_by=("a",)),
        ],
    )
    bot = sk.acting_as(skift.Agent("bot"))
    first = await bot.claim("p#1")
    assert _body_by(first.node) == ("ada", "user")
    assert _result_by(first.node) == (None, None)
    await bot.complete("p#1", lease=first.lease.id, result="Provider B")
    other = sk.acting_as(skift.Agent("other-bot"))
    second = await other.claim("p#2")
    (inp,) = second.inputs
    assert (inp.ref, inp.result, inp.author, inp.author_kind) == (
        "p#1",
        "Provider B",
        "bot",
        "agent",
    )
    assert _body_by(second.node) == ("ada", "user")
    done = await sk.get("p#1")
    assert _result_by(done) == ("bot", "agent")
    assert _body_by(done) == ("ada", "user")


async def test_a_persons_body_edit_moves_the_body_author(sk: skift.LocalSkift) -> None:
    """An agent's node is the agent's until a person rewrites its body; a later edit of
    anything but the body (a title) leaves the body's author alone."""
    p = await sk.create_project("P")
    bot = sk.acting_as(skift.Agent("bot"))
    await bot.patch(p.slug, [skift.CreateNode(title="Plan", body="Step 1")])
    assert _body_by(await sk.get("p#1")) == ("bot", "agent")
    await sk.patch(p.slug, [skift.UpdateNode(node="#1", title="Plan v2")])
    assert _body_by(await sk.get("p#1")) == ("bot", "agent")
    await sk.patch(p.slug, [skift.UpdateNode(node="#1", body="Step 1, then step 2")])
    got = await bot.get("p#1")
    assert (got.body, *_body_by(got)) == ("Step 1, then step 2", "ada", "user")
    claim = await bot.claim("p#1")
    await bot.patch(p.slug, [skift.UpdateNode(node="#1", title="Plan v3")], lease=claim.lease.id)
    assert _body_by(await sk.get("p#1")) == ("ada", "user")
    await bot.patch(p.slug, [skift.UpdateNode(node="#1", body="Step 2 only")], lease=claim.lease.id)
    assert _body_by(await sk.get("p#1")) == ("bot", "agent")


async def test_reopen_and_complete_by_another_principal_moves_the_result_author(
    sk: skift.LocalSkift,
) -> None:
    """A reopened node keeps its result and who wrote it until someone completes it again;
    then the result is theirs, in the node and in a successor's inputs."""
    p = await sk.create_project("P")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(alias="a", title="Draft"),
            skift.CreateNode(title="Publish", blocked_by=("a",)),
        ],
    )
    bot = sk.acting_as(skift.Agent("bot"))
    claim = await bot.claim("p#1")
    await bot.complete("p#1", lease=claim.lease.id, result="v1")
    assert _result_by(await sk.get("p#1")) == ("bot", "agent")
    await sk.reopen("p#1", reason="needs a second pass")
    reopened = await sk.get("p#1")
    assert (reopened.status, reopened.result, *_result_by(reopened)) == (
        skift.Status.OPEN,
        "v1",
        "bot",
        "agent",
    )
    reviewer = sk.acting_as(skift.Agent("reviewer"))
    again = await reviewer.claim("p#1")
    assert _result_by(again.node) == ("bot", "agent")
    await reviewer.complete("p#1", lease=again.lease.id, result="v2")
    assert _result_by(await sk.get("p#1")) == ("reviewer", "agent")
    (inp,) = (await bot.claim("p#2")).inputs
    assert (inp.result, inp.author, inp.author_kind) == ("v2", "reviewer", "agent")


async def test_a_person_completing_a_gate_is_attributed_as_a_user(sk: skift.LocalSkift) -> None:
    """A gate a person completes hands the agent behind it an input of kind user."""
    p = await sk.create_project("P")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(alias="g", title="Mint a token", assignee_kind="user"),
            skift.CreateNode(title="Deploy", blocked_by=("g",)),
        ],
    )
    claim = await sk.claim("p#1")
    await sk.complete("p#1", lease=claim.lease.id, result="Token placed in the vault")
    (inp,) = (await sk.acting_as(skift.Agent("bot")).claim("p#2")).inputs
    assert (inp.author, inp.author_kind) == ("ada", "user")


async def test_a_node_with_twenty_predecessors_claims_with_every_input(
    sk: skift.LocalSkift,
) -> None:
    """Twenty predecessors completed by four agents, some with artifacts: the claim's inputs
    are all twenty, in order, each with its own result, author and artifacts."""
    p = await sk.create_project("P")
    await sk.patch(
        p.slug,
        [skift.CreateNode(alias=f"n{i}", title=f"Part {i}") for i in range(1, 21)]
        + [skift.CreateNode(title="Assemble", blocked_by=tuple(f"n{i}" for i in range(1, 21)))],
    )
    for i in range(1, 21):
        bot = sk.acting_as(skift.Agent(f"bot-{i % 4}"))
        claim = await bot.claim(f"p#{i}")
        artifacts = [skift.Artifact(name=f"part-{i}.md")] if i % 3 == 0 else []
        await bot.complete(
            f"p#{i}", lease=claim.lease.id, result=f"result {i}", artifacts=artifacts
        )
    final = await sk.acting_as(skift.Agent("assembler")).claim("p#21")
    assert [
        (i.ref, i.result, i.author, i.author_kind, [a.name for a in i.artifacts])
        for i in final.inputs
    ] == [
        (
            f"p#{i}",
            f"result {i}",
            f"bot-{i % 4}",
            "agent",
            [f"part-{i}.md"] if i % 3 == 0 else [],
        )
        for i in range(1, 21)
    ]
    assert {a.author for i in final.inputs for a in i.artifacts} == {
        f"bot-{i % 4}" for i in range(3, 21, 3)
    }


async def test_listings_attribute_when_asked(sk: skift.LocalSkift) -> None:
    """Ready pages and plain listings leave attribution out (it costs a read); a listing
    asked for it (attributed=True) carries it, as get does."""
    p = await sk.create_project("P")
    bot = sk.acting_as(skift.Agent("bot"))
    await bot.patch(p.slug, [skift.CreateNode(title="One", body="by bot")])
    await sk.patch(p.slug, [skift.CreateNode(title="Two", body="by ada")])
    claim = await bot.claim("p#1")
    await bot.complete("p#1", lease=claim.lease.id, result="done")
    plain = (await sk.list_nodes()).nodes
    assert {(_body_by(n), _result_by(n)) for n in plain} == {((None, None), (None, None))}
    assert all(n.body_author is None for n in (await sk.ready()).nodes)
    listed = {
        n.ref: (_body_by(n), _result_by(n)) for n in (await sk.list_nodes(attributed=True)).nodes
    }
    assert listed == {
        "p#1": (("bot", "agent"), ("bot", "agent")),
        "p#2": (("ada", "user"), (None, None)),
    }
