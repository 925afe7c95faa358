"""``/docs`` in real headless Chromium with every request off this server refused.

Skipped without ``/usr/bin/chromium`` or ``playwright`` (as the HTML report's browser
tests); the launch flags are theirs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.api.test_server import server  # noqa: F401  (the real uvicorn server fixture)
from tests.report.test_html_browser import ARGS, CHROMIUM
from tests.waits import RUNAWAY_MS

if not CHROMIUM.exists():
    pytest.skip("no /usr/bin/chromium (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
pytest.importorskip("fastapi_offline", reason="the api extra: pip install -e '.[dev]'")


def test_swagger_ui_renders_with_no_request_leaving_the_server(
    server: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    outside: list[str] = []

    def only_local(route: Any) -> None:
        if route.request.url.startswith(server + "/"):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            context = browser.new_context(extra_http_headers={"Authorization": "Bearer t0k"})
            context.set_default_timeout(RUNAWAY_MS)
            context.route("**/*", only_local)
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"{server}/docs")
            page.wait_for_selector(".opblock-summary-path", timeout=RUNAWAY_MS)
            paths = page.locator(".opblock-summary-path").all_inner_texts()
        finally:
            browser.close()
    assert outside == []
    assert errors == []
    assert any(p.replace("\u200b", "") == "/sessions/{session_id}/messages" for p in paths), paths
