"""Page tokens on the wire (AIP-158): the request's page size applies to every page, and a
token used with other arguments than the page that made it is INVALID_ARGUMENT naming
``page_token``. Through a real server, with raw stubs (as a client in any language)."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
