"""The board's routes: pages, the forms' actions, the live stream, sign-in and sign-out.

Every page and action runs on the signed-in person's handle
(``base.session(secret)``); an action is one API call whose outcome (or
refusal, with its next move) is flashed on the page the form came from.
The live stream (``/live``) is server-sent events over the change stream
(``watch_events``): each message's id is the stream's cursor, so a browser
that reconnects (sending ``Last-Event-ID``) resumes where it left off, and
the page's script re-reads the page's live region when a message arrives.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import Any, Final

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

import skift

from . import _pages as pages
from ._markdown import bounded, page_budget
from ._session import (
    COOKIE,
    FLASH,
    clear_session,
    csrf_ok,
    csrf_token,
    form,
    local_path,
    same_origin,
    set_flash,
    set_session,
    take_flash,
)

_log = logging.getLogger("skift_server.board")

LIVE_WAIT: Final = timedelta(seconds=15)

SECURITY_HEADERS: Final = {
    "content-security-policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; "
    "script-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}


def _when(value: datetime | None) -> str:
    if value is None:
        return ""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _node_path(ref: str) -> str:
    slug, _, number = ref.rpartition("#")
    return f"/n/{slug}/{number}"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("skift_server.board", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["md"] = bounded  # pyright: ignore[reportArgumentType]
    env.filters["when"] = _when  # pyright: ignore[reportArgumentType]
    env.filters["node_path"] = _node_path  # pyright: ignore[reportArgumentType]
    env.globals["state_of"] = pages.state_of  # pyright: ignore[reportArgumentType]
    return env


Action = Callable[[skift.LocalSkift, dict[str, str]], Awaitable[str]]


def board_next(exc: skift.SkiftError) -> str:
    """The next move worded for a person on the board: a sign-in link comes from `skift board`."""
    move = exc.move
    if move is not None and move["do"] == "board_link":
        return "Run 'skift board' for a new sign-in link, and open it."
    return exc.next


class Board:
    """The web board over a server's base handle (``SkiftServer.base``)."""

    def __init__(self, base: Callable[[], skift.LocalSkift]) -> None:
        self._base = base
        self.env = _environment()
        self.closing = asyncio.Event()
        self.actions: dict[str, Action] = {
            "complete": _complete,
            "comment": _comment,
            "resolve_comment": _resolve_comment,
            "hold": _hold,
            "unhold": _unhold,
            "drop": _drop,
            "reopen": _reopen,
            "focus": _focus,
            "clear_focus": _clear_focus,
            "preempt": _preempt,
        }

    def routes(self) -> list[BaseRoute]:
        static = StaticFiles(directory=str(resources.files("skift_server.board") / "static"))
        return [
            Route("/", self._page(self._waiting, "waiting"), methods=["GET"]),
            Route("/ready", self._page(self._ready, "ready"), methods=["GET"]),
            Route("/projects", self._page(self._projects, "projects"), methods=["GET"]),
            Route("/p/{slug}", self._page(self._project, "projects"), methods=["GET"]),
            Route("/n/{slug}/{number:int}", self._page(self._node, "projects"), methods=["GET"]),
            Route("/holds", self._page(self._holds, "holds"), methods=["GET"]),
            Route("/activity", self._page(self._activity, "activity"), methods=["GET"]),
            Route("/blob/{digest}", self._blob, methods=["GET"]),
            Route("/live", self._live, methods=["GET"]),
            Route("/signin", self._signin_page, methods=["GET"]),
            Route("/signin", self._signin, methods=["POST"]),
            Route("/signout", self._signout, methods=["POST"]),
            Route("/act/{action}", self._act, methods=["POST"]),
            Mount("/static", app=static, name="static"),
        ]

    # ------------------------------------------------------------ rendering

    def _html(self, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        body = self.env.get_template(template).render(**context)
        return HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)

    def _html_budgeted(self, template: str, status: int, context: dict[str, Any]) -> HTMLResponse:
        with page_budget():
            return self._html(template, status, **context)

    def _message(
        self, request: Request, status: int, title: str, text: str, next: str = ""
    ) -> HTMLResponse:
        return self._html(
            "message.html",
            status,
            title=title,
            text=text,
            next=next,
            me=None,
            csrf="",
            nav="",
            flash=None,
            cursor="",
            path=request.url.path,
        )

    async def _who(self, request: Request) -> tuple[skift.LocalSkift, str] | Response:
        secret = request.cookies.get(COOKIE, "")
        try:
            if not secret:
                raise skift.Unauthenticated(
                    "not signed in", next="Run 'skift board' and open the link it prints."
                )
            return await self._base().session(secret), secret
        except skift.Unauthenticated as exc:
            response = self._message(request, 401, "Sign in", exc.message, board_next(exc))
            if secret:
                clear_session(response, request)
            return response

    def _page(
        self,
        read: Callable[[Request, skift.LocalSkift], Awaitable[tuple[str, dict[str, Any]]]],
        nav: str,
    ) -> Callable[[Request], Awaitable[Response]]:
        async def handler(request: Request) -> Response:
            who = await self._who(request)
            if isinstance(who, Response):
                return who
            sk, secret = who
            flash = take_flash(request)
            try:
                cursor = await pages.cursor(sk)
                template, context = await read(request, sk)
                status = 200
            except skift.SkiftError as exc:
                status = 404 if isinstance(exc, skift.NotFound) else 400
                template, context = (
                    "message.html",
                    {
                        "title": "Not shown",
                        "text": exc.message,
                        "next": exc.next,
                    },
                )
                cursor = ""
            # A page's templates (and its Markdown) render off the event loop.
            response = await asyncio.to_thread(
                self._html_budgeted,
                template,
                status,
                {
                    "me": sk.spec.name,
                    "csrf": csrf_token(secret),
                    "nav": nav,
                    "flash": flash,
                    "cursor": cursor,
                    "path": request.url.path
                    + (f"?{request.url.query}" if request.url.query else ""),
                    **context,
                },
            )
            if flash is not None:
                response.delete_cookie(FLASH, path="/")
            return response

        return handler

    # ------------------------------------------------------------ pages

    async def _waiting(self, request: Request, sk: skift.LocalSkift) -> tuple[str, dict[str, Any]]:
        page = request.query_params.get("page") or None
        return "waiting.html", await pages.waiting(sk, sk.spec.name, page)

    async def _ready(self, request: Request, sk: skift.LocalSkift) -> tuple[str, dict[str, Any]]:
        query = dict(request.query_params)
        try:
            return "ready.html", await pages.ready(sk, query)
        except (skift.Invalid, skift.NotFound) as exc:
            empty = skift.ReadyPage(nodes=(), held_count=0, next_page=None)
            return "ready.html", {
                "page": empty,
                "filters": {k: query.get(k, "") for k in pages.FILTERS},
                "projects": await sk.list_projects(limit=100),
                "error": exc,
            }

    async def _projects(self, request: Request, sk: skift.LocalSkift) -> tuple[str, dict[str, Any]]:
        return "projects.html", {"projects": await sk.list_projects(limit=200)}

    async def _project(self, request: Request, sk: skift.LocalSkift) -> tuple[str, dict[str, Any]]:
        slug = request.path_params["slug"]
        return "project.html", await pages.project(
            sk, slug, request.query_params.get("page") or None
        )

    async def _node(self, request: Request, sk: skift.LocalSkift) -> tuple[str, dict[str, Any]]:
        ref = f"{request.path_params['slug']}#{request.path_params['number']}"
        return "node.html", await pages.node(sk, ref)

    async def _holds(self, request: Request, sk: skift.LocalSkift) -> tuple[str, dict[str, Any]]:
        return "holds.html", await pages.holds(sk)

    async def _activity(self, request: Request, sk: skift.LocalSkift) -> tuple[str, dict[str, Any]]:
        return "activity.html", await pages.activity(sk)

    async def _blob(self, request: Request) -> Response:
        who = await self._who(request)
        if isinstance(who, Response):
            return who
        sk, _ = who
        try:
            data = await sk.get_blob(request.path_params["digest"])
        except skift.SkiftError as exc:
            return self._message(request, 404, "Not found", exc.message, exc.next)
        name = "".join(
            c for c in request.query_params.get("name", "artifact") if c.isalnum() or c in "._-"
        )
        return Response(
            data,
            media_type="application/octet-stream",
            headers={
                **SECURITY_HEADERS,
                "content-disposition": f'attachment; filename="{name or "artifact"}"',
            },
        )

    # ------------------------------------------------------------ sign-in

    async def _signin_page(self, request: Request) -> Response:
        """The page a sign-in link opens. It posts the code back by itself, unless this
        browser already has a session for somebody else (or for another organization): then
        it names both and waits for a click, so a link someone sent cannot switch a person
        into the sender's session unseen (login CSRF). Only that POST spends the code."""
        code = request.query_params.get("code", "")
        current: tuple[str, str] | None = None
        switch_to: tuple[str, str] | None = None
        secret = request.cookies.get(COOKIE, "")
        if code and secret:
            try:
                open_session = await self._base().session(secret)
            except skift.Unauthenticated:
                pass
            else:
                current = (open_session.spec.name, open_session.org_name)
                switch_to = await self._base().signin_code_owner(code)
        confirm = current is not None and switch_to != current
        return self._html(
            "signin.html",
            code=code,
            confirm=confirm,
            current=current,
            switch_to=switch_to,
            me=None,
            csrf="",
            nav="",
            flash=None,
            cursor="",
            path="/signin",
        )

    async def _signin(self, request: Request) -> Response:
        if not same_origin(request):
            return self._message(request, 403, "Refused", "a sign-in from another site")
        fields = await form(request)
        try:
            session = await self._base().redeem_signin_code(fields.get("code", ""))
        except skift.Unauthenticated as exc:
            return self._message(request, 401, "Sign in", exc.message, board_next(exc))
        response = RedirectResponse("/", status_code=303, headers=SECURITY_HEADERS)
        set_session(response, request, session.secret, session.expires_at)
        _log.info("board sign-in", extra={"fields": {"principal": session.principal}})
        return response

    async def _signout(self, request: Request) -> Response:
        who = await self._checked(request)
        if isinstance(who, Response):
            return who
        _sk, secret, _fields = who
        await self._base().end_session(secret)
        response = self._message(
            request,
            200,
            "Signed out",
            "You are signed out of the board.",
            "Run 'skift board' to sign in again.",
        )
        clear_session(response, request)
        return response

    # ------------------------------------------------------------ actions

    async def _checked(
        self, request: Request
    ) -> tuple[skift.LocalSkift, str, dict[str, str]] | Response:
        """A POST from the board's own page, by a signed-in person, with the form's token."""
        if not same_origin(request):
            return self._message(
                request,
                403,
                "Refused",
                "a form posted from another site",
                "Use the board's own pages.",
            )
        who = await self._who(request)
        if isinstance(who, Response):
            return who
        sk, secret = who
        fields = await form(request)
        if not csrf_ok(secret, fields.get("csrf", "")):
            return self._message(
                request,
                403,
                "Refused",
                "the form did not carry this session's token (CSRF protection)",
                "Reload the page and submit the form again.",
            )
        return sk, secret, fields

    async def _act(self, request: Request) -> Response:
        action = self.actions.get(request.path_params["action"])
        if action is None:
            return self._message(request, 404, "Not found", "no such action")
        who = await self._checked(request)
        if isinstance(who, Response):
            return who
        sk, _secret, fields = who
        back = local_path(fields.get("return_to"))
        response = RedirectResponse(back, status_code=303, headers=SECURITY_HEADERS)
        try:
            done = await action(sk, fields)
        except skift.SkiftError as exc:
            set_flash(response, request, "error", f"Refused: {exc.message}", exc.next)
        else:
            set_flash(response, request, "ok", done)
        return response

    # ------------------------------------------------------------ live

    async def _live(self, request: Request) -> Response:
        who = await self._who(request)
        if isinstance(who, Response):
            return who
        sk, _ = who
        after = request.headers.get("last-event-id") or request.query_params.get("after") or None
        return StreamingResponse(
            self._stream(sk, after),
            media_type="text/event-stream",
            headers={**SECURITY_HEADERS, "x-accel-buffering": "no"},
        )

    async def _stream(self, sk: skift.LocalSkift, after: str | None) -> AsyncGenerator[str]:
        yield "retry: 1000\n\n"
        cursor = after
        closing = asyncio.create_task(self.closing.wait())
        try:
            while not self.closing.is_set():
                read = asyncio.create_task(sk.watch_events(after=cursor, limit=200, wait=LIVE_WAIT))
                await asyncio.wait({read, closing}, return_when=asyncio.FIRST_COMPLETED)
                if not read.done():
                    read.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await read
                    break
                try:
                    page = read.result()
                except skift.CursorExpired as exc:
                    cursor = str(exc.details.get("oldest_cursor") or "") or None
                    yield 'event: change\ndata: {"resync": true}\n\n'
                    continue
                except skift.SkiftError:
                    yield ": unavailable\n\n"
                    await asyncio.sleep(1)
                    continue
                cursor = page.cursor
                if page.events:
                    counts: dict[str, int] = {}
                    for e in page.events:
                        counts[e.op] = counts.get(e.op, 0) + 1
                    yield f"id: {page.cursor}\nevent: change\ndata: {json.dumps(counts)}\n\n"
                else:
                    yield f"id: {page.cursor}\n: idle\n\n"
        finally:
            closing.cancel()


# ---------------------------------------------------------------- the actions


def _ref(fields: dict[str, str]) -> str:
    ref = fields.get("ref", "").strip()
    if not ref:
        raise skift.Invalid("the form named no node", next="Reload the page and try again.")
    return ref


def _reason(fields: dict[str, str]) -> str:
    reason = fields.get("reason", "").strip()
    if not reason:
        raise skift.Invalid(
            "a reason is needed", next="Say why in the reason field: the next person will ask."
        )
    return reason


async def _complete(sk: skift.LocalSkift, f: dict[str, str]) -> str:
    res = await sk.complete(_ref(f), result=f.get("result", "").strip())
    return f"Completed {res.nodes[0].ref}" if res.nodes else "Completed"


async def _comment(sk: skift.LocalSkift, f: dict[str, str]) -> str:
    got = await sk.add_comment(_ref(f), f.get("body", ""), reply_to=f.get("reply_to") or None)
    return f"Commented on {got.node}"


async def _resolve_comment(sk: skift.LocalSkift, f: dict[str, str]) -> str:
    got = await sk.resolve_comment(f.get("comment", ""))
    return f"Resolved a comment on {got.node}"


async def _hold(sk: skift.LocalSkift, f: dict[str, str]) -> str:
    ref = _ref(f)
    await sk.hold(ref, reason=_reason(f))
    return f"Held {ref}"


async def _unhold(sk: skift.LocalSkift, f: dict[str, str]) -> str:
    ref = _ref(f)
    await sk.unhold(ref, reason=_reason(f))
    return f"Released the hold on {ref}"


async def _drop(sk: skift.LocalSkift, f: dict[str, str]) -> str:
    ref = _ref(f)
    res = await sk.drop(ref, reason=_reason(f))
    return f"Dropped {', '.join(res.dropped) or ref}"


async def _reopen(sk: skift.LocalSkift, f: dict[str, str]) -> str:
    ref = _ref(f)
    await sk.reopen(ref, reason=_reason(f))
    return f"Reopened {ref}"


async def _focus(sk: skift.LocalSkift, f: dict[str, str]) -> str:
    keep = [k.strip() for k in f.get("keep", "").replace("\n", ",").split(",") if k.strip()]
    got = await sk.focus(keep, reason=_reason(f), project=f.get("project") or None)
    return f"Focused {got.scope}: {got.parked} open nodes parked"


async def _clear_focus(sk: skift.LocalSkift, f: dict[str, str]) -> str:
    got = await sk.clear_focus(reason=_reason(f), project=f.get("project") or None)
    return f"Cleared the focus of {got.scope}: released {len(got.released)}"


async def _preempt(sk: skift.LocalSkift, f: dict[str, str]) -> str:
    ref = _ref(f)
    await sk.release(ref, preempt=True, reason=_reason(f))
    return f"Preempted the lease on {ref}: it is free to claim again"
