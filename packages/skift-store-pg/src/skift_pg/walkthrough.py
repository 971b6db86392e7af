"""``make run`` until the server exists: a scripted walk through the library.

Starts (or reuses) the embedded PostgreSQL under the user's data directory,
then creates a project, decomposes work with one aliased patch, claims,
completes, and shows readiness move. Run it twice: the data is kept, and the
second walk gets a project of its own (``walkthrough-2``).

    uv run python -m skift_pg.walkthrough [--dsn postgresql://…]
"""

from __future__ import annotations

import argparse
import asyncio
import os
from datetime import timedelta

import skift


def _say(text: str) -> None:
    print(text, flush=True)


def _show_ready(page: skift.ReadyPage) -> None:
    if not page.nodes:
        _say("    (nothing ready)")
    for n in page.nodes:
        _say(f"    {n.ref:<22} {n.priority.value}  {n.title}")


async def walk(dsn: str) -> None:
    async with skift.open(dsn, principal=skift.User(os.environ.get("USER", "ada"))) as sk:
        bot = sk.acting_as(skift.Agent("walkthrough-agent"))
        proj = await sk.create_project(
            "Walkthrough", vcs_url="https://example.com/acme/walkthrough.git"
        )
        _say(f"1. Created project {proj.slug!r} (just a title; no ritual).")

        res = await sk.patch(
            proj.slug,
            [
                skift.CreateNode(alias="epic", title="Ship sign-in with OAuth"),
                skift.CreateNode(
                    alias="research",
                    title="Recommend an OAuth provider",
                    parent="epic",
                    priority=skift.Priority.P1,
                ),
                skift.CreateNode(
                    alias="signup",
                    title="Sign up with the chosen provider",
                    parent="epic",
                    assignee_kind=skift.AssigneeKind.USER,
                    blocked_by=("research",),
                ),
                skift.CreateNode(
                    alias="impl",
                    title="Implement the callback",
                    parent="epic",
                    blocked_by=("signup",),
                ),
            ],
        )
        _say("2. One patch decomposed the work with aliases, atomically:")
        for alias, ref in res.created.items():
            _say(f"    {alias:<9} -> {ref}")

        _say(
            "3. What an agent may take now (the gate is a person's, the epic waits on its children):"
        )
        _show_ready(await bot.ready(projects=[proj.slug]))

        claim = await bot.claim_next(
            projects=[proj.slug], ttl=timedelta(minutes=5), harness="walkthrough"
        )
        _say(
            f"4. The agent claimed {claim.node.ref}; lease {claim.lease.id} (the fencing token) until {claim.lease.expires_at:%H:%M:%S}."
        )
        await bot.complete(
            claim.node.ref, lease=claim.lease.id, result="Use the provider with PKCE support."
        )
        _say(f"5. It completed {claim.node.ref} with a result.")

        why = await bot.explain(res.created["impl"])
        _say(f"6. Why is {why.ref} not ready?")
        for r in why.reasons:
            _say(f"    {r.kind}: {r.detail.get('ref', '')} {r.detail.get('title', '')}".rstrip())

        _say("7. What the person sees as ready now (the gate, with the research as its input):")
        _show_ready(await sk.ready(projects=[proj.slug]))
        await sk.complete(
            res.created["signup"], result="Signed up; the client secret is in the vault."
        )
        _say(
            f"8. The person completed the gate {res.created['signup']}; the agent's ready set now:"
        )
        _show_ready(await bot.ready(projects=[proj.slug]))

        events = await sk.events()
        _say(
            f"9. Every change is an event: {len(events)} so far in this organization, the last ones:"
        )
        for e in events[-4:]:
            _say(
                f"    {e.occurred_at:%H:%M:%S} {e.principal:<18} {e.op:<14} {e.node or e.project or ''}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", help="use this PostgreSQL instead of the embedded one")
    args = parser.parse_args()
    if args.dsn:
        asyncio.run(walk(args.dsn))
        return
    from .embedded import EmbeddedCluster, default_data_dir

    data = default_data_dir()
    _say(f"Starting the embedded PostgreSQL in {data} (kept across runs) ...")
    with EmbeddedCluster(data) as cluster:
        _say(f"   ready at {cluster.dsn}\n")
        asyncio.run(walk(cluster.dsn))
    _say("\nDone. The embedded server was stopped; its data stays for the next run.")


if __name__ == "__main__":
    main()
