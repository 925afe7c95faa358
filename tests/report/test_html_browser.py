"""The HTML report in real headless Chromium (Debian's ``chromium``), driven by Playwright.

Skipped when ``/usr/bin/chromium`` or the ``playwright`` package is missing. Playwright
never downloads a browser here: it launches the system Chromium by path, with the
flags this machine needs (no background networking, no sandbox as root). Screenshots
land in ``test-artifacts/`` (git-ignored).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from opencode_restore.config import load_config
from opencode_restore.diagnostics import WarningSink
from opencode_restore.llm.offline import OfflineProvider
from opencode_restore.model import Message
from opencode_restore.pipeline.run import RestoreOptions, restore_session
from opencode_restore.report.html import session_html
from opencode_restore.sources import open_session
from tests.waits import RUNAWAY_MS

from ..pipeline.helpers import make_session

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TREE_V3 = Path("pi") / "own" / "tree-v3.jsonl"

if not CHROMIUM.exists():
    pytest.skip("no /usr/bin/chromium (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")


@pytest.fixture(scope="module")
def browser(restored_html: str) -> Iterator[Any]:
    # restored_html first: the restore runs its own event loop, Playwright's sync API too.
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        yield b
        b.close()


def _open(browser: Any, html: str, tmp_path: Path, width: int = 1280, height: int = 900) -> Any:
    path = tmp_path / "report.html"
    path.write_text(html, encoding="utf-8")
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(RUNAWAY_MS)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=RUNAWAY_MS)
    page.errors = errors
    return page


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=False)


@pytest.fixture(scope="module")
def restored_html(fixtures_dir: Path) -> str:
    session = open_session([fixtures_dir / TREE_V3], WarningSink())
    opts = RestoreOptions(skip_evidence_search=True)
    r = anyio.run(
        lambda: restore_session(session, load_config(env={}), OfflineProvider(), options=opts)
    )
    return session_html(session, r)


@pytest.fixture(scope="module")
def fixtures_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "fixtures"


def _entries(page: Any) -> list[str]:
    nodes: list[str] = page.eval_on_selector_all(
        "#messages > .entry", "els => els.map(e => e.dataset.node)"
    )
    return nodes


def test_citation_scrolls_to_and_highlights_the_message(
    browser: Any, restored_html: str, tmp_path: Path
) -> None:
    page = _open(browser, restored_html, tmp_path)
    assert page.is_visible("#summary")
    assert page.text_content("#summary h1").startswith("SESSION SUMMARY")
    cites = page.locator("#summary a.cite")
    assert cites.count() >= 3
    link = cites.first
    mid = link.get_attribute("data-mid")
    label = link.text_content()
    link.click()
    target = page.locator(f'.msg[data-mid="{mid}"]')
    assert "hl" in (target.get_attribute("class") or "")
    box = target.bounding_box()
    assert box is not None
    assert 0 <= box["y"] < 900  # scrolled into view
    assert page.locator(".msg.hl").count() == 1
    # a second citation moves the highlight
    other = page.locator("#summary a.cite").nth(2)
    other_mid = other.get_attribute("data-mid")
    other.click()
    assert page.locator(".msg.hl").get_attribute("data-mid") == other_mid
    assert label
    assert label.startswith("M")
    _shot(page, "html-report-citation.png")
    assert page.errors == []


def test_tree_sidebar_picks_a_branch_and_resets_to_the_leaf(
    browser: Any, restored_html: str, tmp_path: Path
) -> None:
    page = _open(browser, restored_html, tmp_path)
    assert (
        page.text_content("#tree-head") == "22 entries · 2 branch points · 1 compactions · 1 labels"
    )
    assert _entries(page)[-1] == "c300000f"
    assert "approach-a" in (page.text_content('#tree li[data-node="b2000001"]') or "")
    page.click('#tree li[data-node="b2000003"]')
    assert _entries(page) == [
        "a1000001",
        "a1000002",
        "a1000003",
        "a1000004",
        "b2000001",
        "b2000003",
    ]
    assert (page.text_content("#path-info") or "").startswith("Path to b2000003")
    on_path = page.eval_on_selector_all("#tree li.on-path", "els => els.map(e => e.dataset.node)")
    assert "b2000003" in on_path
    assert "c300000f" not in on_path
    # selecting a mid-branch node shows the path to exactly that node
    page.click('#tree li[data-node="b2000001"]')
    assert _entries(page)[-1] == "b2000001"
    page.click("#reset-leaf")
    assert _entries(page)[-1] == "c300000f"
    assert (page.text_content("#path-info") or "").startswith("Active branch")
    # compaction is a separator, tool calls are folded until opened
    assert "context compacted · 5000 tokens before" in (page.text_content(".compaction") or "")
    tool = page.locator('.msg[data-mid="a1000002.2"] details')
    assert tool.get_attribute("open") is None
    tool.locator("summary").click()
    assert tool.get_attribute("open") == ""
    # folding a branch hides its entries in the sidebar
    page.click('#tree li[data-node="b2000001"] .fold')
    assert page.is_hidden('#tree li[data-node="b2000003"]')
    # a jump to a message on an abandoned branch switches to that branch
    assert page.evaluate("window.__report.jump('b2000002')") is True
    assert _entries(page)[-1] == "b2000002"
    _shot(page, "html-report-branch.png")
    assert page.errors == []


def test_phone_width_collapses_the_sidebar(
    browser: Any, restored_html: str, tmp_path: Path
) -> None:
    page = _open(browser, restored_html, tmp_path, width=390, height=844)
    assert page.is_hidden("#sidebar")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.click("#toggle-tree")
    assert page.is_visible("#sidebar")
    sidebar = page.locator("#sidebar").bounding_box()
    assert sidebar is not None
    assert sidebar["width"] < 390
    page.click('#tree li[data-node="b2000003"]')
    assert page.is_hidden("#sidebar")  # picking a node gets the tree out of the way
    assert _entries(page)[-1] == "b2000003"
    _shot(page, "html-report-phone.png")
    assert page.errors == []


EVIL = (
    "</script><script>window.__pwned = 1</script>"
    '<img src=x onerror="window.__pwned = 2"><b>bold?</b> <!-- & -->'
)


def test_log_html_renders_as_text(browser: Any, tmp_path: Path) -> None:
    msgs = [
        Message("u1", "user", "text", EVIL),
        Message("a1", "assistant", "tool_use", EVIL, tool_name="<script>x</script>"),
    ]
    page = _open(browser, session_html(make_session(msgs, title=EVIL)), tmp_path)
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#messages img, #messages script, #messages b").count() == 0
    assert page.text_content('.msg[data-mid="u1"] .body') == EVIL
    assert page.title() == EVIL
    assert page.text_content("#title") == EVIL
    assert page.errors == []


def _big_pi_session(path: Path, pairs: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        fh.write(
            json.dumps(
                {
                    "type": "session",
                    "version": 3,
                    "id": "big",
                    "timestamp": "2026-01-05T10:00:00.000Z",
                    "cwd": "/w",
                }
            )
            + "\n"
        )
        parent = None
        for i in range(pairs * 2):
            role = "user" if i % 2 == 0 else "assistant"
            content: Any = (
                f"request {i // 2}"
                if role == "user"
                else [{"type": "text", "text": f"reply {i // 2} " + "lorem ipsum " * 20}]
            )
            entry_id = f"{i:08x}"
            fh.write(
                json.dumps(
                    {
                        "type": "message",
                        "id": entry_id,
                        "parentId": parent,
                        "timestamp": "2026-01-05T10:00:01.000Z",
                        "message": {"role": role, "content": content},
                    }
                )
                + "\n"
            )
            parent = entry_id


@pytest.mark.slow
def test_twenty_thousand_messages_open_as_a_window(browser: Any, tmp_path: Path) -> None:
    log = tmp_path / "big.jsonl"
    _big_pi_session(log, 10_000)
    session = open_session([log], WarningSink())
    assert len(session.messages()) == 20_000
    html = session_html(session)
    page = _open(browser, html, tmp_path)
    assert len(_entries(page)) == 150  # a window, not 20,000 entries
    assert page.locator("#tree li").count() == 400  # the sidebar renders in pages
    assert page.is_visible("#show-earlier")
    # a jump far back renders the window around it
    assert page.evaluate("window.__report.jump('00000010')") is True
    assert "00000010" in _entries(page)
    page.click("#tree-more")
    assert page.locator("#tree li").count() == 800
    assert page.errors == []
