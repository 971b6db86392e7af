"""The web board, in a real browser against a real ``skift serve --http``.

Each scenario is what a person at the board does and sees: signing in with
the printed link, a gate an agent files appearing without a reload, answering
it, holding and releasing work, a refusal naming the next move, agent-written
content staying inert, forms refused without their token, and another
organization's work staying invisible.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from board_harness import WAIT_MS, Person

import skift

pytestmark = pytest.mark.pg


async def signed_in(browser: Any, person: Person, **context: Any) -> Any:
    """A new browser context signed in as the person, on Waiting on me."""
    ctx = await browser.new_context(**context)
    page = await ctx.new_page()
    await page.goto(await person.link())
    await page.wait_for_url(f"{person.server.url}/")
    return page


async def answer(field: Any, text: str) -> None:
    """Type ``text`` into a form field of a live page, as a person does: focus it, then type.

    A live refresh keeps an item whose form is focused or filled in, but one that lands
    between Playwright finding the field and typing into it replaces the field first (the
    text goes to the detached one): check the text is in the field on the page, else again.
    """
    for _ in range(5):
        await field.click()
        await field.fill(text)
        if await field.input_value() == text:
            return
    raise AssertionError(f"could not type into {field}")


async def flash(page: Any) -> str:
    return str(await page.locator(".flash").inner_text())


async def test_sign_in_with_the_printed_link_once(browser: Any, person: Person) -> None:
    """The link signs the person in and lands on Waiting on me under their name; the same link
    a second time is refused with the command for a new one; signing out ends the session."""
    link = await person.link()
    ctx = await browser.new_context()
    page = await ctx.new_page()
    await page.goto(link)
    await page.wait_for_url(f"{person.server.url}/")
    await page.get_by_role("heading", name="Waiting on me").wait_for()
    assert await page.locator(".me").inner_text() == "ada"
    cookie = next(c for c in await ctx.cookies() if c["name"] == "skift_session")
    assert cookie["httpOnly"]
    assert cookie["sameSite"] == "Strict"

    other = await (await browser.new_context()).new_page()
    await other.goto(link)
    await other.get_by_role("heading", name="Sign in").wait_for()
    text = await other.locator("main").inner_text()
    assert "already used or expired" in text
    assert "skift board" in text
    assert "skift_session" not in {c["name"] for c in await other.context.cookies()}

    await page.get_by_role("button", name="Sign out").click()
    await page.get_by_role("heading", name="Signed out").wait_for()
    await page.goto(f"{person.server.url}/")
    await page.get_by_role("heading", name="Sign in").wait_for()
    assert "skift board" in await page.locator("main").inner_text()


async def test_gate_appears_live_and_answering_it_unblocks_work(
    browser: Any, person: Person
) -> None:
    """An agent files a gate through the API while the page is open: it appears on Waiting on
    me without a reload, with the research it rests on; completing it with a result makes the
    blocked node ready (seen through the API the CLI uses)."""
    await person.sk.create_project("Hosting", slug="hosting")
    await person.sk.patch(
        "hosting",
        [
            skift.CreateNode(alias="r", title="Recommend a hosting provider"),
            skift.CreateNode(alias="s", title="Deploy the service", blocked_by=["r"]),
        ],
    )
    page = await signed_in(browser, person)
    await page.get_by_text("Nothing is waiting on you").wait_for()
    await page.locator("#live-status", has_text="Live").wait_for(timeout=WAIT_MS)

    async with person.agent() as bot:
        research = await bot.claim("hosting#1")
        await bot.complete(
            "hosting#1", lease=research.lease.id, result="Use **Fly.io**: `fly launch` works."
        )
        deploy = await bot.claim("hosting#2")
        await bot.gate(
            "hosting#2",
            lease=deploy.lease.id,
            title="Sign up with Fly.io",
            body="Create the account and paste the **org id**.",
        )
        await bot.patch("hosting", [skift.AddEdge(from_="hosting#1", to="hosting#3")])

    gate = page.locator("article.gate", has_text="Sign up with Fly.io")
    await gate.wait_for(timeout=WAIT_MS)
    text = await gate.inner_text()
    assert "Create the account and paste the org id." in text
    assert "Unblocks: hosting#2" in text
    await gate.locator("details.inputs", has_text="Use Fly.io").wait_for(timeout=WAIT_MS)
    assert "result by researcher (agent)" in await gate.inner_text()

    await answer(gate.get_by_label("Your answer"), "org id: **acme-42**")
    await gate.get_by_role("button", name="Complete hosting#3").click()
    assert "Completed hosting#3" in await flash(page)
    await page.get_by_text("Nothing is waiting on you").wait_for()
    deploy_now = await person.sk.get("hosting#2")
    assert deploy_now.ready
    done = await person.sk.get("hosting#3")
    assert (done.status, done.result, done.result_author) == (
        skift.Status.DONE,
        "org id: **acme-42**",
        "ada",
    )
    events = [e for e in await person.sk.events(ref="hosting#3") if e.op == "complete_node"]
    assert [(e.principal, e.identity_scheme) for e in events] == [("ada", "board")]


async def skift_cli(person: Person, *args: str) -> tuple[int, str, str]:
    """The installed ``skift`` against the test's server, as its owner (the socket's uid)."""
    env = {**os.environ, "SKIFT_SERVER": person.server.socket_url, "NO_COLOR": "1"}
    cli = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "skift"), *args,
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await cli.communicate()
    assert cli.returncode is not None
    return cli.returncode, out.decode(), err.decode()


async def test_skift_board_signs_in_and_the_cli_sees_the_answer(
    browser: Any, person: Person
) -> None:
    """`skift board` prints the link (the server knows its address); opening it signs the
    server's owner in; a gate answered there leaves the blocked node ready for `skift ready`."""
    code, out, err = await skift_cli(person, "board")
    assert code == 0, err
    link = next(w for w in out.split() if w.startswith("http://"))
    assert link.startswith(f"{person.server.url}/signin?code=skc_")
    assert "works once" in out
    code, out, err = await skift_cli(person, "board", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc) == {"url", "principal", "expires_at"}
    assert doc["url"] != link
    async with skift.open(person.server.dsn, principal=skift.User(doc["principal"])) as owner:
        slug = f"cli-{person.org}"
        await owner.create_project("CLI view", slug=slug)
        await owner.patch(
            slug,
            [
                skift.CreateNode(alias="g", title="Approve", assignee_kind="user"),
                skift.CreateNode(alias="w", title="Ship it", blocked_by=["g"]),
            ],
        )
    page = await (await browser.new_context()).new_page()
    await page.goto(link)
    await page.wait_for_url(f"{person.server.url}/")
    assert await page.locator(".me").inner_text() == doc["principal"]
    gate = page.locator("article.gate", has_text="Approve")
    await answer(gate.get_by_label("Your answer"), "approved")
    await gate.get_by_role("button", name=f"Complete {slug}#1").click()
    assert f"Completed {slug}#1" in await flash(page)
    code, out, err = await skift_cli(person, "ready", "-p", slug, "--json")
    assert code == 0, err
    assert [(n["ref"], n["ready"]) for n in json.loads(out)["nodes"]] == [(f"{slug}#2", True)]


async def test_hold_and_unhold_with_a_reason(browser: Any, person: Person) -> None:
    """Holding a node from its page asks why, parks it (the badge says so, Holds lists it
    with who and why), and releasing the hold asks why too; the events keep both reasons."""
    await person.sk.create_project("Parking", slug="park")
    await person.sk.patch("park", [skift.CreateNode(alias="a", title="Migrate billing")])
    page = await signed_in(browser, person)
    await page.goto(f"{person.server.url}/n/park/1")
    await answer(page.get_by_label("Why hold it"), "waiting for legal")
    await page.get_by_role("button", name="Hold", exact=True).click()
    assert "Held park#1" in await flash(page)
    await page.locator("h1 .badge-held").wait_for()
    assert (await person.sk.get("park#1")).held

    await page.get_by_role("link", name="Holds & focus").click()
    row = page.locator("li", has_text="Migrate billing")
    assert "by ada: “waiting for legal”" in await row.inner_text()
    await answer(row.get_by_label("Why release the hold on park#1"), "legal said yes")
    await row.get_by_role("button", name="Unhold").click()
    assert "Released the hold on park#1" in await flash(page)
    assert not (await person.sk.get("park#1")).held
    ops = [(e.op, e.reason) for e in await person.sk.events(ref="park#1")]
    assert ("hold_node", "waiting for legal") in ops
    assert ("unhold_node", "legal said yes") in ops


async def test_a_refused_action_shows_the_next_move(browser: Any, person: Person) -> None:
    """Dropping a node an agent holds a lease on is refused: the page says why and what to do
    next, and nothing changed."""
    await person.sk.create_project("Busy", slug="busy")
    await person.sk.patch("busy", [skift.CreateNode(alias="a", title="Being worked on")])
    async with person.agent("worker") as bot:
        await bot.claim("busy#1")
    page = await signed_in(browser, person)
    await page.goto(f"{person.server.url}/n/busy/1")
    assert "leased by worker" in (await page.locator(".reasons").inner_text()).replace("\n", " ")
    await answer(page.get_by_label("Why drop it"), "not needed")
    await page.get_by_role("button", name="Drop").click()
    alert = page.get_by_role("alert")
    text = await alert.inner_text()
    assert text.startswith("Refused:")
    assert "Next:" in text
    assert (await person.sk.get("busy#1")).status is skift.Status.OPEN


async def test_agent_written_markup_renders_inert(browser: Any, person: Person) -> None:
    """A body with a script, raw HTML and a remote image shows them as text and a link: no
    script runs, no image element exists, the browser asks no other host for anything, and
    a link off the board's rules (``/\\host``) stays text."""
    await person.sk.create_project("Hostile", slug="hostile")
    body = (
        "Look: <script>window.pwned = 1</script>\n\n"
        '<img src="http://198.51.100.7/raw.png" onerror="window.pwned = 2">\n\n'
        "![tracker](http://198.51.100.7/pixel.png)\n\n"
        "[click](javascript:window.pwned=3) and **bold**\n\n"
        "[away](/\\evil.example) [here](/projects)"
    )
    async with person.agent() as bot:
        await bot.patch("hostile", [skift.CreateNode(alias="a", title="Hostile", body=body)])
    page = await signed_in(browser, person)
    elsewhere: list[str] = []
    page.on(
        "request",
        lambda r: None if r.url.startswith(person.server.url) else elsewhere.append(r.url),
    )
    await page.goto(f"{person.server.url}/n/hostile/1")
    md = page.locator(".md.body")
    text = await md.inner_text()
    assert "<script>window.pwned = 1</script>" in text
    assert '<img src="http://198.51.100.7/raw.png"' in text
    assert "image: tracker" in text
    assert await md.locator("img, script").count() == 0
    assert await md.locator("a[href^='javascript']").count() == 0
    assert await md.locator("a[href*='evil']").count() == 0  # /\host is another host
    assert await md.locator("a[href='/projects']").count() == 1
    assert await md.locator("strong").inner_text() == "bold"
    assert await page.evaluate("window.pwned === undefined")
    assert elsewhere == []


async def test_a_form_without_its_token_is_refused(browser: Any, person: Person) -> None:
    """A POST with the session's cookie but without the form's CSRF token is refused and
    changes nothing; so is one claiming to come from another site."""
    await person.sk.create_project("Guarded", slug="guard")
    await person.sk.patch("guard", [skift.CreateNode(alias="a", title="Keep me")])
    page = await signed_in(browser, person)
    url = f"{person.server.url}/act/hold"
    got = await page.request.post(url, form={"ref": "guard#1", "reason": "csrf"})
    assert got.status == 403
    assert "CSRF" in await got.text()
    token = await page.locator("input[name=csrf]").first.get_attribute("value")
    got = await page.request.post(
        url,
        form={"ref": "guard#1", "reason": "csrf", "csrf": token},
        headers={"origin": "http://evil.example", "sec-fetch-site": "cross-site"},
    )
    assert got.status == 403
    assert not (await person.sk.get("guard#1")).held


async def test_another_organizations_work_is_invisible(browser: Any, person: Person) -> None:
    """A node of another organization is not found on the board, by its reference or in any
    list, exactly like a node that does not exist."""
    async with skift.open(
        person.server.dsn, principal=skift.User("eve"), org=f"{person.org}-other"
    ) as eve:
        await eve.create_project("Secret plans", slug="secret")
        await eve.patch(
            "secret", [skift.CreateNode(alias="a", title="Top secret", assignee_kind="user")]
        )
    await person.sk.create_project("Ours", slug="ours")
    page = await signed_in(browser, person)
    assert "Top secret" not in await page.locator("main").inner_text()
    response = await page.goto(f"{person.server.url}/n/secret/1")
    assert response.status == 404
    for path in ("/projects", "/ready", "/activity", "/holds"):
        await page.goto(person.server.url + path)
        text = await page.locator("main").inner_text()
        assert "secret" not in text.lower()


PAGES = [
    ("waiting", "/"),
    ("ready", "/ready"),
    ("project", "/p/tour"),
    ("node", "/n/tour/1"),
    ("holds", "/holds"),
    ("activity", "/activity"),
]

UNLABELLED = """() => [...document.querySelectorAll(
    "input:not([type=hidden]), textarea, select")].filter(
    (el) => el.labels.length === 0 && !el.getAttribute("aria-label")).map((el) => el.outerHTML)"""


async def _tour(person: Person) -> None:
    """A small project with something on every page."""
    sk = person.sk
    await sk.create_project("Tour of the board", slug="tour")
    await sk.create_project("Billing", slug="billing")
    await sk.patch(
        "tour",
        [
            skift.CreateNode(
                alias="r",
                title="Recommend a hosting provider",
                body="Compare **three** providers on price, regions and support.",
            ),
            skift.CreateNode(
                alias="g",
                title="Sign up with the chosen provider",
                assignee_kind="user",
                blocked_by=["r"],
                body="Create the account and paste the **org id** here.",
            ),
            skift.CreateNode(alias="c", title="Configure the OAuth app", blocked_by=["g"]),
            skift.CreateNode(alias="e", title="Roll out"),
            skift.CreateNode(alias="d", title="Write the runbook", parent="e"),
            skift.CreateNode(alias="a", title="Announce", parent="e", blocked_by=["d"]),
        ],
    )
    await sk.patch("billing", [skift.CreateNode(alias="t", title="Tax rules", labels=["eu"])])
    await sk.hold("billing#1", reason="waiting for legal")
    async with person.agent() as bot:
        claim = await bot.claim("tour#1")
        await bot.complete(
            "tour#1",
            lease=claim.lease.id,
            result="## Recommendation\n\nUse **Fly.io**:\n\n- cheapest for our load\n"
            "- `fly launch` works as is\n\nSee [the docs](https://fly.io/docs).",
        )
        await bot.add_comment("tour#1", "Pricing checked on **2026-11-30**.")
        await bot.claim("tour#5")


async def test_every_page_at_two_widths_light_and_dark(
    browser: Any, person: Person, shots: Path
) -> None:
    """Each page renders at 1280 and 375 px wide, light and dark, without a horizontal
    scrollbar on the page itself and with every form field labelled; the screenshots are saved
    for docs/board.md."""
    await _tour(person)
    link = await person.link()
    state: Any = None
    for scheme in ("light", "dark"):
        for width in (1280, 375):
            ctx = await browser.new_context(
                viewport={"width": width, "height": 900}, color_scheme=scheme
            )
            if state is None:
                page = await ctx.new_page()
                await page.goto(link)
                await page.wait_for_url(f"{person.server.url}/")
                state = await ctx.storage_state()
            else:
                await ctx.add_cookies(state["cookies"])
                page = await ctx.new_page()
            for name, path in PAGES:
                response = await page.goto(person.server.url + path)
                assert response.status == 200, (path, await page.locator("main").inner_text())
                assert await page.evaluate(UNLABELLED) == [], path
                overflow = await page.evaluate(
                    "document.documentElement.scrollWidth - document.documentElement.clientWidth"
                )
                assert overflow <= 0, (path, width, overflow)
                await page.screenshot(path=shots / f"{name}-{width}-{scheme}.png", full_page=True)
            await ctx.close()


MENU_OFF_SCREEN = """() => [...document.querySelectorAll("header.top nav a, header.top .who button")]
    .filter((el) => {
        const r = el.getBoundingClientRect();
        const box = el.closest("nav") ? el.closest("nav").getBoundingClientRect() : null;
        const clipped = box && (r.left < box.left - 0.5 || r.right > box.right + 0.5);
        return r.width === 0 || r.left < 0 || r.right > window.innerWidth + 0.5 || clipped;
    }).map((el) => el.textContent.trim())"""


async def test_the_whole_menu_shows_at_375_px(browser: Any, person: Person, shots: Path) -> None:
    """At 375 px every menu item (and Sign out) is inside the viewport and not clipped by a
    scrolling strip: the menu wraps onto a second line. The screenshot is saved."""
    await _tour(person)
    link = await person.link()  # works once: the second context reuses the session's cookies
    state: Any = None
    for scheme in ("light", "dark"):
        ctx = await browser.new_context(viewport={"width": 375, "height": 700}, color_scheme=scheme)
        if state is None:
            page = await ctx.new_page()
            await page.goto(link)
            await page.wait_for_url(f"{person.server.url}/")
            state = await ctx.storage_state()
        else:
            await ctx.add_cookies(state["cookies"])
            page = await ctx.new_page()
            await page.goto(person.server.url + "/")
        assert await page.evaluate(MENU_OFF_SCREEN) == []
        items = await page.locator("header.top nav a").all_inner_texts()
        assert items == ["Waiting on me", "Ready", "Projects", "Holds & focus", "Activity"]
        await page.locator("header.top").screenshot(path=shots / f"menu-375-{scheme}.png")
        await ctx.close()


async def test_keyboard_reaches_everything(browser: Any, person: Person) -> None:
    """From the top of a page, Tab reaches the skip link first (Enter on it moves focus to the
    content), then the navigation; a gate can be answered with the keyboard alone."""
    await _tour(person)
    page = await signed_in(browser, person)
    await page.keyboard.press("Tab")
    assert await page.evaluate("document.activeElement.textContent") == "Skip to content"
    await page.keyboard.press("Enter")
    assert await page.evaluate("document.activeElement.id") == "main"
    await page.goto(f"{person.server.url}/")
    names: list[str] = []
    for _ in range(8):
        await page.keyboard.press("Tab")
        names.append(await page.evaluate("document.activeElement.textContent.trim()"))
    assert names[:8] == [
        "Skip to content",
        "skiftboard",
        "Waiting on me",
        "Ready",
        "Projects",
        "Holds & focus",
        "Activity",
        "Sign out",
    ]
    answer = page.get_by_label("Your answer")
    await answer.focus()
    await page.keyboard.type("done by keyboard")
    await page.keyboard.press("Tab")
    assert await page.evaluate("document.activeElement.textContent") == "Complete tour#2"
    await page.keyboard.press("Enter")
    assert "Completed tour#2" in await flash(page)


async def test_preempt_a_lease(browser: Any, person: Person) -> None:
    """A person takes a lease from an agent with a reason: the node is free to claim again,
    the lease ended as preempted, and the agent's next write under it is refused."""
    await person.sk.create_project("Stuck", slug="stuck")
    await person.sk.patch("stuck", [skift.CreateNode(alias="a", title="Stuck work")])
    async with person.agent("slowpoke") as bot:
        claim = await bot.claim("stuck#1")
        page = await signed_in(browser, person)
        await page.goto(f"{person.server.url}/n/stuck/1")
        await answer(page.get_by_label("Why take the lease from slowpoke"), "stuck for an hour")
        await page.get_by_role("button", name="Preempt the lease").click()
        assert "Preempted the lease on stuck#1" in await flash(page)
        assert (await person.sk.get("stuck#1")).ready
        history = await person.sk.leases("stuck#1")
        assert history[-1].release_reason is skift.ReleaseReason.PREEMPTED
        assert "preempted" in await page.locator(".leases").inner_text()
        with pytest.raises(skift.SkiftError):
            await bot.complete("stuck#1", lease=claim.lease.id, result="late")


async def test_live_stream_resumes_from_the_last_event_id(person: Person) -> None:
    """The live stream is the change stream: a browser reconnecting with the id of the last
    message it saw gets exactly what committed after it, not what it already had."""
    import httpx

    base = person.server.url
    await person.sk.create_project("Seen before", slug="seen")
    seen = (await person.sk.events(limit=1))[-1].cursor
    await person.sk.create_project("Missed while away", slug="missed")
    await person.sk.create_project("Also missed", slug="missed-too")
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        code = (await person.sk.mint_signin_code()).code
        signed = await http.post("/signin", data={"code": code}, headers={"origin": base})
        assert signed.status_code == 303
        headers = {"last-event-id": seen}
        async with http.stream("GET", "/live", headers=headers) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            message: dict[str, str] = {}
            async for line in stream.aiter_lines():
                if line.startswith(("id:", "event:", "data:")):
                    key, _, value = line.partition(":")
                    message[key] = value.strip()
                elif not line and "data" in message:
                    break
    assert message["event"] == "change"
    assert json.loads(message["data"]) == {"create_project": 2}
    assert message["id"]  # the cursor the browser sends back on reconnect
