"""The web viewer in real headless Chromium against a real server: the list, a search, a
session, a citation followed, a growing log, the keyboard, hostile log text.

Skipped without ``/usr/bin/chromium`` or ``playwright`` (as the HTML report's browser
tests); the launch flags are theirs. Reads need the token here, so every test also goes
through the sign-in (``/#token=``). Every request that would leave the server is refused
and recorded.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from opencode_restore.api import create_app
from opencode_restore.api.routes import viewer
from opencode_restore.config import load_config
from opencode_restore.search.index import index_path, update
from opencode_restore.store.store import Store
from tests.api.test_server import _free_port
from tests.report.test_html_browser import ARGS, CHROMIUM
from tests.store.builders import CLAUDE_COMPACT, CLAUDE_CONTINUE
from tests.waits import RUNAWAY_MS, RUNAWAY_S

if not CHROMIUM.exists():
    pytest.skip("no /usr/bin/chromium (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")

TOKEN = "t0k-viewer"
LIVE = "d703ad6a-fc57-46ca-94d6-a6af7cf0c933"
OTHER = "e57fea98-e10e-4cce-a470-5de2e7413154"
HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script> & more'
#: Lines of the live log written before the page opens (the rest are appended after).
FIRST_LINES = 20
#: A restoration citing messages of the first lines: a user request and a tool call.
SUMMARY = (
    "# SESSION SUMMARY\n\n## Goal\n\nAdd the flag. [M1]\n\n## Progress\n\n- wrote the test [M13]\n"
)


@dataclass
class Site:
    url: str
    log: Path
    rest: list[str]
    outside: list[str] = field(default_factory=list)


@pytest.fixture
def site(store: Store, tmp_path: Path) -> Iterator[Site]:
    lines = CLAUDE_CONTINUE.read_text(encoding="utf-8").splitlines(keepends=True)
    first = json.loads(lines[2])
    first["message"]["content"] = HOSTILE + " " + first["message"]["content"]
    lines[2] = json.dumps(first) + "\n"
    log = tmp_path / f"{LIVE}.jsonl"
    log.write_text("".join(lines[:FIRST_LINES]), encoding="utf-8")
    store.register(
        LIVE,
        "claude-code",
        str(log),
        cwd="/home/dev/src/greet-cli",
        title=HOSTILE,
        updated_at="2026-11-21T11:40:00Z",
    )
    store.register(
        OTHER, "claude-code", str(CLAUDE_COMPACT), cwd="/w/other", updated_at="2026-11-20T09:00:00Z"
    )
    store.add_restoration(
        LIVE,
        provider="offline:rules",
        summary_markdown=SUMMARY,
        summary={},
        usage=None,
        errors=None,
    )
    app = create_app(store, token=TOKEN, config=load_config(), reads_need_token=True)
    srv = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=_free_port(), log_level="warning")
    )
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + RUNAWAY_S
    while not srv.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    yield Site(f"http://127.0.0.1:{srv.config.port}", log, lines[FIRST_LINES:])
    srv.should_exit = True
    thread.join(timeout=30)


@pytest.fixture
def page(site: Site) -> Iterator[Any]:
    """A signed-in page on the sessions list; ``page.errors`` collects console errors."""

    def only_local(route: Any) -> None:
        if route.request.url.startswith(site.url + "/"):
            route.continue_()
        else:
            site.outside.append(route.request.url)
            route.abort()

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            # Waits only catch a runaway: a loaded CI machine may be slow, never wrong.
            context.set_default_timeout(RUNAWAY_MS)
            context.route("**/*", only_local)
            pg = context.new_page()
            pg.errors = []
            pg.on("pageerror", lambda e: pg.errors.append(str(e)))
            pg.on("console", lambda m: pg.errors.append(m.text) if m.type == "error" else None)
            requests: list[str] = []
            pg.on("request", lambda r: requests.append(r.url))
            response = pg.goto(f"{site.url}/#token={TOKEN}")
            assert response is not None
            assert response.headers["content-security-policy"] == viewer.CSP
            pg.wait_for_selector("#session-list a.row")
            assert pg.url == f"{site.url}/#/"  # the token left the address bar
            assert not [u for u in requests if TOKEN in u]  # and was in no address sent
            yield pg
        finally:
            browser.close()


def _labels_shown(page: Any) -> list[str]:
    labels: list[str] = page.eval_on_selector_all(
        "#messages .msg[data-label]", "els => els.map(e => e.dataset.label)"
    )
    return labels


def test_list_open_a_session_and_follow_a_citation(page: Any, site: Site) -> None:
    rows = page.locator("#session-list a.row")
    assert rows.count() == 2
    assert "greet-cli" in rows.first.inner_text()
    page.locator(f"#session-list a.row[data-session='{LIVE}']").click()
    page.wait_for_selector("body[data-loaded='1']")
    assert page.locator("#session-title").inner_text().startswith("<img src=x")
    assert _labels_shown(page)[:3] == ["M1", "M2", "M3"]
    # Tool calls are folded; the thread's last message is below the fold.
    assert page.locator("#m-M13 details").evaluate("d => d.open") is False
    page.locator("#restoration a.cite", has_text="M13").click()
    page.wait_for_function(
        "() => document.querySelector('#messages .current')?.dataset.label === 'M13'"
    )
    assert page.url.endswith(f"#/s/{LIVE}/M13")
    assert page.locator("#m-M13 details").evaluate("d => d.open") is True
    assert page.locator("#m-M13").is_visible()
    box = page.locator("#m-M13").bounding_box()
    assert 0 <= box["y"] < 900
    # Hostile log text is shown as text and never runs.
    assert HOSTILE in page.locator("#m-M1 pre").inner_text()
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#messages img, #messages script").count() == 0
    # Keyboard: j/k from the cited message, Esc back to the list.
    page.keyboard.press("j")
    assert page.evaluate("document.querySelector('#messages .current').dataset.label") == "M14"
    page.keyboard.press("k")
    page.keyboard.press("k")
    assert page.evaluate("document.querySelector('#messages .current').dataset.label") == "M12"
    page.keyboard.press("Escape")
    page.wait_for_selector("#list-view:not([hidden])")
    assert page.errors == []
    assert site.outside == []


def test_loaded_waits_for_the_header_and_the_restoration(page: Any, site: Site) -> None:
    # The session's own record is held back until the thread is on screen: the page must
    # not say it is loaded while its title is still the bare id (CI once read it so).
    held: list[Any] = []
    page.route(f"**/sessions/{LIVE}", lambda route: held.append(route))
    page.locator(f"#session-list a.row[data-session='{LIVE}']").click()
    page.wait_for_selector("#messages .msg[data-label='M1']")
    assert held
    assert page.evaluate("document.body.dataset.loaded") is None
    assert page.locator("#session-title").inner_text() == LIVE
    held[0].continue_()
    page.wait_for_selector("body[data-loaded='1']")
    assert page.locator("#session-title").inner_text().startswith("<img src=x")
    assert "Restored" in page.locator("#restoration").inner_text()
    assert page.errors == []


def test_a_growing_log_shows_its_new_messages_without_a_reload(page: Any, site: Site) -> None:
    page.goto(f"{site.url}/#/s/{LIVE}")
    page.wait_for_selector("body[data-loaded='1']")
    before = page.locator("#messages > *").count()
    with site.log.open("a", encoding="utf-8") as fh:
        fh.writelines(site.rest)
    page.wait_for_function(
        f"() => document.querySelectorAll('#messages > *').length > {before}", timeout=RUNAWAY_MS
    )
    page.wait_for_function(
        "() => document.getElementById('thread-info').textContent.includes('new')"
    )
    shown = (
        "[...document.querySelectorAll('#messages > .msg')]"
        ".map(e => [e.dataset.id, e.dataset.label])"
    )
    after = page.evaluate(shown)
    assert len(after) == len({i for i, _ in after})  # nothing shown twice
    # Polled messages carry their [M#] too.
    assert [label for _, label in after[before:] if label]
    # The same page reloaded shows the same messages, in the same order, labelled alike.
    page.reload()
    page.wait_for_selector("body[data-loaded='1']")
    assert after == page.evaluate(shown)
    assert page.errors == []


def test_search_lists_hits_and_enter_opens_one(page: Any, site: Site) -> None:
    asked: list[str] = []
    hit = {
        "session_id": LIVE,
        "agent": "claude-code",
        "cwd": "/home/dev/src/greet-cli",
        "time": "2026-11-21T11:39:33.038Z",
        "label": "M13",
        "kind": "tool",
        "role": "assistant",
        "snippet": "Write tests/test_greet.py <b>not markup</b>",
        "highlights": [[6, 11]],
        "score": -3.2,
    }

    def stub(route: Any) -> None:
        asked.append(route.request.url)
        route.fulfill(json={"hits": [hit], "query": "greet"})

    page.route("**/search?*", stub)
    page.keyboard.press("/")
    page.keyboard.type("greet")
    page.keyboard.press("Enter")
    page.wait_for_selector("#hit-list a.row")
    assert "q=greet" in asked[0]
    assert page.locator("#hit-list mark").all_inner_texts() == ["tests"]
    assert "<b>not markup</b>" in page.locator("#hit-list .snippet").inner_text()
    page.locator("#search").blur()
    page.keyboard.press("j")
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => document.querySelector('#messages .current')?.dataset.label === 'M13'"
    )
    assert page.errors == []


def test_the_project_filter_asks_the_server(page: Any, site: Site) -> None:
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url))
    page.route("**/search?*", lambda route: route.fulfill(json={"hits": [], "query": "x"}))
    page.fill("#search", "greet")
    page.press("#search", "Enter")
    page.wait_for_selector("#hits:not([hidden])")
    page.fill("#f-project", "other")
    page.wait_for_function("() => document.querySelectorAll('#session-list a.row').length === 1")
    assert page.locator("#session-list a.row").get_attribute("data-session") == OTHER
    assert page.locator("#sessions-head").inner_text() == "Sessions: 1 of 1"
    # The list and the search both asked the server for the project (not only what was loaded).
    assert any("/sessions?" in u and "cwd=other" in u for u in asked)
    assert any("/search?" in u and "cwd=other" in u and "q=greet" in u for u in asked)
    assert page.errors == []


def test_search_against_the_real_index_opens_the_hit_at_its_label(
    page: Any, site: Site, store: Store
) -> None:
    update(store, index_path(store.path.parent))
    page.fill("#f-project", "other")
    page.fill("#search", "README")
    page.press("#search", "Enter")
    page.wait_for_selector("#hit-list a.row")
    first = page.locator("#hit-list a.row").first
    # Only the project's session: the filter reached GET /search.
    assert set(
        page.eval_on_selector_all("#hit-list a.row", "a => a.map(e => e.dataset.session)")
    ) == {OTHER}
    assert first.locator("mark").first.inner_text() == "README"
    label = first.locator(".label").inner_text().strip("[]")
    first.click()
    page.wait_for_function(
        f"() => document.querySelector('#messages .current')?.dataset.label === '{label}'"
    )
    assert page.url.endswith(f"#/s/{OTHER}/{label}")
    assert "README" in page.locator(f"#m-{label}").inner_text()
    assert page.errors == []


def test_search_without_the_route_says_so(page: Any) -> None:
    page.route("**/search?*", lambda route: route.fulfill(status=404, json={"detail": "Not Found"}))
    page.fill("#search", "anything")
    page.press("#search", "Enter")
    page.wait_for_selector("#notice:not([hidden])")
    assert "no /search route" in page.locator("#notice").inner_text()


def test_a_session_never_restored_says_so_without_an_error(page: Any, site: Site) -> None:
    page.locator(f"#session-list a.row[data-session='{OTHER}']").click()
    page.wait_for_selector("body[data-loaded='1']")
    assert page.locator("#restoration").inner_text() == (
        f"No restoration yet: opencode-restore restore {OTHER}"
    )
    # Its compaction is a separator in the thread, not a message.
    assert page.locator("#messages > .compaction").count() >= 1
    assert page.errors == []


def test_dark_and_light(page: Any) -> None:
    background = "getComputedStyle(document.body).backgroundColor"
    first = page.evaluate(background)
    page.click("#theme")
    assert page.evaluate(background) != first
    page.reload()
    page.wait_for_selector("#session-list a.row")
    assert page.evaluate(background) != first  # the choice is remembered


def test_signed_out_browser_is_asked_for_the_token(site: Site) -> None:
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            pg = browser.new_page()
            pg.set_default_timeout(RUNAWAY_MS)
            pg.goto(f"{site.url}/")
            pg.wait_for_selector("#signin:not([hidden])")
            pg.fill("#token", "wrong")
            pg.click("#signin button")
            pg.wait_for_selector("#notice.error:has-text('wrong token')")
            pg.fill("#token", TOKEN)
            pg.click("#signin button")
            pg.wait_for_selector("#session-list a.row")
            assert pg.url == f"{site.url}/"
            assert pg.locator("#signin").is_hidden()
        finally:
            browser.close()
