"""``skift demo``: the model in one command, on an in-memory store (nothing to set up).

A person plans a project with one patch (aliases link nodes not yet made),
two simulated agents claim work in turn, one files a gate for the person and
stops, the person parks a branch with a hold, and Explain says why each
stalled node waits. Every step calls the public API; nothing is staged.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from rich.rule import Rule
from rich.text import Text

import skift

from . import _render


async def tour(*, pause: float = 0.0) -> dict[str, object]:
    """Run the tour; returns its steps and the project as it ends (``skift demo --json``)."""
    out = _render.out()
    steps: list[str] = []

    async def step(title: str, what: str) -> None:
        steps.append(title)
        if pause:
            await asyncio.sleep(pause)
        out.print()
        out.print(Rule(Text(title, style="bold"), align="left"))
        out.print(Text(what, style="dim"))

    async with skift.open("memory:", principal=skift.User("ada")) as ada:
        ann = ada.acting_as(skift.Agent("agent-ann"))
        bob = ada.acting_as(skift.Agent("agent-bob"))

        await step(
            "1. ada plans a project in one patch",
            "A flat list of operations; 'alias' names a node so later operations can use it.",
        )
        proj = await ada.create_project("Docs site")
        slug = proj.slug
        plan = await ada.patch(
            slug,
            [
                skift.CreateNode(alias="site", title="Publish the docs site", kind="epic"),
                skift.CreateNode(alias="host", title="Recommend a static host", parent="site"),
                skift.CreateNode(
                    alias="theme", title="Pick a theme and build the skeleton", parent="site"
                ),
                skift.CreateNode(
                    alias="pages",
                    title="Port the five guide pages",
                    parent="site",
                    blocked_by=("theme",),
                ),
                skift.CreateNode(
                    alias="deploy",
                    title="Deploy to the chosen host",
                    parent="site",
                    blocked_by=("host", "pages"),
                ),
                skift.CreateNode(alias="blog", title="Write the launch post", priority="p3"),
            ],
        )
        out.print(_render.node_table(plan.nodes))

        await step(
            "2. two agents claim ready work",
            "Ready = open, not blocked, not held, not leased, no open children. The epic waits on its children.",
        )
        page = await ada.ready(projects=[slug])
        out.print(_render.node_table(page.nodes, turn=True))
        c1 = await ann.claim_next(projects=[slug], harness="demo", ttl=timedelta(minutes=10))
        c2 = await bob.claim_next(projects=[slug], harness="demo", ttl=timedelta(minutes=10))
        for who, c in (("agent-ann", c1), ("agent-bob", c2)):
            out.print(
                f"{who} claimed [bold cyan]{c.node.ref}[/] {c.node.title} (lease …{c.lease.id[-8:]})"
            )

        await step(
            "3. ann finishes; bob needs a person",
            "A result becomes the input of whatever it blocked. A gate is a node only a person completes.",
        )
        await ann.complete(
            c1.node.ref,
            lease=c1.lease.id,
            result="Use a static host with preview deploys; it costs nothing at our size.",
        )
        out.print(f"agent-ann completed {c1.node.ref}")
        g = await bob.gate(
            c2.node.ref,
            lease=c2.lease.id,
            title="Choose between the two themes (links in the body)",
            body="A: minimal, B: sidebar. Reply by completing this node with A or B.",
        )
        gate_ref = g.created["gate"]
        out.print(f"agent-bob filed gate [bold yellow]{gate_ref}[/] and released {c2.node.ref}")
        _render.explanation(await ada.explain(c2.node.ref))

        await step("4. ada holds the launch post", "A hold parks work without changing its status.")
        blog = plan.created["blog"]
        await ada.hold(blog, reason="after the site is live")
        _render.explanation(await ada.explain(blog))

        await step(
            "5. ada answers the gate; the graph moves",
            "Completing the gate satisfies its edge; the theme work is ready again with ada's answer as input.",
        )
        gate_claim = await ada.claim(gate_ref)
        await ada.complete(gate_ref, lease=gate_claim.lease.id, result="B: the sidebar theme.")
        c3 = await bob.claim(c2.node.ref)
        out.print(f"agent-bob claimed {c3.node.ref} again; inputs:")
        for i in c3.inputs:
            out.print(f"  {i.ref} [dim]({i.author})[/dim]: {i.result}")

        await step("6. the whole project", "Containment, state and blockers at a glance.")
        listing = await ada.list_nodes(projects=[slug])
        blockers: dict[str, list[str]] = {}
        for n in listing.nodes:
            if n.blocked and n.status is skift.Status.OPEN:
                ex = await ada.explain(n.ref)
                blockers[n.ref] = [
                    _render.short_ref(str(r.detail["ref"]), n.project)
                    for r in ex.reasons
                    if r.kind == "blocked_by"
                ]
        out.print(_render.node_tree(listing.nodes, blockers))
        _render.explanation(await ada.explain(plan.created["deploy"]))
        out.print()
        out.print(
            "[dim]That was an in-memory store. Next: 'skift serve' (or 'make run'), then "
            "'skift project create TITLE' in another terminal.[/dim]"
        )
        return {
            "project": slug,
            "steps": steps,
            "nodes": [skift.to_json(n) for n in listing.nodes],
            "store": "memory:",
        }
