"""RemoteSkift's work protocol and change stream where they do more than encode, call and
decode: the claim and its continuation (inputs read whole), a release that preempts, the
leases of a node or of the organization, the events paged backwards, the long polls.

The rest of this concern is generated, in ``_client_generated``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import attrs

import skift

from ._client_base import (
    filter_of,
    page_size,
    page_token_before,
    remote_page,
)
from ._client_generated import GeneratedCalls
from ._convert import enum_pb
from ._convert_types import from_pb
from ._proto.skift import v1


class WorkCalls(GeneratedCalls):
    """RemoteSkift's claims, release, leases and events."""

    # ------------------------------------------------------------ work protocol

    async def claim(
        self,
        ref: str,
        *,
        project: str | None = None,
        ttl: timedelta | None = None,
        harness: str = "",
        agent_ref: str = "",
        session_ref: str = "",
        on_behalf_of: str | None = None,
    ) -> skift.Claim:
        req = v1.ClaimRequest(
            ref=ref,
            project=project,
            ttl=ttl,
            harness=harness,
            agent_ref=agent_ref,
            session_ref=session_ref,
            on_behalf_of=on_behalf_of,
        )
        got = await self._call("Claim", req, v1.ClaimResponse)
        return await self._whole(got.claim or v1.Claim())

    async def claim_next(
        self,
        *,
        ttl: timedelta | None = None,
        wait: timedelta | None = None,
        harness: str = "",
        agent_ref: str = "",
        session_ref: str = "",
        on_behalf_of: str | None = None,
        **filters: Any,
    ) -> skift.Claim:
        req = v1.ClaimNextRequest(
            filter=filter_of(filters),
            ttl=ttl,
            wait=wait,
            harness=harness,
            agent_ref=agent_ref,
            session_ref=session_ref,
            on_behalf_of=on_behalf_of,
        )
        timeout = self.timeout + (wait.total_seconds() if wait else 0.0)
        got = await self._call("ClaimNext", req, v1.ClaimNextResponse, timeout=timeout)
        return await self._whole(got.claim or v1.Claim())

    async def _whole(self, claim: v1.Claim) -> skift.Claim:
        """The claim with every input whole: what did not fit in the claim's answer is read
        with ListInputs (and ListArtifacts for an input whose artifacts were cut)."""
        inputs = list(claim.inputs)
        token = claim.next_inputs_page_token
        ref = (claim.node or v1.Node()).ref
        if token:
            inputs += (await self._input_pages(ref, None, token))[0]
        return attrs.evolve(
            from_pb(v1.Claim, skift.Claim, claim), inputs=tuple(await self._inputs(inputs))
        )

    async def _input_pages(
        self, ref: str, project: str | None, token: str, limit: int | None = None
    ) -> tuple[list[v1.Input], str]:
        """Every input from ``token`` on (``limit`` None), or one page of ``limit``; and the
        next page's token."""
        out: list[v1.Input] = []
        while True:
            req = v1.ListInputsRequest(
                ref=ref, project=project, page_token=token, page_size=page_size(limit)
            )
            got = await self._call("ListInputs", req, v1.ListInputsResponse)
            out += got.inputs
            token = got.next_page_token
            if not token or limit is not None:
                return out, token

    async def _inputs(self, inputs: list[v1.Input]) -> list[skift.Input]:
        out: list[skift.Input] = []
        for i in inputs:
            view = from_pb(v1.Input, skift.Input, i)
            if i.artifacts_cut:
                view = attrs.evolve(view, artifacts=tuple(await self.artifacts(i.ref)))
            out.append(view)
        return out

    async def inputs(
        self,
        ref: str,
        *,
        project: str | None = None,
        limit: int | None = None,
        page: str | None = None,
    ) -> skift.Page[skift.Input]:
        """A node's inputs, as a claim carries them (without claiming it): every one, or
        ``limit`` from ``page`` on."""
        got, token = await self._input_pages(ref, project, page or "", limit)
        return remote_page(await self._inputs(got), token)

    async def release(
        self,
        ref: str,
        *,
        lease: str | None = None,
        reason: skift.ReleaseReason | str = skift.ReleaseReason.CRASH,
        project: str | None = None,
        preempt: bool = False,
    ) -> skift.NodeInfo:
        """End the lease on ``ref``: the holder's own, or with ``preempt=True`` (a person)
        whoever's it is, ``reason`` then being the person's explanation."""
        if preempt:
            why = reason.value if isinstance(reason, skift.ReleaseReason) else str(reason)
            req = v1.ReleaseRequest(ref=ref, project=project, preempt=True, preempt_reason=why)
        else:
            req = v1.ReleaseRequest(
                ref=ref,
                lease=lease or "",
                reason=enum_pb(v1.ReleaseReason, reason),
                project=project,
            )
        got = await self._call("Release", req, v1.ReleaseResponse)
        return from_pb(v1.Node, skift.NodeInfo, got.node)

    async def leases(
        self,
        ref: str | None = None,
        *,
        project: str | None = None,
        projects: Sequence[str] = (),
        mine: bool = False,
        limit: int | None = None,
        page: str | None = None,
    ) -> skift.Page[skift.LeaseInfo]:
        """With ``ref``: every attempt on that node. Without: the organization's live leases
        (of ``projects``; the caller's own with ``mine``), an id only on the caller's own.
        Every one, or ``limit`` of them from ``page`` on."""
        out: list[skift.LeaseInfo] = []
        token = page or ""
        while True:
            size = page_size(None if limit is None else limit - len(out))
            if ref is None:
                live = v1.ListLiveLeasesRequest(
                    projects=list(projects), mine=mine, page_size=size, page_token=token
                )
                got = await self._call("ListLiveLeases", live, v1.ListLiveLeasesResponse)
            else:
                req = v1.ListLeasesRequest(
                    ref=ref, project=project, page_size=size, page_token=token
                )
                got = await self._call("ListLeases", req, v1.ListLeasesResponse)
            out += [from_pb(v1.Lease, skift.LeaseInfo, x) for x in got.leases]
            token = got.next_page_token
            if not token or (limit is not None and len(out) >= limit):
                return remote_page(out, token)

    # ------------------------------------------------------------ events

    async def events(
        self,
        *,
        ref: str | None = None,
        project: str | None = None,
        limit: int = 1000,
        before: str | None = None,
    ) -> list[skift.EventInfo]:
        pages: list[list[skift.EventInfo]] = []
        got_count = 0
        token = ""
        if before is not None:
            token = page_token_before("ListEvents", before)
        most = 500
        while got_count < limit:
            req = v1.ListEventsRequest(
                ref=ref, project=project, page_size=min(limit - got_count, most), page_token=token
            )
            try:
                got = await self._call("ListEvents", req, v1.ListEventsResponse)
            except skift.LimitExceeded as exc:
                bound = exc.details.get("bound")
                if exc.details.get("limit") != "page_size" or not isinstance(bound, int):
                    raise
                most = bound  # this server pages smaller: ask for its largest page
                continue
            pages.append([from_pb(v1.Event, skift.EventInfo, e) for e in got.events])
            got_count += len(got.events)
            if not (token := got.next_page_token):
                break
        # each page is older than the one before it, oldest first within itself
        return [e for page in reversed(pages) for e in page]

    async def watch_events(
        self,
        *,
        after: str | None = None,
        projects: Sequence[str] | None = None,
        ops: Sequence[str] | None = None,
        limit: int = 100,
        wait: timedelta | None = None,
    ) -> skift.EventPage:
        req = v1.WatchEventsRequest(
            page_token=after or "",
            projects=list(projects or ()),
            ops=list(ops or ()),
            page_size=page_size(limit),
            wait=wait,
        )
        timeout = self.timeout + (wait.total_seconds() if wait else 0.0)
        got = await self._call("WatchEvents", req, v1.WatchEventsResponse, timeout=timeout)
        return from_pb(v1.WatchEventsResponse, skift.EventPage, got)
