"""Keyset pages (AIP-158): a paged list walked while it changes sends every item that
exists throughout the walk once — never twice, never skipped; the size asked applies to
every page; a page token of another list, or no page token at all, is refused naming
``page_token``.

Each test walks one list with small pages and, between pages, adds items before and
after the walk's position and removes one, on every store and over the wire.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

import skift

T = TypeVar("T")


async def walk(
    read: Callable[[int, str | None], Awaitable[skift.Page[T]]],
    key: Callable[[T], Any],
    *,
    sizes: tuple[int, ...] = (1,),
    between: Callable[[int], Awaitable[None]] | None = None,
) -> list[Any]:
    """Every item of a list, a page at a time (page ``i`` asks ``sizes[i % len(sizes)]``),
    calling ``between(i)`` after page ``i``; the keys in the order sent."""
    seen: list[Any] = []
    token: str | None = None
    i = 0
    while True:
        size = sizes[i % len(sizes)]
        page = await read(size, token)
        assert len(page) <= size, "a page held more than the size asked"
        seen += [key(x) for x in page]
        token = page.next_page
        if token is None:
            return seen
        assert len(page) == size, "a page short of the size asked had a next page"
        if between is not None:
            await between(i)
        i += 1
        assert i < 200, "the walk does not end"


def assert_once(seen: list[Any], throughout: list[Any]) -> None:
    """No item twice; every item that existed throughout, in the list's order."""
    assert len(seen) == len(set(seen)), f"an item was sent twice: {seen}"
    assert [k for k in seen if k in throughout] == throughout, f"an item was skipped: {seen}"


async def assert_bad_token(read: Callable[[str], Awaitable[object]]) -> None:
    for bad in ("garbage", '["nodes",1]', '["projects"]'):
        with pytest.raises(skift.Invalid) as ei:
            await read(bad)
        assert ei.value.details.get("field") == "page_token"


# ------------------------------------------------------------------ projects


async def test_project_pages_hold_still_while_projects_become_active(
    sk: skift.LocalSkift,
) -> None:
    """ListProjects orders by activity, which changes under a walk: the walk orders by
    each project's activity as of its first page, so a project that becomes active
    mid-walk (jumping to the front of a fresh list) is neither sent again nor skipped."""
    made = [await sk.create_project(f"Walk {n}") for n in range(7)]
    throughout = [p.slug for p in await sk.list_projects()]
    added: list[str] = []

    async def between(i: int) -> None:
        # the project listed last becomes the most active; one already sent too
        await sk.patch(throughout[-1 - i % 3], [skift.CreateNode(title=f"busy {i}")])
        await sk.patch(throughout[0], [skift.CreateNode(title=f"again {i}")])
        if i == 1:
            added.append((await sk.create_project("Late")).slug)
        if i == 2:
            gone = made[1].slug  # not sent yet: it is not sent at all
            await sk.archive_project(gone)
            throughout.remove(gone)

    seen = await walk(
        lambda n, t: sk.list_projects(limit=n, page=t),
        lambda p: p.slug,
        sizes=(1, 2),
        between=between,
    )
    assert_once(seen, throughout)
    # the next walk orders by the activity this one did not: the project written last first
    fresh = [p.slug for p in await sk.list_projects()]
    assert fresh[0] == throughout[0]
    assert set(seen) - set(throughout) <= set(added)
    assert made[1].slug not in seen


async def test_project_pages_take_the_size_asked(sk: skift.LocalSkift) -> None:
    for n in range(6):
        await sk.create_project(f"Sized {n}")
    whole = [p.slug for p in await sk.list_projects()]
    first = await sk.list_projects(limit=2)
    second = await sk.list_projects(limit=3, page=first.next_page)
    assert [p.slug for p in [*first, *second]] == whole[:5]
    last = await sk.list_projects(limit=5, page=second.next_page)
    assert [p.slug for p in last] == whole[5:]
    assert last.next_page is None


async def test_a_project_page_token_of_another_list_is_refused(sk: skift.LocalSkift) -> None:
    await sk.create_project("Tokens")
    await assert_bad_token(lambda t: sk.list_projects(page=t))


# ------------------------------------------------------------------ search


async def test_search_pages_hold_still_while_nodes_change(sk: skift.LocalSkift) -> None:
    """Search pages follow (rank, project, number): nodes added, edited or archived away
    between pages move no other hit, so every hit unchanged throughout is sent once."""
    proj = await sk.create_project("Finds")
    other = await sk.create_project("Finds elsewhere")
    titles = [
        "kestrel",
        "kestrel kestrel",
        "kestrel notes",
        "about a kestrel",
        "kestrel kestrel kestrel",
        "kestrel again",
        "the kestrel",
    ]
    await sk.patch(proj.slug, [skift.CreateNode(title=t, body="kestrel") for t in titles])
    await sk.patch(other.slug, [skift.CreateNode(title=t) for t in titles[:3]])
    whole = [h.node.ref for h in await sk.search("kestrel", limit=50)]
    assert len(whole) == len(titles) + 3
    throughout = list(whole)
    edited = next(r for r in reversed(whole) if r.startswith(proj.slug + "#"))

    async def between(i: int) -> None:
        # a new best match (before the position) and a new weak one (after it)
        await sk.patch(proj.slug, [skift.CreateNode(title=f"kestrel kestrel kestrel kestrel {i}")])
        await sk.patch(proj.slug, [skift.CreateNode(title=f"other {i}", body="kestrel")])
        if i == 1:
            await sk.patch(proj.slug, [skift.UpdateNode(node=edited, title="kestrel kestrel x")])
            throughout.remove(edited)
        if i == 2:
            await sk.archive_project(other.slug)
            throughout[:] = [r for r in throughout if not r.startswith(other.slug + "#")]

    seen = await walk(
        lambda n, t: sk.search("kestrel", limit=n, page=t),
        lambda h: h.node.ref,
        sizes=(2, 1),
        between=between,
    )
    assert_once(seen, throughout)


async def test_search_pages_take_the_size_asked(sk: skift.LocalSkift) -> None:
    proj = await sk.create_project("Sized search")
    await sk.patch(proj.slug, [skift.CreateNode(title=f"heron {i}") for i in range(6)])
    whole = [h.node.ref for h in await sk.search("heron", limit=50)]
    first = await sk.search("heron", limit=2)
    second = await sk.search("heron", limit=3, page=first.next_page)
    assert [h.node.ref for h in [*first, *second]] == whole[:5]
    await assert_bad_token(lambda t: sk.search("heron", page=t))


# ------------------------------------------------------------------ webhook deliveries

HOOK = "https://hooks.example.com/paging"


async def test_delivery_pages_hold_still_while_deliveries_are_queued(sk: skift.LocalSkift) -> None:
    """ListWebhookDeliveries pages newest first after the (created_at, id) of the last
    delivery sent: deliveries queued between pages come before the position and shift
    nothing, so none is sent twice and none skipped."""
    proj = await sk.create_project("Hooked")
    hooks = [await sk.add_webhook(proj.slug, f"{HOOK}/{i}") for i in range(3)]
    for i in range(7):
        await sk.test_webhook(hooks[i % 3].id)
    throughout = [d.id for d in await sk.webhook_deliveries(limit=50)]
    assert len(throughout) >= 7

    async def between(i: int) -> None:
        await sk.test_webhook(hooks[i % 3].id)

    seen = await walk(
        lambda n, t: sk.webhook_deliveries(limit=n, page=t),
        lambda d: d.id,
        sizes=(2, 1, 3),
        between=between,
    )
    assert_once(seen, throughout)
    # one endpoint's deliveries, the size asked on every page
    mine = [d.id for d in await sk.webhook_deliveries(hooks[0].id, limit=50)]
    first = await sk.webhook_deliveries(hooks[0].id, limit=1)
    second = await sk.webhook_deliveries(hooks[0].id, limit=2, page=first.next_page)
    assert [d.id for d in [*first, *second]] == mine[:3]
    await assert_bad_token(lambda t: sk.webhook_deliveries(page=t))


# ------------------------------------------------------------------ nodes


def as_page(got: skift.ReadyPage) -> skift.Page[skift.NodeInfo]:
    ends = [""] * len(got.nodes)
    if ends and got.next_page:
        ends[-1] = got.next_page
    return skift.Page(got.nodes, ends=ends, more=got.next_page is not None)


async def test_node_pages_hold_still_while_nodes_come_and_go(sk: skift.LocalSkift) -> None:
    """ListNodes pages after the (project, number) of the last node sent: nodes created,
    and nodes dropped out of an open-only listing, between pages move no other node."""
    a = await sk.create_project("Nodes a")
    b = await sk.create_project("Nodes b")
    await sk.patch(a.slug, [skift.CreateNode(title=f"a{i}") for i in range(5)])
    await sk.patch(b.slug, [skift.CreateNode(title=f"b{i}") for i in range(5)])
    flt = {"projects": [a.slug, b.slug], "status": "open"}
    throughout = [n.ref for n in (await sk.list_nodes(limit=50, **flt)).nodes]
    assert len(throughout) == 10

    async def between(i: int) -> None:
        await sk.patch(a.slug, [skift.CreateNode(title=f"late a{i}")])
        await sk.patch(b.slug, [skift.CreateNode(title=f"late b{i}")])
        if i == 1:  # one not sent yet leaves the listing: it is not sent
            gone = throughout[-2]
            await sk.drop(gone, reason="gone")
            throughout.remove(gone)
        if i == 2:  # one already sent leaves it: nothing shifts
            await sk.drop(throughout[0], reason="gone")

    seen = await walk(
        lambda n, t: _nodes(sk, n, t, flt),
        lambda n: n.ref,
        sizes=(2, 3, 1),
        between=between,
    )
    assert_once(seen, throughout)
    first = await sk.list_nodes(limit=2, **flt)
    second = await sk.list_nodes(limit=4, page=first.next_page, **flt)
    assert len(second.nodes) == 4
    await assert_bad_token(lambda t: sk.list_nodes(page=t, **flt))


async def _nodes(
    sk: skift.LocalSkift, size: int, token: str | None, flt: dict[str, Any]
) -> skift.Page[skift.NodeInfo]:
    return as_page(await sk.list_nodes(limit=size, page=token, **flt))


async def test_a_forged_position_is_refused_not_read(sk: skift.LocalSkift) -> None:
    """A position carries nothing a caller must be trusted with, and nothing out of what a
    store holds gets to it: numbers out of range, times out of the calendar, a rank that
    is no number are INVALID_ARGUMENT naming page_token (never an internal error)."""
    await sk.create_project("Forged")
    ulid = "0" * 26
    for bad in (
        f'["projects",-1,0,"{ulid}"]',
        f'["projects",{2**64},0,"{ulid}"]',
        f'["projects",1,{10**20},"{ulid}"]',
        '["projects",1,0,"not an id"]',
    ):
        with pytest.raises(skift.Invalid) as ei:
            await sk.list_projects(page=bad)
        assert ei.value.details.get("field") == "page_token"
    for bad in (f'["search",NaN,"{ulid}",1]', f'["search",1.5,"{ulid}",{2**63}]'):
        with pytest.raises(skift.Invalid) as ei:
            await sk.search("forged", page=bad)
        assert ei.value.details.get("field") == "page_token"


# ------------------------------------------------------------------ ready


async def _ready(sk: skift.LocalSkift, size: int, token: str | None, **flt: Any) -> Any:
    return as_page(await sk.ready(limit=size, page=token, **flt))


async def test_ready_pages_hold_still_while_work_comes_and_goes(sk: skift.LocalSkift) -> None:
    """Ready pages in turn order after, in each project, the (priority, age, number) of the
    last node sent: between pages nodes are filed (before and after the walk's position),
    completed (one sent, one not yet), dropped and claimed; no node is sent twice, none
    ready throughout is skipped, and each project's nodes come in its own order."""
    slugs = [(await sk.create_project(f"Turns {c}")).slug for c in "abc"]
    for s, n in zip(slugs, (6, 4, 5), strict=True):
        await sk.patch(
            s,
            [skift.CreateNode(title=f"{s} {i}", priority=f"p{1 + i % 3}") for i in range(n)],
        )
    whole = [n.ref for n in (await sk.ready(limit=100)).nodes]
    assert len(whole) == 15
    throughout = list(whole)
    sent: list[str] = []

    async def between(i: int) -> None:
        s = slugs[i % 3]
        # filed: one ahead of everything in its project (p0), one behind it (p4)
        await sk.patch(s, [skift.CreateNode(title=f"urgent {i}", priority="p0")])
        await sk.patch(s, [skift.CreateNode(title=f"someday {i}", priority="p4")])
        later = [r for r in throughout if r not in sent]
        if i == 0:  # completed: one already sent, one not yet (it is not sent)
            await sk.complete(sent[0])
            await sk.complete(later[-1])
            throughout.remove(later[-1])
        if i == 1:  # dropped before it was sent
            await sk.drop(later[0], reason="not needed")
            throughout.remove(later[0])
        if i == 2:  # claimed: no longer ready, not sent
            await sk.claim(later[1])
            throughout.remove(later[1])

    async def read(size: int, token: str | None) -> Any:
        page = await _ready(sk, size, token)
        sent.extend(n.ref for n in page)
        return page

    seen = await walk(read, lambda n: n.ref, sizes=(2, 1, 3), between=between)
    assert len(seen) == len(set(seen)), f"a node was sent twice: {seen}"
    assert set(throughout) <= set(seen), f"skipped: {set(throughout) - set(seen)}"
    for s in slugs:  # within a project, its own order (priority, age, number)
        mine = [r for r in seen if r.startswith(s + "#") and r in whole]
        assert mine == [r for r in whole if r in mine]


async def test_ready_pages_take_the_size_asked_and_refuse_another_filter(
    sk: skift.LocalSkift,
) -> None:
    a = await sk.create_project("Sized ready")
    b = await sk.create_project("Sized ready too")
    await sk.patch(a.slug, [skift.CreateNode(title=f"a{i}") for i in range(5)])
    await sk.patch(b.slug, [skift.CreateNode(title=f"b{i}") for i in range(4)])
    both = {"projects": [a.slug, b.slug]}
    whole = [n.ref for n in (await sk.ready(limit=50, **both)).nodes]
    first = await sk.ready(limit=2, **both)
    second = await sk.ready(limit=4, page=first.next_page, **both)
    assert [n.ref for n in (*first.nodes, *second.nodes)] == whole[:6]
    last = await sk.ready(limit=9, page=second.next_page, **both)
    assert [n.ref for n in last.nodes] == whole[6:]
    assert last.next_page is None
    # the token of one filter is no position in another's list
    for other in ({"projects": [a.slug]}, {**both, "kinds": ["task"]}, {}):
        with pytest.raises(skift.Invalid) as ei:
            await sk.ready(limit=2, page=first.next_page, **other)
        assert ei.value.details.get("field") == "page_token"
    await assert_bad_token(lambda t: sk.ready(page=t))
    ulid = "0" * 26
    with pytest.raises(skift.Invalid) as ei:  # a forged one: a rank that is no number
        await sk.ready(page=f'["ready","x","{ulid}","{ulid}","p0",0,1]')
    assert ei.value.details.get("field") == "page_token"


# ------------------------------------------------------------------ inputs


async def test_input_pages_hold_still_while_edges_come_and_go(sk: skift.LocalSkift) -> None:
    """A node's inputs page after the (project, number) of the last predecessor sent:
    predecessors added (before and after the position) and removed (one sent, one not
    yet) between pages move no other; every input there throughout is sent once, in order."""
    a = await sk.create_project("Inputs a")
    b = await sk.create_project("Inputs b")
    await sk.patch(b.slug, [skift.CreateNode(title=f"b{i}") for i in range(3)])
    await sk.patch(
        a.slug,
        [skift.CreateNode(title=f"a{i}", alias=f"a{i}") for i in range(4)]
        + [
            skift.CreateNode(
                title="sink",
                alias="sink",
                blocked_by=("a0", "a1", "a2", "a3", *(f"{b.slug}#{i}" for i in (1, 2, 3))),
            )
        ],
    )
    sink = f"{a.slug}#5"
    whole = [i.ref for i in await sk.inputs(sink)]
    assert len(whole) == 7
    throughout = list(whole)
    sent: list[str] = []

    async def between(i: int) -> None:
        for slug in (a.slug, b.slug):  # a new predecessor in each project
            got = await sk.patch(slug, [skift.CreateNode(title=f"late {i}")])
            await sk.patch(a.slug, [skift.AddEdge(from_=got.nodes[0].ref, to=sink)])
        if i == 0:  # one already sent and one not yet stop being inputs
            later = [r for r in throughout if r not in sent]
            for ref in (sent[0], later[0]):
                await sk.patch(a.slug, [skift.RemoveEdge(from_=ref, to=sink)])
            throughout.remove(later[0])

    async def read(size: int, token: str | None) -> skift.Page[skift.Input]:
        page = await sk.inputs(sink, limit=size, page=token)
        sent.extend(i.ref for i in page)
        return page

    seen = await walk(read, lambda i: i.ref, sizes=(2, 1, 3), between=between)
    assert_once(seen, throughout)
    # the size asked, on every page
    first = await sk.inputs(sink, limit=2)
    second = await sk.inputs(sink, limit=3, page=first.next_page)
    assert [i.ref for i in [*first, *second]] == [i.ref for i in await sk.inputs(sink)][:5]
    # a page of one node's inputs is no position among another's
    with pytest.raises(skift.Invalid) as ei:
        await sk.inputs(f"{a.slug}#1", limit=2, page=first.next_page)
    assert ei.value.details.get("field") == "page_token"
    await assert_bad_token(lambda t: sk.inputs(sink, page=t))


# ------------------------------------------------------------------ the lists once read whole
#
# Comments, artifacts, leases (a node's and the live ones), principals, rates and webhooks
# page by their sort key in the store too (a page reads its own rows; tests/pg's plans).
# Items are added between pages before and after the position; live leases, the one list
# of these whose items go away, lose one already sent and one not yet.


async def assert_sized_and_refused(
    read: Callable[[int, str | None], Awaitable[skift.Page[Any]]],
    key: Callable[[Any], Any],
    whole: list[Any],
    *,
    elsewhere: Callable[[str], Awaitable[object]] | None = None,
) -> None:
    """Page 2 takes the size it asks; its token with other arguments (``elsewhere``) is
    refused naming page_token, and so is no token at all."""
    assert len(whole) >= 6
    first = await read(2, None)
    second = await read(3, first.next_page)
    assert [key(x) for x in [*first, *second]] == whole[:5]
    assert second.next_page is not None
    if elsewhere is not None:
        with pytest.raises(skift.Invalid) as ei:
            await elsewhere(second.next_page)
        assert ei.value.details.get("field") == "page_token"
    await assert_bad_token(lambda t: read(2, t))


async def test_comment_pages_hold_still_while_comments_are_added(sk: skift.LocalSkift) -> None:
    proj = await sk.create_project("Talk")
    await sk.patch(proj.slug, [skift.CreateNode(title="topic"), skift.CreateNode(title="other")])
    ref, other = f"{proj.slug}#1", f"{proj.slug}#2"
    for i in range(5):
        await sk.add_comment(ref, f"c{i}")
    await sk.add_comment(other, "elsewhere")
    throughout = [c.id for c in await sk.comments(ref)]

    async def between(i: int) -> None:
        await sk.add_comment(ref, f"more {i}")

    def read(n: int, t: str | None) -> Awaitable[skift.Page[skift.CommentInfo]]:
        return sk.comments(ref, limit=n, page=t)

    assert_once(await walk(read, lambda c: c.id, sizes=(1, 2), between=between), throughout)
    whole = [c.id for c in await sk.comments(ref)]
    await assert_sized_and_refused(
        read, lambda c: c.id, whole, elsewhere=lambda t: sk.comments(other, limit=2, page=t)
    )


async def test_artifact_pages_hold_still_while_artifacts_are_attached(
    sk: skift.LocalSkift,
) -> None:
    proj = await sk.create_project("Made")
    await sk.patch(proj.slug, [skift.CreateNode(title="work"), skift.CreateNode(title="other")])
    ref, other = f"{proj.slug}#1", f"{proj.slug}#2"

    async def attach(node: str, name: str) -> None:
        part = skift.TextPart(text=name)
        await sk.attach_artifact(node, skift.Artifact(name=name, parts=[part]))

    for i in range(5):
        await attach(ref, f"a{i}")
    await attach(other, "elsewhere")
    throughout = [a.name for a in await sk.artifacts(ref)]

    async def between(i: int) -> None:
        await attach(ref, f"more {i}")

    def read(n: int, t: str | None) -> Awaitable[skift.Page[skift.ArtifactInfo]]:
        return sk.artifacts(ref, limit=n, page=t)

    assert_once(await walk(read, lambda a: a.name, sizes=(1, 2), between=between), throughout)
    whole = [a.name for a in await sk.artifacts(ref)]
    await assert_sized_and_refused(
        read, lambda a: a.name, whole, elsewhere=lambda t: sk.artifacts(other, limit=2, page=t)
    )


async def test_lease_history_pages_hold_still_while_attempts_are_made(
    sk: skift.LocalSkift,
) -> None:
    proj = await sk.create_project("Tries")
    await sk.patch(proj.slug, [skift.CreateNode(title="work"), skift.CreateNode(title="other")])
    ref, other = f"{proj.slug}#1", f"{proj.slug}#2"

    async def attempt(node: str) -> None:
        claim = await sk.claim(node)
        await sk.release(node, lease=claim.lease.id)

    for _ in range(5):
        await attempt(ref)
    await attempt(other)
    throughout = [x.id for x in await sk.leases(ref)]

    async def between(i: int) -> None:
        await attempt(ref)

    def read(n: int, t: str | None) -> Awaitable[skift.Page[skift.LeaseInfo]]:
        return sk.leases(ref, limit=n, page=t)

    assert_once(await walk(read, lambda x: x.id, sizes=(1, 2), between=between), throughout)
    whole = [x.id for x in await sk.leases(ref)]
    await assert_sized_and_refused(
        read, lambda x: x.id, whole, elsewhere=lambda t: sk.leases(other, limit=2, page=t)
    )


async def test_live_lease_pages_hold_still_while_leases_are_taken_and_released(
    sk: skift.LocalSkift,
) -> None:
    proj = await sk.create_project("Held")
    other = await sk.create_project("Held elsewhere")
    await sk.patch(proj.slug, [skift.CreateNode(title=f"n{i}") for i in range(16)])
    await sk.patch(other.slug, [skift.CreateNode(title="there")])
    held: dict[str, str] = {}  # lease id -> node ref
    for i in range(1, 8):
        claim = await sk.claim(f"{proj.slug}#{i}")
        held[claim.lease.id] = claim.node.ref
    await sk.claim(f"{other.slug}#1")
    throughout = [x.id for x in await sk.leases(projects=[proj.slug])]
    assert throughout == list(held)
    sent: list[str] = []
    fresh = iter(range(8, 17))

    async def between(i: int) -> None:
        gone = [sent[-1]]  # the last one sent is released
        if i == 0:  # and one not sent yet
            gone.append(next(x for x in reversed(throughout) if x not in sent))
            throughout.remove(gone[-1])
        for lease in gone:
            await sk.release(held[lease], lease=lease)
        claim = await sk.claim(f"{proj.slug}#{next(fresh)}")
        held[claim.lease.id] = claim.node.ref

    async def read(n: int, t: str | None) -> skift.Page[skift.LeaseInfo]:
        page = await sk.leases(projects=[proj.slug], limit=n, page=t)
        sent.extend(x.id for x in page)
        return page

    seen = await walk(read, lambda x: x.id, sizes=(1, 2), between=between)
    assert_once(seen, throughout)
    whole = [x.id for x in await sk.leases(projects=[proj.slug])]
    await assert_sized_and_refused(
        lambda n, t: sk.leases(projects=[proj.slug], limit=n, page=t),
        lambda x: x.id,
        whole,
        elsewhere=lambda t: sk.leases(projects=[other.slug], limit=2, page=t),
    )


async def test_principal_pages_hold_still_while_principals_are_added(
    sk: skift.LocalSkift,
) -> None:
    for name in ("bot-c", "bot-f", "bot-i", "bot-l", "bot-o", "bot-r"):
        await sk.add_principal(name, "agent")
    throughout = [p.name for p in await sk.list_principals()]
    added = iter(["bot-a", "bot-z", "bot-d", "bot-p", "bot-g", "bot-s", "bot-b", "bot-y"])

    async def between(i: int) -> None:
        await sk.add_principal(next(added), "agent")

    def read(n: int, t: str | None) -> Awaitable[skift.Page[skift.PrincipalInfo]]:
        return sk.list_principals(limit=n, page=t)

    assert_once(await walk(read, lambda p: p.name, sizes=(1, 2), between=between), throughout)
    whole = [p.name for p in await sk.list_principals()]
    await assert_sized_and_refused(read, lambda p: p.name, whole)


async def test_rate_pages_hold_still_while_rates_are_set(sk: skift.LocalSkift) -> None:
    for model in ("m2", "m4", "m6", "m8", "mb", "md"):
        await sk.set_rate(model, input="1", output="2")
    throughout = [r.model for r in await sk.rates()]
    added = iter(["m1", "m9", "m3", "m7", "m5", "ma", "mc", "m0"])

    async def between(i: int) -> None:
        await sk.set_rate(next(added), input="1", output="2")

    def read(n: int, t: str | None) -> Awaitable[skift.Page[skift.RateInfo]]:
        return sk.rates(limit=n, page=t)

    assert_once(await walk(read, lambda r: r.model, sizes=(1, 2), between=between), throughout)
    whole = [r.model for r in await sk.rates()]
    await assert_sized_and_refused(read, lambda r: r.model, whole)


async def test_webhook_pages_hold_still_while_webhooks_are_added(sk: skift.LocalSkift) -> None:
    proj = await sk.create_project("Hooked")
    other = await sk.create_project("Hooked elsewhere")
    for i in range(6):
        await sk.add_webhook(proj.slug, f"https://hooks.example.com/{i}")
    await sk.add_webhook(other.slug, "https://hooks.example.com/elsewhere")
    throughout = [w.id for w in await sk.webhooks(project=proj.slug)]
    added = iter(range(100, 120))

    async def between(i: int) -> None:
        await sk.add_webhook(proj.slug, f"https://hooks.example.com/{next(added)}")

    def read(n: int, t: str | None) -> Awaitable[skift.Page[skift.WebhookInfo]]:
        return sk.webhooks(project=proj.slug, limit=n, page=t)

    assert_once(await walk(read, lambda w: w.id, sizes=(1, 2), between=between), throughout)
    whole = [w.id for w in await sk.webhooks(project=proj.slug)]
    await assert_sized_and_refused(
        read,
        lambda w: w.id,
        whole,
        elsewhere=lambda t: sk.webhooks(project=other.slug, limit=2, page=t),
    )


async def test_edge_pages_hold_still_while_edges_come_and_go(sk: skift.LocalSkift) -> None:
    """ListEdges pages after the (target, source) references of the last edge sent: edges
    added before and after the position and removed (one sent, one not yet) between pages
    move no other; every edge there throughout is sent once, in order."""
    proj = await sk.create_project("Edges")
    other = await sk.create_project("Edges elsewhere")
    await sk.patch(
        proj.slug,
        [skift.CreateNode(title="root", alias="root")]
        + [skift.CreateNode(title=f"leaf {i}", blocked_by=["root"]) for i in range(7)],
    )
    await sk.patch(other.slug, [skift.CreateNode(title="far")])
    root = f"{proj.slug}#1"

    def pair(e: skift.EdgeInfo) -> tuple[str, str]:
        return (e.source.ref, e.target.ref)

    throughout = [pair(e) for e in await sk.edges([root])]
    assert len(throughout) == 7
    sent: list[tuple[str, str]] = []

    async def between(i: int) -> None:
        got = await sk.patch(proj.slug, [skift.CreateNode(title=f"late {i}")])
        await sk.patch(proj.slug, [skift.AddEdge(from_=root, to=got.nodes[0].ref)])
        if i == 0:  # one already sent and one not yet stop being edges
            later = [p for p in throughout if p not in sent]
            for src, dst in (sent[0], later[0]):
                await sk.patch(proj.slug, [skift.RemoveEdge(from_=src, to=dst)])
            throughout.remove(later[0])

    async def read(size: int, token: str | None) -> skift.Page[skift.EdgeInfo]:
        page = await sk.edges([root], limit=size, page=token)
        sent.extend(pair(e) for e in page)
        return page

    assert_once(await walk(read, pair, sizes=(2, 1, 3), between=between), throughout)
    whole = [pair(e) for e in await sk.edges([root])]
    await assert_sized_and_refused(
        lambda n, t: sk.edges([root], limit=n, page=t),
        pair,
        whole,
        elsewhere=lambda t: sk.edges([f"{other.slug}#1"], limit=2, page=t),
    )
