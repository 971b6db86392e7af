"""The graph's reads and writes in PostgreSQL: principals and identities, projects, nodes,
edges, leases, readiness and the turn order (derived in SQL), claim cursors, idempotency.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from skift import (
    BOOKKEEPING_KIND,
    NOT_SIMPLE,
    Authors,
    Conflict,
    Derived,
    Edge,
    EventPosition,
    Identity,
    IdentityInvite,
    Invalid,
    Lease,
    Node,
    NotSimple,
    Principal,
    PrincipalKind,
    Project,
    ProjectPage,
    ReadyQuery,
    Status,
    StoredRequest,
    UpstreamCone,
    Writer,
    parse_node_ref,
    parse_ulid,
    ulid_str,
)

from ._queries import q
from ._rows import (
    Row,
    edge_from_row,
    identity_from_row,
    invite_from_row,
    lease_from_row,
    lease_params,
    node_from_row,
    node_params,
    principal_from_row,
    principals_lock_key,
    project_from_row,
    project_params,
    ready_keys,
)
from ._tx import NO_CAPS, Expected, TxBase


def _take_any(params: Row) -> str | None:
    """take_next_ready_any (an agent's) or take_next_ready_any_person when a filter's
    parameters ask for nothing (the bookkeeping kind left out, written into their SQL),
    else None."""
    if (
        params["skip"] != BOOKKEEPING_KIND
        or params["max_rank"] != 4
        or any(
            params[k]
            for k in (
                "projects",
                "kinds",
                "labels",
                "anyl",
                "akind",
                "parent",
                "exclude",
                "hidden",
            )
        )
    ):
        return None
    return "take_next_ready_any" if params["agents"] else "take_next_ready_any_person"


class _Fetched:
    """Rows already read, kept where a cursor sent ahead would be (TxBase._ahead)."""

    def __init__(self, rows: list[Row]) -> None:
        self._rows = rows

    async def fetchall(self) -> list[Row]:
        return self._rows


def _claim_reads(row: Row, org: UUID) -> dict[tuple[Any, ...], _Fetched]:
    """The rows of claim_reads (one row: the locked node's derived facts, unreleased lease,
    edges in, authors and comments hint), as the reads Work._take asks would return
    them, by their read-ahead keys."""
    node = row["id"]
    lease = [{k[2:]: v for k, v in row.items() if k.startswith("l_")}] if row["l_id"] else []
    edges = [
        {"org_id": org, "from_id": f, "to_id": node, "kind": k, "created_at": t}
        for f, k, t in zip(
            row["e_from"] or (), row["e_kind"] or (), row["e_created"] or (), strict=True
        )
    ]
    columns = [row[f"a_{c}"] or () for c in _AUTHORS]
    authors: list[Row] = [
        {("node_id" if c == "node" else c): v for c, v in zip(_AUTHORS, values, strict=True)}
        for values in zip(*columns, strict=True)
    ]
    derived = {k: row[k] for k in _DERIVED}
    hint = {"unresolved": row["unresolved"], "newest_at": row["newest_at"]}
    return {
        ("unreleased", node): _Fetched(lease),
        ("edges", node): _Fetched(edges),
        ("authors", node): _Fetched(authors),
        ("derive", frozenset([node])): _Fetched([derived]),
        ("hint", node): _Fetched([hint]),
    }


_NOT_NODE = frozenset({"now", "restricted", "policy_digest"})
_PREFIXES = frozenset({"p_", "l_", "r_"})
"""complete_reads' columns that are not the node's: the clock's and the prefixed ones."""

_AUTHORS = ("node", "body_id", "body_kind", "body_name", "result_id", "result_kind", "result_name")
_DERIVED = ("id", "blocked", "held", "open_children", "archived", "human_written", "claimed")


class GraphTx(TxBase):
    """The graph half of :class:`~skift_pg.PgTx` (queries/graph.sql, trust.sql, admin.sql)."""

    # principals
    async def principal_by_name(self, name: str) -> Principal | None:
        row = await self.row("principal_by_name", name=name)
        return principal_from_row(row) if row else None

    async def principals_by_id(self, ids: Collection[UUID]) -> dict[UUID, Principal]:
        if not ids:
            return {}
        return {
            r["id"]: principal_from_row(r)
            for r in await self.rows("principals_by_id", ids=list(ids))
        }

    async def insert_principal(self, principal: Principal) -> None:
        await self.write(
            "insert_principal",
            id=principal.id,
            name=principal.name,
            kind=principal.kind.value,
            created_at=principal.created_at,
            admin=principal.admin,
        )

    async def list_principals(self) -> list[Principal]:
        return [principal_from_row(r) for r in await self.rows("list_principals")]

    async def insert_identity(self, identity: Identity) -> None:
        if await self.row("identity_by_value", scheme=identity.scheme.value, value=identity.value):
            raise Conflict(
                f"that {identity.scheme.value} identity already belongs to a principal",
                next="Revoke it there first, or attach another identity.",
            )
        await self.write(
            "insert_identity",
            id=identity.id,
            principal_id=identity.principal_id,
            scheme=identity.scheme.value,
            value=identity.value,
            created_at=identity.created_at,
            revoked_at=identity.revoked_at,
        )

    async def identities_of(self, principal_id: UUID) -> list[Identity]:
        return [
            identity_from_row(r) for r in await self.rows("identities_of", principal=principal_id)
        ]

    async def identity_by_id(self, identity_id: UUID) -> Identity | None:
        row = await self.row("identity_by_id", id=identity_id)
        return identity_from_row(row) if row else None

    async def revoke_identity(self, identity_id: UUID) -> bool:
        return await self.write("revoke_identity", id=identity_id, now=await self.now()) > 0

    async def set_admin(self, principal_id: UUID, admin: bool) -> None:
        await self.write("set_admin", id=principal_id, admin=admin)

    async def lock_principals(self) -> None:
        await self.exec("principals_lock", key=principals_lock_key(self.org_id))

    async def admins(self, *, lock: bool = False) -> list[UUID]:
        return [r["id"] for r in await self.rows("admins_locked" if lock else "admins")]

    async def put_invite(self, invite: IdentityInvite) -> None:
        await self.write(
            "put_invite",
            id=invite.id,
            principal_id=invite.principal_id,
            scheme=invite.scheme.value,
            value=invite.value,
            invited_by=invite.invited_by,
            created_at=invite.created_at,
            code_digest=invite.code_digest,
        )

    async def invites(self) -> list[IdentityInvite]:
        return [invite_from_row(r) for r in await self.rows("invites")]

    async def take_invite(self, invite_id: UUID) -> bool:
        return await self.write("take_invite", id=invite_id) > 0

    async def human_written(self, ids: Collection[UUID]) -> set[UUID]:
        if not ids:
            return set()
        return {r["node_id"] for r in await self.rows("human_written", ids=list(ids))}

    async def authors(self, ids: Collection[UUID]) -> dict[UUID, Authors]:
        if not ids:
            return {}

        def writer(r: dict[str, Any], side: str) -> Writer | None:
            pid: UUID | None = r[f"{side}_id"]
            if pid is None:
                return None
            name: str | None = r[f"{side}_name"]
            return Writer(
                principal_id=pid,
                name=name if name is not None else ulid_str(pid),
                kind=PrincipalKind(r[f"{side}_kind"]),
            )

        rows = await self._rows_ahead(("authors", frozenset(ids)), "authors", ids=list(set(ids)))
        return {
            r["node_id"]: Authors(body=writer(r, "body"), result=writer(r, "result")) for r in rows
        }

    # projects
    def _remember(self, project: Project) -> Project:
        self._projects[project.id] = project
        return project

    def _forget(self, project_id: UUID) -> None:
        self._projects.pop(project_id, None)

    async def project_by_id(self, project_id: UUID, *, lock: bool = False) -> Project | None:
        if not lock and project_id in self._projects:
            return self._projects[project_id]
        row = await self.row("project_by_id_locked" if lock else "project_by_id", id=project_id)
        return self._remember(project_from_row(row)) if row else None

    async def project_by_slug(self, slug: str) -> Project | None:
        known = self._slugs.get(slug)
        if known is not None and known in self._projects:
            return self._projects[known]
        if self._now is None and self._expecting(slug):
            row = await self._complete_reads(slug)
            if row is None:
                return None
        elif self._now is None:  # the transaction's first read: the clock comes along
            cur = await self._conn.execute(
                q("project_by_slug_primed"),
                {"org": self._org, "slug": slug, "offset": self._offset},
            )
            self._expected = None  # another project's first read: the complete reads its own
            row = await cur.fetchone()
            assert row is not None
            self._keep(row)
            if row["id"] is None:
                return None
        else:
            row = await self.row("project_by_slug", slug=slug)
            if row is None:
                return None
        self._slugs[slug] = row["id"]
        return self._remember(project_from_row(row))

    def expect_complete(
        self, ref: str, *, lease: str | None, principal_id: UUID, request_id: str, sized: bool
    ) -> None:
        try:
            parsed = parse_node_ref(ref)
        except Invalid:
            return
        if parsed.project is None or parsed.number is None or parsed.org is not None:
            return  # only slug#N: what the first read (the project by slug) can bring along
        self._expected = Expected(
            slug=parsed.project,
            number=parsed.number,
            lease=parse_ulid(lease.strip()) if lease else None,
            principal=principal_id,
            rid=request_id,
            sized=sized,
        )

    def _expecting(self, slug: str) -> bool:
        """Whether the transaction's first read, of ``slug``, is an expected complete's."""
        e = self._expected
        return e is not None and e.slug == slug and self._pipe is not None

    async def _complete_reads(self, slug: str) -> Row | None:
        """An expected complete's first round trip (expect_complete): complete_reads (the
        project by slug with the clock, the request's reservation, the lease and the node,
        each locked, in one statement), the node's derived facts behind it, and the
        organization's sizes if its result is checked. The project's row, or None when
        the slug names none; the rest kept by the keys the engine's reads will ask."""
        e, self._expected = self._expected, None
        assert e is not None
        at = {"org": self._org, "slug": slug, "number": e.number, "offset": self._offset}
        cur = await self._conn.execute(
            q("complete_reads"), {**at, "principal": e.principal, "rid": e.rid, "lease": e.lease}
        )
        derive = await self._conn.execute(q("derive_by_number"), at)
        limits = await self._conn.execute(q("org_limits"), {"org": self._org}) if e.sized else None
        self._reserving = (e.principal, e.rid, e.lease)
        row = await cur.fetchone()
        assert row is not None
        self._keep(row)
        self._reserved = {"request_id": row["r_request_id"], "applied_at": row["r_applied_at"]}
        if e.lease is not None:
            lease = [{k[2:]: v for k, v in row.items() if k.startswith("l_")}]
            lease = lease if row["l_id"] is not None else []
            self._ahead[("lease_locked", e.lease)] = _Fetched(lease)
        if row["id"] is not None:
            node = {k: v for k, v in row.items() if k not in _NOT_NODE and k[:2] not in _PREFIXES}
            self._ahead[("node_no", node["project_id"], node["number"])] = _Fetched([node])
            self._ahead[("node_locked", node["id"])] = _Fetched([node])
            self._ahead[("derive", frozenset([node["id"]]))] = derive
        if limits is not None:
            self._ahead[("org_limits",)] = limits
        if row["p_id"] is None:
            return None
        return {k[2:]: v for k, v in row.items() if k.startswith("p_")}

    async def projects_by_id(self, ids: Collection[UUID]) -> dict[UUID, Project]:
        if not ids:
            return {}
        missing = [i for i in ids if i not in self._projects]
        if missing:
            for r in await self.rows("projects_by_id", ids=missing):
                self._remember(project_from_row(r))
        return {i: self._projects[i] for i in ids if i in self._projects}

    async def slugs_like(self, base: str) -> set[str]:
        return {r["slug"] for r in await self.rows("slugs_like", base=base)}

    async def insert_project(self, project: Project) -> None:
        self._forget(project.id)
        await self.send("insert_project", **project_params(project))

    async def update_project(self, project: Project) -> None:
        self._forget(project.id)
        self._restricted = None  # its readers may have changed: read them again
        await self.send("update_project", **project_params(project))
        await self.send("add_slug", id=project.id, slug=project.slug)

    async def list_projects(
        self, *, archived: bool, limit: int, offset: int, hidden: Collection[UUID] = ()
    ) -> list[Project]:
        rows = await self.rows(
            "list_projects", archived=archived, limit=limit, offset=offset, hidden=list(hidden)
        )
        return [project_from_row(r) for r in rows]

    async def project_page(
        self,
        *,
        archived: bool,
        limit: int,
        hidden: Collection[UUID] = (),
        asof: EventPosition | None = None,
        after: tuple[datetime, UUID] | None = None,
    ) -> ProjectPage:
        rows = await self.rows(
            "project_page",
            archived=archived,
            limit=limit,
            hidden=list(hidden),
            asof=None if asof is None else str(asof.seq),
            after_at=None if after is None else after[0],
            after_id=None if after is None else after[1],
        )
        return ProjectPage(
            projects=[(project_from_row(r), r["active_at"]) for r in rows if r["id"] is not None],
            asof=EventPosition(seq=int(rows[0]["asof"])),
        )

    async def project_activity(self, ids: Collection[UUID]) -> dict[UUID, datetime]:
        if not ids:
            return {}
        return {
            r["project_id"]: r["at"] for r in await self.rows("project_activity", ids=list(ids))
        }

    async def allocate_numbers(self, project_id: UUID, count: int) -> int:
        self._forget(project_id)
        cur = await self._conn.execute(
            q("allocate_numbers"), {"org": self._org, "id": project_id, "count": count}
        )
        self._written()
        row = await cur.fetchone()
        assert row is not None
        return int(row["first"])

    # nodes
    async def nodes_by_id(self, ids: Collection[UUID], *, lock: bool = False) -> dict[UUID, Node]:
        if not ids:
            return {}
        rows = None
        if len(ids) == 1:  # a complete's node, read ahead locked (expect_complete)
            rows = await self._ahead_rows(("node_locked", next(iter(ids))))
        if rows is None:
            rows = await self.rows("nodes_by_id_locked" if lock else "nodes_by_id", ids=list(ids))
        return {r["id"]: node_from_row(r) for r in rows}

    async def node_by_number(
        self, project_id: UUID, number: int, *, lock: bool = False
    ) -> Node | None:
        rows = await self._ahead_rows(("node_no", project_id, number))
        if rows:
            return node_from_row(rows[0])
        row = await self.row(
            "node_by_number_locked" if lock else "node_by_number", project=project_id, number=number
        )
        return node_from_row(row) if row else None

    async def insert_nodes(self, nodes: Sequence[Node]) -> None:
        if not nodes:
            return
        await self._insert_rows("insert_node", "nodes", [node_params(n) for n in nodes])

    async def update_node(self, node: Node) -> None:
        await self.send("update_node", **node_params(node))

    async def children_of(self, ids: Collection[UUID]) -> list[Node]:
        if not ids:
            return []
        return [node_from_row(r) for r in await self.rows("children_of", ids=list(ids))]

    async def ancestors(self, node_id: UUID) -> list[Node]:
        return [node_from_row(r) for r in await self.rows("ancestors", id=node_id)]

    # edges
    async def upstream_cone(
        self, root_id: UUID, bound: int, *, hidden: Collection[UUID] = ()
    ) -> UpstreamCone:
        rows = await self.rows(
            "upstream_cone", id=root_id, bound=bound, hidden=list(hidden), now=await self.now()
        )
        cone = [(node_from_row(r), r["sources"]) for r in rows if r["sources"] is not None]
        leased = any(r["leased"] for r in rows)
        if len(cone) >= bound:  # an edge from past the bound is left out
            ids = {n.id for n, _ in cone}
            cone = [(n, [i for i in sources if i in ids]) for n, sources in cone]
        above = [node_from_row(r) for r in rows if r["sources"] is None]
        return UpstreamCone(nodes=cone, above=above, leased=leased)

    async def edges_into(self, ids: Collection[UUID]) -> list[Edge]:
        if not ids:
            return []
        claimed = self._claimed
        if claimed is None or list(ids) != [claimed]:
            return [edge_from_row(r) for r in await self.rows("edges_into", ids=list(ids))]
        rows = await self._ahead_rows(("edges", claimed))  # sent with take_next_ready
        if rows is None:
            # A claim reads the edges into the node it took, then who wrote it and their
            # sources, its derived facts and its comments hint (Work._take): all sent
            # now, one round trip.
            cur = await self._conn.execute(q("edges_into"), {"org": self._org, "ids": [claimed]})
            await self._read_ahead(("authors", claimed), "authors_of_claim")
            await self._read_ahead(
                ("derive", frozenset([claimed])), "derive", ids=[claimed], now=await self.now()
            )
            await self._read_ahead(("hint", claimed), "comment_hint", id=claimed)
            rows = await cur.fetchall()
        edges = [edge_from_row(r) for r in rows]
        if ("authors", claimed) in self._ahead:
            sources = frozenset([claimed, *(e.from_id for e in edges)])
            self._ahead[("authors", sources)] = self._ahead.pop(("authors", claimed))
        return edges

    async def edges_out_of(self, ids: Collection[UUID]) -> list[Edge]:
        if not ids:
            return []
        return [edge_from_row(r) for r in await self.rows("edges_out_of", ids=list(ids))]

    async def insert_edges(self, edges: Sequence[Edge]) -> None:
        if not edges:
            return
        params = [
            {
                "org": e.org_id,
                "from_id": e.from_id,
                "to_id": e.to_id,
                "kind": e.kind.value,
                "created_at": e.created_at,
            }
            for e in edges
        ]
        await self._insert_rows("insert_edge", "edges", params)

    async def delete_edge(self, from_id: UUID, to_id: UUID, kind: str) -> bool:
        return await self.write("delete_edge", from_id=from_id, to_id=to_id, kind=kind) > 0

    async def wait_arcs_from(self, ids: Collection[UUID]) -> list[tuple[UUID, UUID]]:
        if not ids:
            return []
        return [
            (r["waiter"], r["waited"]) for r in await self.rows("wait_arcs_from", ids=list(ids))
        ]

    # leases
    async def live_leases(self, node_ids: Collection[UUID]) -> dict[UUID, Lease]:
        if not node_ids:
            return {}
        rows = await self.rows("live_leases", ids=list(node_ids), now=await self.now())
        return {r["node_id"]: lease_from_row(r) for r in rows}

    async def lease_by_id(self, lease_id: UUID, *, lock: bool = False) -> Lease | None:
        rows = await self._ahead_rows(("lease_locked", lease_id)) if lock else None
        if rows is not None:
            return lease_from_row(rows[0]) if rows else None
        row = await self.row("lease_by_id_locked" if lock else "lease_by_id", id=lease_id)
        return lease_from_row(row) if row else None

    async def unreleased_lease(self, node_id: UUID) -> Lease | None:
        # a claim's was read right behind lock_next_ready
        rows = await self._rows_ahead(("unreleased", node_id), "unreleased_lease", id=node_id)
        return lease_from_row(rows[0]) if rows else None

    async def insert_lease(self, lease: Lease) -> None:
        await self.send("insert_lease", **lease_params(lease))

    async def update_lease(self, lease: Lease) -> None:
        await self.send("update_lease", **lease_params(lease))

    async def lease_history(self, node_id: UUID) -> list[Lease]:
        return [lease_from_row(r) for r in await self.rows("lease_history", id=node_id)]

    async def org_live_leases(
        self, project_ids: Collection[UUID] | None, limit: int
    ) -> list[Lease]:
        rows = await self.rows(
            "org_live_leases",
            projects=list(project_ids) if project_ids is not None else None,
            now=await self.now(),
            limit=limit,
        )
        return [lease_from_row(r) for r in rows]

    async def expired_leases(self, limit: int) -> list[Lease]:
        return [
            lease_from_row(r)
            for r in await self.rows("expired_leases", now=await self.now(), limit=limit)
        ]

    # derived state
    async def _query_params(self, query: ReadyQuery) -> Row:
        return {**self._filter_params(query), "now": await self.now()}

    @staticmethod
    def _filter_params(query: ReadyQuery) -> Row:
        return {
            "projects": list(query.projects),
            "kinds": list(query.kinds),
            "labels": list(query.labels),
            "anyl": list(query.any_labels),
            "akind": query.assignee_kind.value if query.assignee_kind else None,
            "agents": query.agent_only,
            "skip": "" if query.bookkeeping else BOOKKEEPING_KIND,
            "max_rank": query.max_priority_rank,
            "parent": query.parent,
            "exclude": list(query.exclude),
            "hidden": list(query.hidden),
        }

    async def derive(self, ids: Collection[UUID]) -> dict[UUID, Derived]:
        if not ids:
            return {}
        now = await self.now()  # (a claim's derive, sent ahead, read the clock already)
        rows = await self._rows_ahead(("derive", frozenset(ids)), "derive", ids=list(ids), now=now)
        return {
            r["id"]: Derived(
                blocked=r["blocked"],
                held=r["held"],
                claimed=r["claimed"],
                open_children=r["open_children"],
                archived=r["archived"],
                human_written=r["human_written"],
            )
            for r in rows
        }

    async def ready(self, query: ReadyQuery) -> list[Node]:
        """A page in turn order, read a project at a time (see ready_heads in graph.sql).

        First the head of each project in turn order, stopping once there are as
        many as the page holds: when there are, every row of the page is in the
        first pass. Otherwise those are all the projects with ready work, and each
        gives its top K nodes (after the walk's position in it), K doubling until
        the passes cover the page or no project has more.
        """
        params = {**await self._query_params(query), **ready_keys(query.after_keys)}
        after = query.after_project
        need = query.limit
        heads = await self.rows("ready_heads", **params, after=after, per=1, limit=need)
        if len(heads) < need and heads:
            params["projects"] = [r["project_id"] for r in heads]
            per = -(-need // len(heads))
            while True:
                rows = await self.rows(
                    "ready_heads", **params, after=after, per=per, limit=per * len(heads)
                )
                counts: dict[UUID, int] = {}
                for r in rows:
                    counts[r["project_id"]] = counts.get(r["project_id"], 0) + 1
                if len(rows) >= need or all(c < per for c in counts.values()):
                    break
                per *= 2
            heads = rows
        turn: dict[UUID, int] = {}
        keyed: list[tuple[int, bool, UUID, Row]] = []
        for r in heads:  # rows come by project in turn order, then by rank within one
            rank = turn.get(r["project_id"], 0)
            turn[r["project_id"]] = rank + 1
            keyed.append((rank, r["wrapped"], r["project_id"], r))
        keyed.sort(key=lambda k: (k[0], k[1], k[2]))
        return [node_from_row(k[3]) for k in keyed[:need]]

    async def list_nodes(
        self, query: ReadyQuery, *, status: Status | None, held: bool | None
    ) -> list[Node]:
        params = await self._query_params(query)
        rows = await self.rows(
            "list_nodes",
            **params,
            status=status.value if status else None,
            held=held,
            limit=query.limit,
            after_project=None if query.after_node is None else query.after_node[0],
            after_number=None if query.after_node is None else query.after_node[1],
        )
        return [node_from_row(r) for r in rows]

    async def held_count(self, query: ReadyQuery, *, at_most: int | None = None) -> int:
        params = await self._query_params(query)
        row = await self.row("held_count", **params, at_most=at_most)
        assert row is not None
        return int(row["n"])

    async def lock_next_ready(self, query: ReadyQuery) -> Node | None:
        params = await self._query_params(query)
        cur = await self._conn.execute(
            q("lock_next_ready"), {"org": self._org, **params, "after": query.after_project}
        )
        # the claim's next question, whether the node has an unreleased lease, goes along
        await self._read_ahead(("unreleased",), "unreleased_lease_of_claimed")
        row = await cur.fetchone()
        ahead = self._ahead.pop(("unreleased",), None)
        if row is None:
            return None
        if ahead is not None:
            self._ahead[("unreleased", row["id"])] = ahead
        return self._take_row(row)

    async def take_next_ready(
        self, principal_id: UUID, filter_hash: str, query: ReadyQuery
    ) -> Node | NotSimple | None:
        """One round trip, BEGIN included: take_next_ready (the cursor, the clock and the
        lock), and behind it what the claim reads of the node it locked, each a statement
        of its own so that its snapshot follows the lock (Work._take): its unreleased
        lease, the edges into it, their sources' authors and its own, its derived facts
        and its comments hint."""
        params = self._filter_params(query)
        cur = await self._conn.execute(
            q(_take_any(params) or "take_next_ready"),
            {
                "org": self._org,
                **params,
                "principal": principal_id,
                "hash": filter_hash,
                "offset": self._offset,
            },
        )
        behind = None
        if self._pipe is not None:
            behind = await self._conn.execute(
                q("claim_reads"), {"org": self._org, "offset": self._offset}
            )
        row = await cur.fetchone()
        assert row is not None
        self._keep(row)
        if not row["has_caps"]:
            self._ahead[NO_CAPS] = True
        if not row["simple"]:
            return NOT_SIMPLE
        if row["id"] is None:
            return None
        node = self._take_row(row)
        reads = await behind.fetchone() if behind is not None else None
        if reads is not None:
            self._ahead.update(_claim_reads(reads, self._org))
        return node

    def _take_row(self, row: Row) -> Node:
        """The node a claim's lock returned, with its project (p_*) remembered."""
        self._claimed = row["id"]
        self._remember(
            project_from_row(
                {"id": row["project_id"], "org_id": row["org_id"]}
                | {k[2:]: v for k, v in row.items() if k.startswith("p_")}
            )
        )
        return node_from_row(row)

    # claim cursors
    async def get_cursor(self, principal_id: UUID, filter_hash: str) -> UUID | None:
        row = await self.row(
            "get_cursor", principal=principal_id, hash=filter_hash, offset=self._offset
        )
        assert row is not None
        self._keep(row)
        if not row["has_caps"]:
            self._ahead[NO_CAPS] = True
        return row["project_id"]

    async def set_cursor(self, principal_id: UUID, filter_hash: str, project_id: UUID) -> None:
        await self.send_keeping_ahead(  # the claim's lease check was read ahead
            "set_cursor",
            principal=principal_id,
            hash=filter_hash,
            project=project_id,
            now=await self.now(),
        )

    # idempotency
    async def reserve_request(
        self, principal_id: UUID, request_id: str, fingerprint: str
    ) -> StoredRequest | None:
        ahead, self._reserved = self._reserved, None
        if (
            ahead is not None
            and self._reserving is not None
            and self._reserving[:2] == (principal_id, request_id)
            and ahead["request_id"]
        ):
            # reserved with the first read (expect_complete): its fingerprint is written
            # with the response (save_response), or before COMMIT when none is saved
            self._fingerprint = (principal_id, request_id, fingerprint)
            self._ahead[("applied", principal_id, request_id)] = ahead["applied_at"]
            return None
        row = await self.row(
            "reserve_request",
            principal=principal_id,
            rid=request_id,
            fingerprint=fingerprint,
            offset=self._offset,
        )
        assert row is not None
        if self._now is None:
            self._now = row["now"]
        if row["request_id"] is not None:
            self._written()
            self._ahead[("applied", principal_id, request_id)] = row["applied_at"]
            return None
        found = await self.row("get_request", principal=principal_id, rid=request_id)
        assert found is not None
        return StoredRequest(fingerprint=found["fingerprint"], response=found["response"])

    async def save_response(
        self, principal_id: UUID, request_id: str, response: dict[str, Any]
    ) -> None:
        pending = self._fingerprint
        if pending is not None and pending[:2] == (principal_id, request_id):
            self._fingerprint = None
            await self.send(
                "save_response_fingerprint",
                principal=principal_id,
                rid=request_id,
                response=Jsonb(response),
                fingerprint=pending[2],
            )
            return
        await self.send(
            "save_response", principal=principal_id, rid=request_id, response=Jsonb(response)
        )

    async def request_applied_at(self, principal_id: UUID, request_id: str) -> datetime | None:
        key = ("applied", principal_id, request_id)
        if key in self._ahead:  # read by reserve_request
            applied: datetime | None = self._ahead.pop(key)
            return applied
        row = await self.row("request_applied_at", principal=principal_id, rid=request_id)
        return row["at"] if row else None
