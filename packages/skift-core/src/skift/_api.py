"""The Skift API: the whole public surface, in process.

``skift.open(url)`` returns a :class:`LocalSkift` over a store; the gRPC
client in ``skift_server`` implements the same :class:`Skift` protocol
remotely. Every method runs the engine inside one store transaction.
"""

from __future__ import annotations

import asyncio
import functools
import getpass
import json
import os
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from importlib.metadata import entry_points
from types import TracebackType
from typing import Any, Protocol, Self, TypeVar
from urllib.parse import parse_qsl, urlsplit
from uuid import UUID

import attrs

from . import _beads, _comments, _leasing, _search, _stream
from ._artifacts import Artifact, ArtifactInfo, BlobInfo
from ._artifacts import artifact_infos as artifacts_artifact_infos
from ._artifacts import as_artifact as artifacts_as_artifact
from ._artifacts import check_upload as artifacts_check_upload
from ._artifacts import find_blob as artifacts_find_blob
from ._artifacts import record_blob as artifacts_record_blob
from ._blobs import FileBlobStore, check_digest
from ._edges import EdgeInfo
from ._edges import edges as edges_around
from ._engine import Actor, Engine, NodeFilter, filter_from, token_digest
from ._errors import Conflict, Invalid, NothingReady, Refused, Unauthenticated, Unavailable
from ._importer import BeadsImport, DryRun
from ._importer import export_beads as importer_export_beads
from ._importer import import_beads as importer_import_beads
from ._intent import intent
from ._limits import DEFAULT_LIMITS, Limits
from ._memory import MemoryStore
from ._models import AssigneeKind, IdentityScheme, PrincipalKind, Priority, ReleaseReason
from ._ops import (
    AddEdge,
    AttachArtifact,
    Cascade,
    CompleteNode,
    CreateNode,
    DropNode,
    HoldNode,
    Op,
    ReopenNode,
    UnholdNode,
    parse_op,
)
from ._org_limits import OrgLimits
from ._org_limits import org_limits as org_get_limits
from ._org_limits import set_org_limits as org_set_limits
from ._policy import Policy
from ._refs import new_id, ulid_str
from ._signin import (
    SESSION_TTL,
    SIGNIN_CODE_TTL,
    BoardSession,
    SigninCode,
    SigninKind,
    bad_code,
    bad_session,
    check_may_sign_in,
)
from ._signin import digest_of as signin_digest
from ._signin import new_secret as signin_secret
from ._store import Store, TransientError, Tx
from ._usage import RateInfo, UsageInfo, UsageReport
from ._usage import list_rates as usage_list_rates
from ._usage import node_usage as usage_node_usage
from ._usage import project_usage as usage_project_usage
from ._usage import record_usage as usage_record_usage
from ._usage import set_rate as usage_set_rate
from ._views import (
    Claim,
    CommentInfo,
    EventInfo,
    EventPage,
    Explanation,
    FocusResult,
    LeaseInfo,
    NodeInfo,
    PatchResult,
    PrincipalInfo,
    ProjectInfo,
    ReadyPage,
    Resolved,
    SearchHit,
    TokenInfo,
)
from ._webhooks import DeliveryInfo, WebhookInfo
from ._webhooks import add_webhook as webhooks_add
from ._webhooks import list_deliveries as webhooks_deliveries
from ._webhooks import list_webhooks as webhooks_list
from ._webhooks import queue_test_delivery as webhooks_test
from ._webhooks import redeliver as webhooks_redeliver
from ._webhooks import rotate_webhook_secret as webhooks_rotate
from ._webhooks import set_webhook_enabled as webhooks_set_enabled

T = TypeVar("T")

# How often ClaimNext retries after losing a race for a node to a concurrent claimer.
_CLAIM_ATTEMPTS = 50


@attrs.frozen
class PrincipalSpec:
    """Who an in-process caller acts as: a name and a kind."""

    name: str
    kind: PrincipalKind = PrincipalKind.USER


def User(name: str) -> PrincipalSpec:
    """A person."""
    return PrincipalSpec(name, PrincipalKind.USER)


def Agent(name: str) -> PrincipalSpec:
    """An AI agent or other automated worker."""
    return PrincipalSpec(name, PrincipalKind.AGENT)


def Service(name: str) -> PrincipalSpec:
    """A service acting on its own account (an orchestrator, a notifier)."""
    return PrincipalSpec(name, PrincipalKind.SERVICE)


OpLike = Op | dict[str, Any]


def _ops(ops: Sequence[OpLike]) -> list[Op]:
    """Operations given as objects or as their JSON form (dicts)."""
    return [parse_op(op, i) if isinstance(op, dict) else op for i, op in enumerate(ops)]


class Skift(Protocol):
    """The skift API, as every implementation offers it."""

    async def create_project(
        self,
        title: str,
        *,
        slug: str | None = None,
        priority: Priority | str = Priority.P2,
        vcs_url: str = "",
    ) -> ProjectInfo: ...
    async def get_project(self, ref: str) -> ProjectInfo: ...
    async def list_projects(
        self, *, archived: bool = False, limit: int | None = None
    ) -> list[ProjectInfo]: ...
    async def update_project(
        self,
        ref: str,
        *,
        title: str | None = None,
        slug: str | None = None,
        priority: Priority | str | None = None,
        vcs_url: str | None = None,
        budget: Decimal | int | str | None = None,
    ) -> ProjectInfo: ...
    async def archive_project(self, ref: str, *, reason: str = "archived") -> ProjectInfo: ...
    async def patch(
        self,
        project: str,
        ops: Sequence[OpLike],
        *,
        request_id: str | None = None,
        lease: str | None = None,
    ) -> PatchResult: ...
    async def get(self, ref: str, *, project: str | None = None) -> NodeInfo: ...
    async def resolve(self, ref: str, *, project: str | None = None) -> Resolved: ...
    async def ready(
        self, *, limit: int | None = None, page: str | None = None, **filters: Any
    ) -> ReadyPage: ...
    async def list_nodes(
        self,
        *,
        limit: int | None = None,
        page: str | None = None,
        attributed: bool = False,
        **filters: Any,
    ) -> ReadyPage: ...
    async def explain(self, ref: str, *, project: str | None = None) -> Explanation: ...
    async def claim(
        self, ref: str, *, project: str | None = None, ttl: timedelta | None = None, **kw: Any
    ) -> Claim: ...
    async def claim_next(
        self, *, ttl: timedelta | None = None, wait: timedelta | None = None, **kw: Any
    ) -> Claim: ...
    async def heartbeat(
        self, ref: str, *, lease: str, ttl: timedelta | None = None, project: str | None = None
    ) -> LeaseInfo: ...
    async def complete(
        self,
        ref: str,
        *,
        lease: str | None = None,
        result: str = "",
        artifacts: Sequence[Artifact | Mapping[str, Any]] = (),
        project: str | None = None,
        request_id: str | None = None,
    ) -> PatchResult: ...
    async def release(
        self,
        ref: str,
        *,
        lease: str,
        reason: ReleaseReason | str = ReleaseReason.CRASH,
        project: str | None = None,
    ) -> NodeInfo: ...
    async def gate(
        self,
        ref: str,
        *,
        lease: str,
        title: str,
        body: str = "",
        project: str | None = None,
        request_id: str | None = None,
    ) -> PatchResult: ...
    async def add_comment(
        self,
        ref: str,
        body: str,
        *,
        reply_to: str | None = None,
        project: str | None = None,
        request_id: str | None = None,
    ) -> CommentInfo: ...
    async def edit_comment(self, comment_id: str, body: str) -> CommentInfo: ...
    async def resolve_comment(self, comment_id: str) -> CommentInfo: ...
    async def comments(self, ref: str, *, project: str | None = None) -> list[CommentInfo]: ...
    async def search(
        self,
        query: str,
        *,
        projects: Sequence[str] | None = None,
        limit: int = 20,
        include_archived: bool = False,
    ) -> list[SearchHit]: ...

    # usage and cost; artifacts and blobs (skift._usage, skift._artifacts)
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
    ) -> UsageInfo: ...
    async def usage(
        self, ref: str, *, subtree: bool = False, project: str | None = None
    ) -> UsageReport: ...
    async def project_usage(self, project: str) -> UsageReport: ...
    async def set_rate(
        self,
        model: str,
        *,
        input: Decimal | int | str,
        output: Decimal | int | str,
        cache_read: Decimal | int | str = 0,
        cache_write: Decimal | int | str = 0,
        currency: str = "USD",
    ) -> RateInfo: ...
    async def rates(self) -> list[RateInfo]: ...
    async def set_org_limits(self, **sizes: int | None) -> OrgLimits: ...
    async def org_limits(self) -> OrgLimits: ...
    async def put_blob(
        self, data: bytes, *, media_type: str, digest: str | None = None
    ) -> BlobInfo: ...
    async def get_blob(self, digest: str) -> bytes: ...
    async def attach_artifact(
        self,
        ref: str,
        artifact: Artifact | Mapping[str, Any],
        *,
        lease: str | None = None,
        project: str | None = None,
        request_id: str | None = None,
    ) -> PatchResult: ...
    async def artifacts(self, ref: str, *, project: str | None = None) -> list[ArtifactInfo]: ...
    async def events(
        self, *, ref: str | None = None, project: str | None = None, limit: int = 1000
    ) -> list[EventInfo]: ...
    async def watch_events(
        self,
        *,
        after: str | None = None,
        projects: Sequence[str] | None = None,
        ops: Sequence[str] | None = None,
        limit: int = 100,
        wait: timedelta | None = None,
    ) -> EventPage: ...

    async def add_webhook(
        self, project: str, url: str, *, events: Sequence[str] | None = None
    ) -> WebhookInfo: ...
    async def webhooks(self, *, project: str | None = None) -> list[WebhookInfo]: ...
    async def rotate_webhook_secret(self, webhook: str) -> WebhookInfo: ...
    async def disable_webhook(self, webhook: str) -> WebhookInfo: ...
    async def enable_webhook(self, webhook: str) -> WebhookInfo: ...
    async def webhook_deliveries(
        self,
        webhook: str | None = None,
        *,
        project: str | None = None,
        parked: bool = False,
        limit: int | None = None,
    ) -> list[DeliveryInfo]: ...
    async def redeliver(self, delivery: str) -> DeliveryInfo: ...
    async def test_webhook(self, webhook: str) -> DeliveryInfo: ...


class LocalSkift:
    """skift in this process, over a store. Use ``skift.open`` to make one."""

    def __init__(
        self,
        store: Store,
        *,
        principal: PrincipalSpec | None = None,
        org: str = "default",
        limits: Limits = DEFAULT_LIMITS,
        owns_store: bool = True,
        identity_scheme: str = "local",
        policy: Policy | None = None,
        actor: Actor | None = None,
    ) -> None:
        self.store = store
        self.spec = principal or User(getpass.getuser())
        self.org_name = org
        self.policy = policy or Policy.default()
        self.engine = Engine(limits, org=org, policy=self.policy)
        self.identity_scheme = identity_scheme
        self._owns = owns_store
        self._actor: Actor | None = actor
        self._org_id: UUID | None = actor.principal.org_id if actor else None
        # set by authenticate: the identity to re-check when a long poll wakes
        self._credential: tuple[str, str, datetime | None] | None = None

    async def __aenter__(self) -> Self:
        await self._whoami()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._owns:
            await self.store.close()

    def acting_as(self, principal: PrincipalSpec, *, org: str | None = None) -> LocalSkift:
        """Another handle on the same store, acting as another principal."""
        return LocalSkift(
            self.store,
            principal=principal,
            org=org or self.org_name,
            limits=self.engine.limits,
            owns_store=False,
            policy=self.policy,
        )

    async def authenticate(
        self, scheme: str, value: str, *, expires_at: datetime | None = None
    ) -> LocalSkift:
        """A handle acting as the principal that holds this identity (a transport's view).

        ``scheme`` is ``unix`` (value: the uid), ``token`` (value: the bearer
        secret, hashed here) or ``oidc`` (value: ``issuer|subject``, from a token
        the transport verified). An identity nobody registered is refused with
        the command that registers it. A call that waits (ClaimNext and the
        change stream with ``wait``) re-checks the identity each time it wakes
        and before it answers: a revoked identity, or one past ``expires_at``
        (an OIDC token's expiry), ends it with ``Unauthenticated``.
        """
        if expires_at is not None and expires_at <= datetime.now(UTC):
            raise Unauthenticated(
                f"that {scheme} credential expired at {expires_at.isoformat()}",
                next="Get a fresh token from your identity provider and retry.",
            )
        lookup = token_digest(value) if scheme == IdentityScheme.TOKEN.value else value
        principal = await self.store.principal_by_identity(scheme, lookup)
        if principal is None:
            if scheme == IdentityScheme.UNIX.value:
                raise Unauthenticated(
                    f"uid {value} is not registered with skift",
                    next=f"Ask a skift admin to run 'skift principal add NAME --kind user --uid {value}'.",
                )
            if scheme == IdentityScheme.OIDC.value:
                raise Unauthenticated(
                    f"the OIDC identity {value} is not attached to any principal",
                    next=f"Ask a skift admin to attach it: attach_identity(PRINCIPAL, 'oidc', '{value}').",
                )
            raise Unauthenticated(
                f"that {scheme} credential is unknown or revoked",
                next="Ask a skift admin for a token ('skift token create PRINCIPAL').",
            )
        org = await self.store.org_by_id(principal.org_id)
        assert org is not None
        handle = LocalSkift(
            self.store,
            principal=PrincipalSpec(principal.name, principal.kind),
            org=org.name,
            limits=self.engine.limits,
            owns_store=False,
            policy=self.policy,
            actor=Actor(principal=principal, identity_scheme=scheme),
        )
        handle._credential = (scheme, lookup, expires_at)
        return handle

    async def _recheck(self) -> None:
        """Refuse a waiting call whose identity was revoked or expired since it began."""
        if self._credential is None or self._actor is None:
            return
        scheme, lookup, expires_at = self._credential
        if expires_at is not None and expires_at <= datetime.now(UTC):
            raise Unauthenticated(
                f"the {scheme} credential of this call expired at {expires_at.isoformat()} "
                "while it waited",
                next="Get a fresh token from your identity provider and call again.",
            )
        principal = await self.store.principal_by_identity(scheme, lookup)
        if principal is None or principal.id != self._actor.id:
            raise Unauthenticated(
                f"the {scheme} credential of this call was revoked while it waited",
                next="Ask a skift admin for a new credential ('skift token create PRINCIPAL').",
            )

    async def bootstrap_owner(self, uid: int, name: str | None = None) -> PrincipalInfo:
        """Make sure the owner of a server (a uid) is a user principal of this organization.

        The server calls this at start, so a first start has one organization
        and its owner can act at once. Idempotent; no policy gates it.
        """
        existing = await self.store.principal_by_identity(IdentityScheme.UNIX.value, str(uid))
        await self._whoami()

        async def go(tx: Tx, a: Actor) -> PrincipalInfo:
            p = existing
            if p is None:
                wanted = name or self.spec.name
                p = await tx.principal_by_name(wanted)
                if p is None:
                    p = await self.engine.add_principal(tx, None, wanted, PrincipalKind.USER, uid)
                else:
                    await self.engine._attach(tx, p, IdentityScheme.UNIX, str(uid))  # pyright: ignore[reportPrivateUsage]
            return (await self.engine.principal_infos(tx, [p]))[0]

        return await self._run(go)

    # -------------------------------------------------------------- principals

    async def add_principal(
        self, name: str, kind: PrincipalKind | str = PrincipalKind.AGENT, *, uid: int | None = None
    ) -> PrincipalInfo:
        """Register a principal (a person only), with a unix identity when ``uid`` is given."""
        try:
            pk = PrincipalKind(kind)
        except ValueError:
            raise Invalid(
                f"kind {kind!r} is not user, agent or service",
                next="Use --kind user|agent|service.",
            ) from None

        async def go(tx: Tx, a: Actor) -> PrincipalInfo:
            p = await self.engine.add_principal(tx, a, name, pk, uid)
            return (await self.engine.principal_infos(tx, [p]))[0]

        return await self._run(go)

    async def check_action(self, action: str) -> None:
        """The coarse check a transport makes before any work: may this principal take
        ``action`` (``admin``, ``set_org_limits``…) at all? The same policy decides; the
        full request is authorized again inside its transaction."""
        self.engine.authorize(await self._whoami(), [intent(action)])

    async def list_principals(self) -> list[PrincipalInfo]:
        """The organization's principals and their identities (an administrator's call)."""

        async def go(tx: Tx, a: Actor) -> list[PrincipalInfo]:
            self.engine.authorize(a, [intent("admin")])
            return await self.engine.principal_infos(tx, await tx.list_principals())

        return await self._run(go)

    async def attach_identity(self, principal: str, scheme: str, value: str) -> PrincipalInfo:
        """Give a principal another way in (unix uid, oidc subject, tailscale node)."""

        async def go(tx: Tx, a: Actor) -> PrincipalInfo:
            p = await self.engine.attach_identity(tx, a, principal, scheme, value)
            return (await self.engine.principal_infos(tx, [p]))[0]

        return await self._run(go)

    async def create_token(self, principal: str) -> TokenInfo:
        """A new bearer token for a principal; its secret is in the result and nowhere else."""
        return await self._run(lambda tx, a: self.engine.create_token(tx, a, principal))

    async def revoke_token(self, token_id: str) -> None:
        await self._run(lambda tx, a: self.engine.revoke_token(tx, a, token_id))

    # ------------------------------------------------ board sign-in (skift._signin)

    async def mint_signin_code(self) -> SigninCode:
        """A one-time code that signs the caller in to the web board (ten minutes, one use)."""
        actor = await self._whoami()
        check_may_sign_in(actor.principal)
        code = signin_secret(SigninKind.CODE)
        got = await self.store.signins.insert(
            digest=signin_digest(code),
            kind=SigninKind.CODE,
            principal=actor.principal,
            org=self.org_name,
            ttl=SIGNIN_CODE_TTL,
        )
        return SigninCode(code=code, principal=actor.principal.name, expires_at=got.expires_at)

    async def redeem_signin_code(self, code: str) -> BoardSession:
        """Spend a sign-in code for a board session (a transport's call, like ``authenticate``)."""
        got = await self.store.signins.spend(signin_digest(code), SigninKind.CODE)
        if got is None:
            raise bad_code()
        secret = signin_secret(SigninKind.SESSION)
        session = await self.store.signins.insert(
            digest=signin_digest(secret),
            kind=SigninKind.SESSION,
            principal=got.principal,
            org=got.org,
            ttl=SESSION_TTL,
        )
        return BoardSession(
            secret=secret,
            principal=got.principal.name,
            principal_kind=got.principal.kind.value,
            org=got.org,
            expires_at=session.expires_at,
        )

    async def session(self, secret: str) -> LocalSkift:
        """A handle acting as the person a live board session belongs to."""
        got = await self.store.signins.live(signin_digest(secret), SigninKind.SESSION)
        if got is None:
            raise bad_session()
        return LocalSkift(
            self.store,
            principal=PrincipalSpec(got.principal.name, got.principal.kind),
            org=got.org,
            limits=self.engine.limits,
            owns_store=False,
            policy=self.policy,
            actor=Actor(principal=got.principal, identity_scheme="board"),
        )

    async def end_session(self, secret: str) -> None:
        """Sign a board session out (ending one that already ended is not an error)."""
        await self.store.signins.spend(signin_digest(secret), SigninKind.SESSION)

    async def _whoami(self) -> Actor:
        if self._actor is None:
            org = await self.store.ensure_org(self.org_name)
            p = await self.store.ensure_principal(org.id, self.spec.name, self.spec.kind)
            if p.kind is not self.spec.kind:
                raise Conflict(
                    f"{p.name!r} is a {p.kind.value} principal, not a {self.spec.kind.value}",
                    next=f"Open as skift.{p.kind.value.title()}({p.name!r}), or choose another name.",
                )
            self._org_id = org.id
            self._actor = Actor(principal=p, identity_scheme=self.identity_scheme)
        return self._actor

    async def _run(
        self,
        fn: Callable[[Tx, Actor], Awaitable[T]],
        *,
        graph_lock: bool = False,
        attempts: int = 5,
    ) -> T:
        actor = await self._whoami()
        assert self._org_id is not None
        for attempt in range(attempts):
            try:
                async with self.store.transaction(self._org_id, graph_lock=graph_lock) as tx:
                    return await fn(tx, actor)
            except TransientError as exc:
                if attempt == attempts - 1:
                    raise Conflict(
                        f"the request lost a race {attempts} times in a row ({exc})",
                        next="Retry it; a patch is safe to retry with the same request id.",
                    ) from exc
                # jittered, so the losers of one race do not collide again in lockstep
                await asyncio.sleep(random.uniform(0.5, 1.5) * 0.01 * min(attempt + 1, 10))
        raise AssertionError("unreachable")

    # ---------------------------------------------------------------- projects

    async def create_project(
        self,
        title: str,
        *,
        slug: str | None = None,
        priority: Priority | str = Priority.P2,
        vcs_url: str = "",
    ) -> ProjectInfo:
        prio = _priority(priority)

        async def go(tx: Tx, a: Actor) -> ProjectInfo:
            p = await self.engine.create_project(
                tx, a, title, slug=slug, priority=prio, vcs_url=vcs_url
            )
            return (await self.engine.project_infos(tx, [p]))[0]

        return await self._run(go)

    async def get_project(self, ref: str) -> ProjectInfo:
        async def go(tx: Tx, a: Actor) -> ProjectInfo:
            p = await self.engine.resolve_project(tx, ref)
            return (await self.engine.project_infos(tx, [p]))[0]

        return await self._run(go)

    async def list_projects(
        self, *, archived: bool = False, limit: int | None = None
    ) -> list[ProjectInfo]:
        size = self.engine.page_size(limit)

        async def go(tx: Tx, a: Actor) -> list[ProjectInfo]:
            rows = await tx.list_projects(archived=archived, limit=size, offset=0)
            return await self.engine.project_infos(tx, rows)

        return await self._run(go)

    async def update_project(
        self,
        ref: str,
        *,
        title: str | None = None,
        slug: str | None = None,
        priority: Priority | str | None = None,
        vcs_url: str | None = None,
        budget: Decimal | int | str | None = None,
    ) -> ProjectInfo:
        """Change a project; ``budget`` (an amount, "" to clear) is reported beside its usage."""
        prio = _priority(priority) if priority is not None else None

        async def go(tx: Tx, a: Actor) -> ProjectInfo:
            p = await self.engine.update_project(
                tx, a, ref, title=title, slug=slug, priority=prio, vcs_url=vcs_url, budget=budget
            )
            return (await self.engine.project_infos(tx, [p]))[0]

        return await self._run(go)

    async def rename_project(self, ref: str, title: str, *, slug: str | None = None) -> ProjectInfo:
        return await self.update_project(ref, title=title, slug=slug)

    async def archive_project(self, ref: str, *, reason: str = "archived") -> ProjectInfo:
        async def go(tx: Tx, a: Actor) -> ProjectInfo:
            p = await self.engine.archive_project(tx, a, ref, reason)
            return (await self.engine.project_infos(tx, [p]))[0]

        return await self._run(go)

    async def hold_project(self, ref: str, *, reason: str) -> int:
        """Park a whole project. Returns how many nodes the hold parks."""
        return await self._run(
            lambda tx, a: self.engine.hold_project(tx, a, ref, reason, hold=True)
        )

    async def unhold_project(self, ref: str, *, reason: str) -> int:
        """Release a project's hold. Returns how many nodes became ready."""
        return await self._run(
            lambda tx, a: self.engine.hold_project(tx, a, ref, reason, hold=False)
        )

    # ------------------------------------------------------------------- graph

    async def patch(
        self,
        project: str,
        ops: Sequence[OpLike],
        *,
        request_id: str | None = None,
        lease: str | None = None,
        on_behalf_of: str | None = None,
    ) -> PatchResult:
        _no_delegation(on_behalf_of)
        parsed = _ops(ops)
        rid = request_id or ulid_str(new_id())
        if not rid.strip():
            raise Invalid(
                "request_id is empty", next="Leave it out to have one made, or give a non-empty id."
            )
        self.engine.check_patch_limits(parsed)
        return await self._run(
            lambda tx, a: self.engine.patch(tx, a, project, parsed, request_id=rid, lease=lease),
            graph_lock=self.engine.needs_graph_lock(parsed),
        )

    async def create(self, project: str, title: str, **fields: Any) -> NodeInfo:
        """Create one node (a one-operation patch) and return it."""
        res = await self.patch(project, [CreateNode(title=title, **fields)])
        return res.nodes[0]

    async def get(self, ref: str, *, project: str | None = None) -> NodeInfo:
        """One node, attributed, with its live lease while it is claimed (``lease``)."""

        async def go(tx: Tx, a: Actor) -> NodeInfo:
            node = await self.engine.node_in(tx, ref, project)
            info = (await self.engine.attributed(tx, [node]))[0]
            if not info.claimed:
                return info
            lease = await _leasing.live_lease_of(self.engine, tx, a, node.id, info.ref)
            return attrs.evolve(info, lease=lease)

        return await self._run(go)

    async def resolve(self, ref: str, *, project: str | None = None) -> Resolved:
        return await self._run(lambda tx, a: self.engine.resolve(tx, ref, project))

    async def ready(
        self, *, limit: int | None = None, page: str | None = None, **filters: Any
    ) -> ReadyPage:
        flt = filter_from(**filters)
        return await self._run(lambda tx, a: self.engine.ready(tx, a, flt, limit=limit, page=page))

    async def list_nodes(
        self,
        *,
        limit: int | None = None,
        page: str | None = None,
        attributed: bool = False,
        **filters: Any,
    ) -> ReadyPage:
        """Nodes in any state; ``attributed`` fills each one's body and result authors."""
        flt = filter_from(**filters)
        return await self._run(
            lambda tx, a: self.engine.list_nodes(
                tx, a, flt, limit=limit, page=page, attributed=attributed
            )
        )

    async def edges(self, nodes: Sequence[str], *, project: str | None = None) -> list[EdgeInfo]:
        """The ``blocks`` edges into and out of these nodes (references or ids), both ends named."""
        return await self._run(lambda tx, a: edges_around(self.engine, tx, nodes, project))

    async def explain(self, ref: str, *, project: str | None = None) -> Explanation:
        return await self._run(lambda tx, a: self.engine.explain(tx, ref, project))

    async def drop(
        self,
        ref: str,
        *,
        reason: str,
        cascade: int | None = None,
        project: str | None = None,
        lease: str | None = None,
        request_id: str | None = None,
    ) -> PatchResult:
        op = DropNode(
            node=ref,
            reason=reason,
            cascade=Cascade(max_nodes=cascade) if cascade is not None else None,
        )
        return await self._node_patch(ref, project, [op], lease=lease, request_id=request_id)

    async def reopen(
        self,
        ref: str,
        *,
        reason: str,
        project: str | None = None,
        lease: str | None = None,
        request_id: str | None = None,
    ) -> PatchResult:
        return await self._node_patch(
            ref, project, [ReopenNode(node=ref, reason=reason)], lease=lease, request_id=request_id
        )

    async def _node_patch(
        self,
        ref: str,
        project: str | None,
        ops: list[Op],
        *,
        lease: str | None,
        request_id: str | None,
        release_after: ReleaseReason | None = None,
    ) -> PatchResult:
        rid = request_id or ulid_str(new_id())

        async def go(tx: Tx, a: Actor) -> PatchResult:
            proj = await self.engine.resolve_project(tx, project) if project else None
            node = await self.engine.resolve_node(tx, ref, proj)
            fixed = [
                attrs.evolve(op, node=ulid_str(node.id)) if hasattr(op, "node") else op
                for op in ops
            ]  # pyright: ignore[reportArgumentType]
            return await self.engine.patch(
                tx,
                a,
                ulid_str(node.project_id),
                fixed,
                request_id=rid,
                lease=lease,
                release_after=release_after,
            )

        return await self._run(go, graph_lock=self.engine.needs_graph_lock(ops))

    # ----------------------------------------------------------- work protocol

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
    ) -> Claim:
        _no_delegation(on_behalf_of)
        return await self._run(
            lambda tx, a: self.engine.claim(
                tx,
                a,
                ref,
                project,
                ttl=ttl,
                harness=harness,
                agent_ref=agent_ref,
                session_ref=session_ref,
            )
        )

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
    ) -> Claim:
        _no_delegation(on_behalf_of)
        flt: NodeFilter = filter_from(**filters)
        self.engine.ttl(ttl)
        ceiling = self.engine.limits.claim_wait_ceiling
        deadline = time.monotonic() + min(wait, ceiling).total_seconds() if wait else None
        await self._whoami()
        org_id = self._org_id
        assert org_id is not None
        while True:
            try:
                # A claimer that loses a node to a concurrent claim (TransientError) lost it to
                # a claim that committed, so retrying makes progress; many claimers racing for
                # the head of one queue need more attempts than other writes.
                return await self._run(
                    lambda tx, a: self.engine.claim_next(
                        tx,
                        a,
                        flt,
                        ttl=ttl,
                        harness=harness,
                        agent_ref=agent_ref,
                        session_ref=session_ref,
                    ),
                    attempts=_CLAIM_ATTEMPTS,
                )
            except NothingReady:
                remaining = (deadline - time.monotonic()) if deadline is not None else 0.0
                if remaining <= 0:
                    raise
                await self.store.wait_for_change(org_id, timedelta(seconds=min(remaining, 1.0)))
                await self._recheck()

    async def heartbeat(
        self, ref: str, *, lease: str, ttl: timedelta | None = None, project: str | None = None
    ) -> LeaseInfo:
        return await self._run(lambda tx, a: self.engine.heartbeat(tx, a, ref, project, lease, ttl))

    async def complete(
        self,
        ref: str,
        *,
        lease: str | None = None,
        result: str = "",
        artifacts: Sequence[Artifact | Mapping[str, Any]] = (),
        project: str | None = None,
        request_id: str | None = None,
    ) -> PatchResult:
        parts = tuple(artifacts_as_artifact(x) for x in artifacts)
        return await self._node_patch(
            ref,
            project,
            [CompleteNode(node=ref, result=result, artifacts=parts)],
            lease=lease,
            request_id=request_id,
        )

    async def release(
        self,
        ref: str,
        *,
        lease: str | None = None,
        reason: ReleaseReason | str = ReleaseReason.CRASH,
        project: str | None = None,
        preempt: bool = False,
    ) -> NodeInfo:
        """End the lease on ``ref``: the holder's own (``lease``, a release reason), or, with
        ``preempt=True``, whoever's live lease it is, as a person: ``reason`` is then the
        person's explanation, the release reason is ``preempted``, and the old lease is fenced."""
        if preempt:
            why = str(reason.value if isinstance(reason, ReleaseReason) else reason)
            return await self._run(
                lambda tx, a: _leasing.preempt(self.engine, tx, a, ref, project, why)
            )
        if not lease:
            raise Invalid(
                "a release names the lease it ends",
                next="Pass the lease id Claim returned (--lease L); a person taking "
                "someone else's lease back preempts it (--preempt --reason R).",
            )
        try:
            why = ReleaseReason(reason)
        except ValueError:
            raise Invalid(
                f"release reason {reason!r} is not one of crash, budget, preempted",
                next="Release with crash, budget or preempted.",
            ) from None
        if why in (ReleaseReason.COMPLETE, ReleaseReason.EXPIRED, ReleaseReason.GATE):
            raise Invalid(
                f"release reason {why.value!r} is set by skift itself",
                next="Release with crash, budget or preempted; complete with 'complete', file a gate with 'gate'.",
            )
        return await self._run(lambda tx, a: self.engine.release(tx, a, ref, project, lease, why))

    async def gate(
        self,
        ref: str,
        *,
        lease: str,
        title: str,
        body: str = "",
        project: str | None = None,
        request_id: str | None = None,
    ) -> PatchResult:
        """File a gate (a node a person must complete) blocking ``ref`` and release the lease, atomically."""
        ops: list[Op] = [
            CreateNode(alias="gate", title=title, body=body, assignee_kind=AssigneeKind.USER),
            AddEdge(from_="gate", to=ref),
        ]
        rid = request_id or ulid_str(new_id())

        async def go(tx: Tx, a: Actor) -> PatchResult:
            proj = await self.engine.resolve_project(tx, project) if project else None
            node = await self.engine.resolve_node(tx, ref, proj)
            fixed: list[Op] = [ops[0], AddEdge(from_="gate", to=ulid_str(node.id))]
            return await self.engine.patch(
                tx,
                a,
                ulid_str(node.project_id),
                fixed,
                request_id=rid,
                lease=lease,
                release_after=ReleaseReason.GATE,
            )

        return await self._run(go, graph_lock=True)

    async def hold(self, ref: str, *, reason: str, project: str | None = None) -> PatchResult:
        return await self._node_patch(
            ref, project, [HoldNode(node=ref, reason=reason)], lease=None, request_id=None
        )

    async def unhold(self, ref: str, *, reason: str, project: str | None = None) -> PatchResult:
        return await self._node_patch(
            ref, project, [UnholdNode(node=ref, reason=reason)], lease=None, request_id=None
        )

    async def focus(
        self, keep: Sequence[str], *, reason: str, project: str | None = None
    ) -> FocusResult:
        """Hold everything outside ``keep``: projects (org scope) or, with ``project``, its nodes.

        Calling it again in a scope replaces that scope's previous sweep in the
        same transaction; holds placed by hand are never touched.
        """
        return await self._run(
            lambda tx, a: self.engine.focus(tx, a, list(keep), reason, project), graph_lock=True
        )

    async def clear_focus(self, *, reason: str, project: str | None = None) -> FocusResult:
        """Release what the scope's focus sweep held (and nothing else)."""
        return await self._run(
            lambda tx, a: self.engine.clear_focus(tx, a, reason, project), graph_lock=True
        )

    # ---------------------------------------------------------------- comments

    async def add_comment(
        self,
        ref: str,
        body: str,
        *,
        reply_to: str | None = None,
        project: str | None = None,
        request_id: str | None = None,
    ) -> CommentInfo:
        """Comment on a node (markdown); ``reply_to`` is the id of a comment on the same node.

        Safe to retry with the same ``request_id``.
        """
        rid = request_id or ulid_str(new_id())
        if not rid.strip():
            raise Invalid(
                "request_id is empty", next="Leave it out to have one made, or give a non-empty id."
            )
        return await self._run(
            lambda tx, a: _comments.add_comment(
                self.engine, tx, a, ref, project, body, reply_to, rid
            )
        )

    async def edit_comment(self, comment_id: str, body: str) -> CommentInfo:
        """Replace a comment's body (its author only); the prior body is kept as a revision."""
        return await self._run(
            lambda tx, a: _comments.edit_comment(self.engine, tx, a, comment_id, body)
        )

    async def resolve_comment(self, comment_id: str) -> CommentInfo:
        """Mark a comment resolved, once; resolving it again returns it unchanged."""
        return await self._run(
            lambda tx, a: _comments.resolve_comment(self.engine, tx, a, comment_id)
        )

    async def comments(self, ref: str, *, project: str | None = None) -> list[CommentInfo]:
        """A node's comments, oldest first; ``in_reply_to`` threads them."""
        return await self._run(lambda tx, a: _comments.list_comments(self.engine, tx, ref, project))

    # ------------------------------------------------------------------ search

    async def search(
        self,
        query: str,
        *,
        projects: Sequence[str] | None = None,
        limit: int = 20,
        include_archived: bool = False,
    ) -> list[SearchHit]:
        """Nodes whose title, body, result and comments hold every word of ``query``, best first."""
        return await self._run(
            lambda tx, a: _search.search(
                self.engine,
                tx,
                a,
                query,
                projects=projects,
                limit=limit,
                include_archived=include_archived,
            )
        )

    # ------------------------------------------------------------ usage and cost

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
    ) -> UsageInfo:
        """Append a usage record: token counts, never currency.

        An actual names the lease of the attempt it measures (checked like every
        write under a lease, and renewing it); a person, or any estimate, may
        go without one. ``basis`` says what an estimate rests on.
        """
        tokens: dict[str, object] = {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_read_tokens": cache_read_tokens,
            "cache_write_tokens": cache_write_tokens,
        }
        return await self._run(
            lambda tx, a: usage_record_usage(
                self.engine,
                tx,
                a,
                ref,
                project,
                model=model,
                tokens=tokens,
                estimate=estimate,
                basis=basis,
                lease=lease,
            )
        )

    async def usage(
        self, ref: str, *, subtree: bool = False, project: str | None = None
    ) -> UsageReport:
        """A node's usage (with ``subtree``, its descendants' too), priced at today's rates."""
        return await self._run(
            lambda tx, a: usage_node_usage(self.engine, tx, ref, project, subtree=subtree)
        )

    async def project_usage(self, project: str) -> UsageReport:
        """A project's usage rollup, priced at today's rates, beside its budget."""
        return await self._run(lambda tx, a: usage_project_usage(self.engine, tx, project))

    async def set_rate(
        self,
        model: str,
        *,
        input: Decimal | int | str,
        output: Decimal | int | str,
        cache_read: Decimal | int | str = 0,
        cache_write: Decimal | int | str = 0,
        currency: str = "USD",
    ) -> RateInfo:
        """Price a model per million tokens of each class (a person's call; one currency per org)."""
        prices: dict[str, object] = {
            "input": input,
            "output": output,
            "cache_read": cache_read,
            "cache_write": cache_write,
        }
        return await self._run(
            lambda tx, a: usage_set_rate(self.engine, tx, a, model, prices, currency)
        )

    async def rates(self) -> list[RateInfo]:
        """The organization's rate table, by model."""
        return await self._run(lambda tx, a: usage_list_rates(tx))

    async def set_org_limits(self, **sizes: int | None) -> OrgLimits:
        """Lower some of the server's size limits for this organization (a person only).

        Each keyword is a size limit (``body_bytes``, ``result_bytes``,
        ``comment_bytes``, ``inline_part_bytes``, ``blob_bytes``,
        ``artifacts_per_node``, ``parts_per_artifact``,
        ``artifact_metadata_bytes``): a value from 1 to the server's, or None
        to use the server's again. Names left out keep their value.
        """
        return await self._run(lambda tx, a: org_set_limits(self.engine, tx, a, sizes))

    async def org_limits(self) -> OrgLimits:
        """The size limits in force for this organization, and which it set itself."""
        return await self._run(lambda tx, a: org_get_limits(self.engine, tx))

    # ---------------------------------------------------------------- webhooks

    async def add_webhook(
        self, project: str, url: str, *, events: Sequence[str] | None = None
    ) -> WebhookInfo:
        """Tell ``url`` about the project's changes (the operations ``events``; all when
        None). The result's ``secret`` signs every delivery; it is shown this once."""
        return await self._run(lambda tx, a: webhooks_add(self.engine, tx, a, project, url, events))

    async def webhooks(self, *, project: str | None = None) -> list[WebhookInfo]:
        """The endpoints of a project (of every project when None); never a secret."""
        return await self._run(lambda tx, a: webhooks_list(self.engine, tx, project))

    async def rotate_webhook_secret(self, webhook: str) -> WebhookInfo:
        """A new secret for an endpoint (in the result, this once); the old one stops at once."""
        return await self._run(lambda tx, a: webhooks_rotate(self.engine, tx, a, webhook))

    async def disable_webhook(self, webhook: str) -> WebhookInfo:
        """Send an endpoint nothing until it is enabled; what commits meanwhile waits for it."""
        return await self._run(
            lambda tx, a: webhooks_set_enabled(self.engine, tx, a, webhook, enabled=False)
        )

    async def enable_webhook(self, webhook: str) -> WebhookInfo:
        return await self._run(
            lambda tx, a: webhooks_set_enabled(self.engine, tx, a, webhook, enabled=True)
        )

    async def webhook_deliveries(
        self,
        webhook: str | None = None,
        *,
        project: str | None = None,
        parked: bool = False,
        limit: int | None = None,
    ) -> list[DeliveryInfo]:
        """Deliveries newest first: of one endpoint, one project, or all; only parked ones
        with ``parked``."""
        return await self._run(
            lambda tx, a: webhooks_deliveries(
                self.engine, tx, webhook=webhook, project=project, parked=parked, limit=limit
            )
        )

    async def redeliver(self, delivery: str) -> DeliveryInfo:
        """Queue a delivered or parked delivery again, with the same id and window."""
        return await self._run(lambda tx, a: webhooks_redeliver(self.engine, tx, a, delivery))

    async def test_webhook(self, webhook: str) -> DeliveryInfo:
        """Queue a delivery with an empty window to an endpoint, to check its receiver."""
        return await self._run(lambda tx, a: webhooks_test(self.engine, tx, a, webhook))

    # ------------------------------------------------------ artifacts and blobs

    async def put_blob(
        self, data: bytes, *, media_type: str, digest: str | None = None
    ) -> BlobInfo:
        """Upload immutable bytes; returns their digest. The same bytes twice are kept once.

        With ``digest``, the bytes must hash to it or nothing is written.
        """
        info = artifacts_check_upload(data, media_type, digest, self.engine.limits)
        sizes = await self._run(lambda tx, a: self.engine.sizes(tx))
        if sizes.blob_bytes < self.engine.limits.blob_bytes:  # the organization's lower limit
            info = artifacts_check_upload(data, media_type, digest, sizes)
        await self.store.blobs.put(info.digest, data)  # bytes first: a row never lacks its bytes
        return await self._run(lambda tx, a: artifacts_record_blob(tx, a, info))

    async def get_blob(self, digest: str) -> bytes:
        """The bytes of a blob this organization uploaded."""
        canon = check_digest(digest)
        await self._run(lambda tx, a: artifacts_find_blob(tx, canon))
        data = await self.store.blobs.get(canon)
        if data is None:
            raise Unavailable(
                f"blob {canon} is recorded but its bytes are missing from the blob store",
                next="Ask the operator to check the server's blob directory (--blob-dir).",
            )
        return data

    async def attach_artifact(
        self,
        ref: str,
        artifact: Artifact | Mapping[str, Any],
        *,
        lease: str | None = None,
        project: str | None = None,
        request_id: str | None = None,
    ) -> PatchResult:
        """Attach an artifact to a node (a one-operation patch)."""
        op = AttachArtifact(node=ref, artifact=artifacts_as_artifact(artifact))
        return await self._node_patch(ref, project, [op], lease=lease, request_id=request_id)

    async def artifacts(self, ref: str, *, project: str | None = None) -> list[ArtifactInfo]:
        """A node's artifacts, oldest first."""

        async def go(tx: Tx, a: Actor) -> list[ArtifactInfo]:
            node = await self.engine.node_in(tx, ref, project)
            return await artifacts_artifact_infos(tx, await tx.artifacts_of([node.id]))

        return await self._run(go)

    async def leases(
        self,
        ref: str | None = None,
        *,
        project: str | None = None,
        projects: Sequence[str] = (),
        mine: bool = False,
    ) -> list[LeaseInfo]:
        """With ``ref``: every attempt on that node, oldest first. Without: the live leases
        of the organization (of ``projects`` when given; the caller's own with ``mine``),
        oldest first, each lease's ``id`` given to its holder only."""
        if ref is not None:
            return await self._run(lambda tx, a: self.engine.leases(tx, ref, project))
        return await self._run(
            lambda tx, a: _leasing.live_leases(self.engine, tx, a, tuple(projects), mine=mine)
        )

    async def sweep_expired(self, limit: int = 500) -> int:
        """Record expiry events for leases whose time ran out; returns how many (an
        administrator's call; the server's sweeper makes it)."""

        async def go(tx: Tx, a: Actor) -> int:
            self.engine.authorize(a, [intent("admin")])
            return await self.engine.sweep_expired(tx, a, limit)

        return await self._run(go)

    async def events(
        self, *, ref: str | None = None, project: str | None = None, limit: int = 1000
    ) -> list[EventInfo]:
        """The newest ``limit`` events of the organization (or of node ``ref``), oldest first.

        ``project`` only resolves a bare ``#N`` in ``ref``; it does not filter.
        """

        async def go(tx: Tx, a: Actor) -> list[EventInfo]:
            node_id: UUID | None = None
            if ref is not None:
                proj = await self.engine.resolve_project(tx, project) if project else None
                node_id = (await self.engine.resolve_node(tx, ref, proj)).id
            return await _stream.with_cursors(
                self.engine, tx, await tx.events(node_id=node_id, limit=limit)
            )

        return await self._run(go)

    async def watch_events(
        self,
        *,
        after: str | None = None,
        projects: Sequence[str] | None = None,
        ops: Sequence[str] | None = None,
        limit: int = 100,
        wait: timedelta | None = None,
    ) -> EventPage:
        """The change stream: the organization's events after the cursor ``after``, in commit order.

        Without ``after``, from the oldest event still in the replay window.
        ``projects`` and ``ops`` filter; the page's ``cursor`` moves past what
        they left out. With ``wait``, an empty read waits (up to the server's
        ceiling) until something commits. A cursor older than the replay window
        raises :class:`~skift.CursorExpired` naming the oldest one still good.
        Delivery is at least once: deduplicate by event id. See docs/events.md.
        """
        ceiling = self.engine.limits.event_wait_ceiling
        deadline = time.monotonic() + min(wait, ceiling).total_seconds() if wait else None
        await self._whoami()
        org_id = self._org_id
        assert org_id is not None
        cursor = after
        while True:
            page = await self._run(
                functools.partial(
                    _stream.watch,
                    self.engine,
                    after=cursor,
                    projects=tuple(projects or ()),
                    ops=tuple(ops or ()),
                    limit=limit,
                )
            )
            remaining = (deadline - time.monotonic()) if deadline is not None else 0.0
            if page.events or remaining <= 0:
                return page
            cursor = page.cursor  # what the filters left out is not read again
            await self.store.wait_for_change(org_id, timedelta(seconds=min(remaining, 1.0)))
            await self._recheck()

    # -------------------------------------------------------- import and export

    async def import_beads(
        self,
        data: str | Iterable[str],
        *,
        project: str,
        dry_run: bool = False,
        break_cycles: bool = False,
        skip_dangling: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> BeadsImport:
        """Import a beads export (the text of ``bd export``'s JSONL, or its lines) into a project.

        The project is created (with ``project`` as its slug) when absent. One
        transaction, all or nothing; a second import of the same export changes
        nothing, a newer one updates what changed (matched by beads id). See
        docs/migrating-from-beads.md for the mapping.
        """
        lines = data.splitlines() if isinstance(data, str) else data
        issues = _beads.parse(lines)

        async def go(tx: Tx, a: Actor) -> BeadsImport:
            return await importer_import_beads(
                self.engine,
                tx,
                a,
                project,
                issues,
                dry_run=dry_run,
                break_cycles=break_cycles,
                skip_dangling=skip_dangling,
                progress=progress,
            )

        try:
            return await self._run(go, graph_lock=True)
        except DryRun as done:
            return done.result

    async def export_beads(
        self, project: str, *, progress: Callable[[int, int], None] | None = None
    ) -> str:
        """A project as beads JSONL (``bd export``'s field names), one issue a line."""
        rows = await self._run(
            lambda tx, a: importer_export_beads(self.engine, tx, project, progress=progress)
        )
        return "".join(
            json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows
        )


def _no_delegation(on_behalf_of: str | None) -> None:
    if on_behalf_of:
        raise Refused(
            "acting on behalf of another principal is not supported yet",
            next="Act as yourself: leave on_behalf_of unset. Delegation needs a server-known grant, planned after v1.",
        )


def _priority(value: Priority | str) -> Priority:
    try:
        return Priority(value)
    except ValueError:
        raise Invalid(
            f"priority {value!r} is not p0..p4",
            next="Use p0 (most urgent) to p4; p2 is the default.",
        ) from None


def open(
    url: str,
    *,
    principal: PrincipalSpec | None = None,
    org: str = "default",
    limits: Limits | None = None,
    policy: Policy | None = None,
    blobs: str | os.PathLike[str] | None = None,
) -> LocalSkift:
    """Open skift over a store: ``memory:`` or ``postgresql://…``.

    Use it as an async context manager. ``principal`` names who this process
    acts as (default: a user named after the OS user). ``blobs`` is the
    directory blob bytes are kept in (also ``?blobs=DIR`` in the URL); the
    in-memory store keeps them in memory without one, PostgreSQL in
    ``skift.default_blob_dir()``.
    """
    lim = limits or DEFAULT_LIMITS
    scheme = url.split(":", 1)[0].lower()
    if scheme == "memory":
        where = blobs or dict(parse_qsl(urlsplit(url).query)).get("blobs")
        store = MemoryStore(blobs=FileBlobStore(where) if where else None)
        return LocalSkift(store, principal=principal, org=org, limits=lim, policy=policy)
    for ep in entry_points(group="skift.stores"):
        if ep.name == scheme:
            factory = ep.load()
            extra: dict[str, Any] = {"blobs": blobs} if blobs is not None else {}
            store: Store = factory(url, limits=lim, **extra)
            return LocalSkift(store, principal=principal, org=org, limits=lim, policy=policy)
    raise Invalid(
        f"no store for {url!r}",
        next="Use memory: or postgresql://…; PostgreSQL needs the skift-store-pg package installed.",
    )
