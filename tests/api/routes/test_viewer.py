"""The web viewer's page and files at ``/``: what is served, under which headers, and how
a browser signs in when reads need the token."""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib import resources

import pytest
from fastapi.testclient import TestClient

from opencode_restore.api import create_app
from opencode_restore.api.routes import viewer
from opencode_restore.api.security import VIEWER_COOKIE
from opencode_restore.config import load_config
from opencode_restore.report.html import markdown_script, render_html
from opencode_restore.store.store import Store
from tests.store.builders import CLAUDE_CONTINUE

TOKEN = "t" * 32
FILES = resources.files("opencode_restore.api") / "viewer"


@pytest.fixture
def guarded(store: Store) -> Iterator[TestClient]:
    """Reads need the token, as with ``serve --token``; the client sends none."""
    store.register("S", "claude-code", str(CLAUDE_CONTINUE))
    app = create_app(store, token=TOKEN, config=load_config(), reads_need_token=True)
    with TestClient(app, base_url="http://127.0.0.1", follow_redirects=False) as c:
        yield c


def test_page_and_files_carry_the_csp(guarded: TestClient) -> None:
    page = guarded.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert page.headers["content-security-policy"] == viewer.CSP
    assert "script-src 'self';" in viewer.CSP
    assert "unsafe-inline" not in viewer.CSP
    assert page.headers["x-content-type-options"] == "nosniff"
    for name, media in [("app.js", "text/javascript"), ("viewer.css", "text/css")]:
        r = guarded.get(f"/viewer/{name}")
        assert r.status_code == 200
        assert r.headers["content-type"].startswith(media)
        assert r.headers["content-security-policy"] == viewer.CSP
    assert guarded.get("/viewer/index.html").status_code == 404
    assert guarded.get("/viewer/..%2Fapp.py").status_code == 404


def test_every_file_the_page_loads_is_served() -> None:
    """The page's files and their imports are all in the served list, and nothing else
    is shipped: a file left out would be a blank page only a browser shows."""
    html = (FILES / "index.html").read_text(encoding="utf-8")
    wanted: set[str] = set()
    todo = re.findall(r'(?:src|href)="/viewer/([^"]+)"', html)
    while todo:
        name = todo.pop()
        if name not in wanted:
            wanted.add(name)
            if name.endswith(".js"):
                todo += re.findall(r'from "\./([^"]+)"', viewer._file(name).decode())
    # The markdown renderer is the HTML report's (see the next test).
    shipped = {f.name for f in FILES.iterdir() if f.name != "index.html"} | {"markdown.js"}
    assert wanted == set(viewer._ASSETS) == shipped


def test_the_viewer_serves_the_reports_markdown_renderer(guarded: TestClient) -> None:
    """One renderer for a restoration's markdown: the report inlines the file the viewer
    imports as a module, and no script of the viewer holds a copy."""
    source = markdown_script()
    assert "function renderMarkdown(" in source
    served = guarded.get("/viewer/markdown.js")
    assert served.headers["content-type"].startswith("text/javascript")
    assert served.text == source + "\nexport { renderMarkdown };\n"
    assert source in render_html({"title": "t"})
    assert not (FILES / "markdown.js").is_file()
    for f in FILES.iterdir():
        if f.name.endswith(".js"):
            assert "function renderMarkdown" not in f.read_text(encoding="utf-8"), f.name


def test_log_text_is_never_parsed_as_html() -> None:
    """The log is untrusted: the scripts build the DOM from text only."""
    for name in viewer._ASSETS:
        if name.endswith(".js"):
            source = viewer._file(name).decode()
            for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
                assert sink not in source, (name, sink)


def test_sign_in_gives_a_cookie_that_stands_for_the_token_on_reads_only(
    guarded: TestClient,
) -> None:
    assert guarded.get("/sessions").status_code == 401
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    wrong = guarded.post("/viewer/sign-in", json={}, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    assert VIEWER_COOKIE not in wrong.cookies
    # A cross-site form cannot sign a browser in: no bearer token, no JSON.
    assert guarded.post("/viewer/sign-in", data={"token": TOKEN}).status_code == 401
    assert guarded.post("/viewer/sign-in", content=b"{}", headers=bearer).status_code == 415
    signed = guarded.post("/viewer/sign-in", json={}, headers=bearer)
    assert signed.status_code == 204
    set_cookie = signed.headers["set-cookie"]
    assert "HttpOnly" in set_cookie
    assert "SameSite=strict" in set_cookie
    cookie = signed.cookies[VIEWER_COOKIE]
    assert TOKEN not in cookie  # a copied cookie is not the token
    guarded.cookies.clear()
    guarded.cookies.set(VIEWER_COOKIE, cookie)
    assert guarded.get("/sessions").json()["total"] == 1
    assert guarded.get("/sessions/S/messages", params={"limit": 1}).status_code == 200
    # A POST still needs the bearer token itself: the cookie never starts a restore.
    assert guarded.post("/sessions/S/restore", json={}).status_code == 401
    assert guarded.post("/viewer/sign-in", json={}).status_code == 401
    guarded.cookies.clear()
    guarded.cookies.set(VIEWER_COOKIE, cookie[:-1] + ("0" if cookie[-1] != "0" else "1"))
    assert guarded.get("/sessions").status_code == 401
