"""``/docs`` works offline: the page references only this server, which serves the files."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from opencode_restore.api import create_app
from opencode_restore.config import load_config
from opencode_restore.store.store import Store

pytest.importorskip("fastapi_offline", reason="the api extra: pip install -e '.[dev]'")

TOKEN = "t" * 32


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    app = create_app(store, token=TOKEN, config=load_config(), reads_need_token=False)
    with TestClient(app, base_url="http://127.0.0.1") as c:
        yield c


def test_docs_page_references_no_external_url(client: TestClient) -> None:
    page = client.get("/docs")
    assert page.status_code == 200
    assert "SwaggerUIBundle" in page.text
    assert not re.search(r"https?:|//[a-z]", page.text, re.IGNORECASE), page.text
    assert '"validatorUrl": null' in page.text  # no badge fetched from validator.swagger.io


def test_every_file_the_docs_page_references_is_served(client: TestClient) -> None:
    page = client.get("/docs").text
    refs = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert len(refs) == 3, refs
    types: dict[str, str] = {}
    for ref in refs:
        r = client.get(ref)
        assert r.status_code == 200, ref
        assert len(r.content) > 1000, ref
        types[ref.rsplit(".", 1)[1]] = r.headers["content-type"].split(";")[0]
    assert types == {"css": "text/css", "png": "image/png", "js": "text/javascript"}
    assert "SwaggerUIBundle" in client.get("/docs/assets/swagger-ui-bundle.js").text
    assert "url: '/openapi.json'" in page
    assert client.get("/openapi.json").json()["info"]["title"]


@pytest.mark.parametrize("name", ["index.html", "..%2F..%2Fcore.py", "redoc.standalone.js"])
def test_only_the_pages_files_are_served(client: TestClient, name: str) -> None:
    assert client.get(f"/docs/assets/{name}").status_code == 404


def test_docs_assets_are_behind_the_read_guard(store: Store) -> None:
    app = create_app(store, token=TOKEN, config=load_config(), reads_need_token=True)
    with TestClient(app, base_url="http://127.0.0.1") as c:
        assert c.get("/docs/assets/swagger-ui.css").status_code == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert c.get("/docs/assets/swagger-ui.css", headers=auth).status_code == 200
