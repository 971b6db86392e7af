"""Page tokens on the wire (AIP-158): the request's page size applies to every page, and a
token used with other arguments than the page that made it is INVALID_ARGUMENT naming
``page_token``. Through a real server, with raw stubs (as a client in any language)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from grpclib.client import Channel
from grpclib.const import Status
from grpclib.exceptions import GRPCError

import skift
import skift_server
from skift_server._errors import ErrorDetailsCodec
from skift_server._proto.google.rpc import BadRequest
from skift_server._proto.skift import v1

if TYPE_CHECKING:
    from conftest import Serve


async def test_the_request_size_applies_and_a_changed_filter_is_refused(serve: Serve) -> None:
    server = await serve("--memory")
    async with skift_server.connect(f"unix://{server.socket}") as sk:
        proj = await sk.create_project("Paging")
        await sk.patch(proj.slug, [skift.CreateNode(title=f"n{i}") for i in range(8)])
        for i in range(5):
            await sk.add_comment("#1", f"c{i}", project=proj.slug)
            await sk.add_comment("#2", f"d{i}", project=proj.slug)

    channel = Channel(path=str(server.socket), status_details_codec=ErrorDetailsCodec())
    stub = v1.SkiftServiceStub(channel)
    try:
        first = await stub.list_comments(
            v1.ListCommentsRequest(ref="#1", project=proj.slug, page_size=3)
        )
        assert [c.body for c in first.comments] == ["c0", "c1", "c2"]
        # the second page asks 1: it gets 1, whatever the first page asked
        second = await stub.list_comments(
            v1.ListCommentsRequest(
                ref="#1", project=proj.slug, page_size=1, page_token=first.next_page_token
            )
        )
        assert [c.body for c in second.comments] == ["c3"]

        # the token of #1's comments is not a position among #2's
        with pytest.raises(GRPCError) as ei:
            await stub.list_comments(
                v1.ListCommentsRequest(
                    ref="#2", project=proj.slug, page_size=3, page_token=first.next_page_token
                )
            )
        assert ei.value.status is Status.INVALID_ARGUMENT
        bad = [d for d in ei.value.details or () if isinstance(d, BadRequest)]
        assert [v.field for v in bad[0].field_violations] == ["page_token"]

        events = await stub.list_events(v1.ListEventsRequest(page_size=4))
        assert len(events.events) == 4
        assert events.next_page_token
        more = await stub.list_events(
            v1.ListEventsRequest(page_size=2, page_token=events.next_page_token)
        )
        assert len(more.events) == 2
        assert {e.id for e in more.events}.isdisjoint({e.id for e in events.events})
        with pytest.raises(GRPCError) as ei:
            await stub.list_events(
                v1.ListEventsRequest(ref="#1", project=proj.slug, page_token=events.next_page_token)
            )
        assert ei.value.status is Status.INVALID_ARGUMENT
    finally:
        channel.close()


async def test_event_pages_hold_still_while_events_are_written(serve: Serve) -> None:
    """ListEvents pages by the oldest event sent (keyset): events written between pages
    neither repeat an event nor skip one that existed throughout."""
    server = await serve("--memory")
    async with skift_server.connect(f"unix://{server.socket}") as sk:
        proj = await sk.create_project("Walk")
        await sk.patch(proj.slug, [skift.CreateNode(title=f"n{i}") for i in range(6)])
        before = [e.id for e in await sk.events()]
        channel = Channel(path=str(server.socket), status_details_codec=ErrorDetailsCodec())
        stub = v1.SkiftServiceStub(channel)
        try:
            seen: list[str] = []
            token = ""
            while True:
                page = await stub.list_events(v1.ListEventsRequest(page_size=3, page_token=token))
                seen = [e.id for e in page.events] + seen
                await sk.add_comment("#1", f"meanwhile {len(seen)}", project=proj.slug)
                token = page.next_page_token
                if not token:
                    break
        finally:
            channel.close()
    assert len(seen) == len(set(seen)), "an event was sent twice"
    assert [i for i in seen if i in before] == before, "an event was skipped"


async def test_list_pages_hold_still_while_the_list_changes(serve: Serve) -> None:
    """A list the API returns whole (principals, by name) pages after the last item sent:
    one added before the cursor or after it, and one removed, neither repeat an item nor
    skip one that existed throughout."""
    server = await serve("--memory")
    async with skift_server.connect(f"unix://{server.socket}") as sk:
        for name in ("m1", "m2", "m3", "m4", "m5", "m6"):
            await sk.add_principal(name, "agent")
        before = [p.name for p in await sk.list_principals()]
        channel = Channel(path=str(server.socket), status_details_codec=ErrorDetailsCodec())
        stub = v1.SkiftServiceStub(channel)
        try:
            seen: list[str] = []
            token = ""
            added = iter(["a0", "zz", "a1", "zy", "a2", "zx", "a3", "zw"])
            while True:
                page = await stub.list_principals(
                    v1.ListPrincipalsRequest(page_size=2, page_token=token)
                )
                seen += [p.name for p in page.principals]
                await sk.add_principal(next(added), "agent")
                token = page.next_page_token
                if not token:
                    break
        finally:
            channel.close()
    assert len(seen) == len(set(seen)), "a principal was sent twice"
    assert [n for n in seen if n in before] == before, "a principal was skipped"


async def test_whole_lists_page_by_key_while_they_change(serve: Serve) -> None:
    """The lists the API returns whole page by their sort key (keyset): between pages,
    leases taken and released (the last one sent too), rates set before and after the
    position, comments added; no item is sent twice, none that existed throughout skipped."""
    server = await serve("--memory")
    async with skift_server.connect(f"unix://{server.socket}") as sk:
        proj = await sk.create_project("Whole")
        await sk.patch(proj.slug, [skift.CreateNode(title=f"n{i}") for i in range(14)])
        claims = {i: await sk.claim(f"#{i}", project=proj.slug) for i in range(1, 8)}
        for model in ("m2", "m4", "m6", "m8"):
            await sk.set_rate(model, input="1", output="2")
        for i in range(6):
            await sk.add_comment("#1", f"c{i}", project=proj.slug)
        channel = Channel(path=str(server.socket), status_details_codec=ErrorDetailsCodec())
        stub = v1.SkiftServiceStub(channel)

        async def walk(call: Any, items: str, key: str, between: Any) -> list[str]:
            seen: list[str] = []
            token, i = "", 0
            while True:
                page = await call(page_size=2, page_token=token)
                sent = [getattr(x, key) for x in getattr(page, items)]
                seen += sent
                token = page.next_page_token
                if not token:
                    return seen
                await between(i, sent)
                i += 1

        try:
            # live leases: the last one sent is released, one not yet sent too; more taken
            live = [x.id for x in (await stub.list_live_leases(v1.ListLiveLeasesRequest())).leases]
            throughout = list(live)
            nxt = iter(range(8, 15))

            async def leases(i: int, sent: list[str]) -> None:
                by_id = {c.lease.id: n for n, c in claims.items()}
                await sk.release(f"#{by_id[sent[-1]]}", lease=sent[-1], project=proj.slug)
                if i == 0:
                    later = throughout[-1]
                    await sk.release(f"#{by_id[later]}", lease=later, project=proj.slug)
                    throughout.remove(later)
                n = next(nxt)
                claims[n] = await sk.claim(f"#{n}", project=proj.slug)

            seen = await walk(
                lambda **kw: stub.list_live_leases(v1.ListLiveLeasesRequest(**kw)),
                "leases",
                "id",
                leases,
            )
            assert len(seen) == len(set(seen)), "a lease was sent twice"
            assert [x for x in seen if x in throughout] == throughout, "a lease was skipped"

            # rates, by model: set before and after the position
            throughout = [x.model for x in (await stub.list_rates(v1.ListRatesRequest())).rates]
            added = iter(["m1", "m9", "m3", "m7", "m5"])

            async def rates(i: int, sent: list[str]) -> None:
                await sk.set_rate(next(added), input="1", output="2")

            seen = await walk(
                lambda **kw: stub.list_rates(v1.ListRatesRequest(**kw)), "rates", "model", rates
            )
            assert len(seen) == len(set(seen)), "a rate was sent twice"
            assert [x for x in seen if x in throughout] == throughout, "a rate was skipped"

            # comments, oldest first: added between pages
            req = {"ref": "#1", "project": proj.slug}
            throughout = [
                x.id for x in (await stub.list_comments(v1.ListCommentsRequest(**req))).comments
            ]

            async def comments(i: int, sent: list[str]) -> None:
                await sk.add_comment("#1", f"more {i}", project=proj.slug)

            seen = await walk(
                lambda **kw: stub.list_comments(v1.ListCommentsRequest(**req, **kw)),
                "comments",
                "id",
                comments,
            )
            assert len(seen) == len(set(seen)), "a comment was sent twice"
            assert [x for x in seen if x in throughout] == throughout, "a comment was skipped"

            # a token of one list is not a position in another
            rates_page = await stub.list_rates(v1.ListRatesRequest(page_size=1))
            with pytest.raises(GRPCError) as ei:
                await stub.list_webhooks(
                    v1.ListWebhooksRequest(page_token=rates_page.next_page_token)
                )
            assert ei.value.status is Status.INVALID_ARGUMENT
        finally:
            channel.close()


def test_the_lists_once_read_whole_page_in_the_core() -> None:
    """Every paged list but Ready (a queue) pages in the core: its method takes ``limit`` and ``page`` and answers a
    ``skift.Page`` (ListNodes a ``skift.ReadyPage``), whose positions the server's token
    carries; ListEvents pages by the oldest event sent."""
    import inspect
    import typing

    for op in skift.OPERATIONS:
        if op.page_key is None or op.rpc in ("Ready", "ListEvents"):
            continue
        fn = getattr(skift.LocalSkift, op.method)
        params = inspect.signature(fn).parameters
        assert "limit" in params, op.method
        assert "page" in params, op.method
        answer = typing.get_type_hints(fn)["return"]
        assert answer is skift.ReadyPage or typing.get_origin(answer) is skift.Page, op.method


async def test_every_keyset_list_refuses_a_token_of_other_arguments_or_another_list(
    serve: Serve,
) -> None:
    """Every keyset list: page 2 takes the size it asks; its token with another filter,
    or on another list, is INVALID_ARGUMENT naming page_token."""
    server = await serve("--memory")
    async with skift_server.connect(f"unix://{server.socket}") as sk:
        proj = await sk.create_project("Refusals")
        await sk.create_project("Refusals two")
        await sk.create_project("Refusals three")
        await sk.patch(proj.slug, [skift.CreateNode(title=f"osprey {i}") for i in range(6)])
        hook = await sk.add_webhook(proj.slug, "https://hooks.example.com/refusals")
        for _ in range(4):
            await sk.test_webhook(hook.id)
        for i in range(3):
            await sk.add_comment("#1", f"c{i}", project=proj.slug)
            part = skift.TextPart(text="x")
            art = skift.Artifact(name=f"a{i}", parts=[part])
            await sk.attach_artifact("#1", art, project=proj.slug)
            claim = await sk.claim("#1", project=proj.slug)
            await sk.release("#1", lease=claim.lease.id, project=proj.slug)
            await sk.claim(f"#{i + 2}", project=proj.slug)
            await sk.add_principal(f"bot-{i}", "agent")
            await sk.set_rate(f"m{i}", input="1", output="2")
            await sk.add_webhook(proj.slug, f"https://hooks.example.com/refusals/{i}")
    channel = Channel(path=str(server.socket), status_details_codec=ErrorDetailsCodec())
    stub = v1.SkiftServiceStub(channel)
    filt = v1.NodeFilter(projects=[proj.slug])
    cases: list[tuple[Any, Any, Any, str]] = [
        (
            stub.list_projects,
            v1.ListProjectsRequest(page_size=1),
            v1.ListProjectsRequest(show_archived=True),
            "projects",
        ),
        (
            stub.list_nodes,
            v1.ListNodesRequest(filter=filt, page_size=1),
            v1.ListNodesRequest(filter=v1.NodeFilter(projects=[proj.slug], kinds=["task"])),
            "nodes",
        ),
        (
            stub.search,
            v1.SearchRequest(query="osprey", page_size=1),
            v1.SearchRequest(query="osprey 1"),
            "hits",
        ),
        (
            stub.list_webhook_deliveries,
            v1.ListWebhookDeliveriesRequest(page_size=1),
            v1.ListWebhookDeliveriesRequest(parked=True),
            "deliveries",
        ),
        (
            stub.list_comments,
            v1.ListCommentsRequest(ref="#1", project=proj.slug, page_size=1),
            v1.ListCommentsRequest(ref="#2", project=proj.slug),
            "comments",
        ),
        (
            stub.list_artifacts,
            v1.ListArtifactsRequest(ref="#1", project=proj.slug, page_size=1),
            v1.ListArtifactsRequest(ref="#2", project=proj.slug),
            "artifacts",
        ),
        (
            stub.list_leases,
            v1.ListLeasesRequest(ref="#1", project=proj.slug, page_size=1),
            v1.ListLeasesRequest(ref="#2", project=proj.slug),
            "leases",
        ),
        (
            stub.list_live_leases,
            v1.ListLiveLeasesRequest(page_size=1),
            v1.ListLiveLeasesRequest(mine=True),
            "leases",
        ),
        (stub.list_principals, v1.ListPrincipalsRequest(page_size=1), None, "principals"),
        (stub.list_rates, v1.ListRatesRequest(page_size=1), None, "rates"),
        (
            stub.list_webhooks,
            v1.ListWebhooksRequest(page_size=1),
            v1.ListWebhooksRequest(project=proj.slug),
            "webhooks",
        ),
    ]
    try:
        tokens: list[str] = []
        for call, first, other, items in cases:
            page = await call(first)
            assert len(getattr(page, items)) == 1
            token = page.next_page_token
            assert token
            tokens.append(token)
            # page 2 takes the size it asks
            again = type(first)().from_dict(first.to_dict())
            again.page_size, again.page_token = 2, token
            assert len(getattr(await call(again), items)) == 2
            # the same token with other arguments
            if other is None:  # a list with no arguments but its page
                continue
            other.page_token = token
            with pytest.raises(GRPCError) as ei:
                await call(other)
            assert ei.value.status is Status.INVALID_ARGUMENT, call
            bad = [d for d in ei.value.details or () if isinstance(d, BadRequest)]
            assert [v.field for v in bad[0].field_violations] == ["page_token"]
        # each token on the next list
        for (call, first, _, _), token in zip(cases, tokens[1:] + tokens[:1], strict=True):
            req = type(first)().from_dict(first.to_dict())
            req.page_token = token
            with pytest.raises(GRPCError) as ei:
                await call(req)
            assert ei.value.status is Status.INVALID_ARGUMENT, call
    finally:
        channel.close()
