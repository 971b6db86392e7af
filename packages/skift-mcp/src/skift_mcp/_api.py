"""The part of the Skift API the MCP tools call (``skift.LocalSkift`` and ``skift_server.RemoteSkift`` both offer it)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any, Protocol

import skift


class Api(Protocol):
    """The part of the Skift API the tools call; ``skift.LocalSkift`` and ``skift_server.RemoteSkift`` both offer it."""

    async def patch(
        self,
        project: str,
        ops: Sequence[skift.Op | dict[str, Any]],
        *,
        request_id: str | None = None,
        lease: str | None = None,
    ) -> skift.PatchResult: ...
    async def get(self, ref: str, *, project: str | None = None) -> skift.NodeInfo: ...
    async def ready(
        self, *, limit: int | None = None, page: str | None = None, **filters: Any
    ) -> skift.ReadyPage: ...
    async def list_nodes(
        self, *, limit: int | None = None, page: str | None = None, **filters: Any
    ) -> skift.ReadyPage: ...
    async def explain(self, ref: str, *, project: str | None = None) -> skift.Explanation: ...
    async def claim(
        self,
        ref: str,
        *,
        project: str | None = None,
        ttl: timedelta | None = None,
        harness: str = "",
        agent_ref: str = "",
    ) -> skift.Claim: ...
    async def claim_next(
        self,
        *,
        ttl: timedelta | None = None,
        wait: timedelta | None = None,
        harness: str = "",
        agent_ref: str = "",
        **filters: Any,
    ) -> skift.Claim: ...
    async def heartbeat(
        self, ref: str, *, lease: str, ttl: timedelta | None = None, project: str | None = None
    ) -> skift.LeaseInfo: ...
    async def complete(
        self,
        ref: str,
        *,
        lease: str | None = None,
        result: str = "",
        artifacts: Sequence[skift.Artifact] = (),
        project: str | None = None,
    ) -> skift.PatchResult: ...
    async def release(
        self, ref: str, *, lease: str, reason: str, project: str | None = None
    ) -> skift.NodeInfo: ...
    async def gate(
        self, ref: str, *, lease: str, title: str, body: str = "", project: str | None = None
    ) -> skift.PatchResult: ...
    async def add_comment(
        self, ref: str, body: str, *, reply_to: str | None = None, project: str | None = None
    ) -> skift.CommentInfo: ...
    async def resolve_comment(self, comment_id: str) -> skift.CommentInfo: ...
    async def comments(
        self, ref: str, *, project: str | None = None
    ) -> list[skift.CommentInfo]: ...
    async def search(
        self, query: str, *, projects: Sequence[str] | None = None, limit: int = 20
    ) -> list[skift.SearchHit]: ...
    async def record_usage(
        self,
        ref: str,
        *,
        model: str,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        estimate: bool = False,
        basis: str | None = None,
        lease: str | None = None,
        project: str | None = None,
    ) -> skift.UsageInfo: ...
    async def usage(
        self, ref: str, *, subtree: bool = False, project: str | None = None
    ) -> skift.UsageReport: ...
