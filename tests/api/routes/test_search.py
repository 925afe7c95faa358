"""``GET /search``: hits of every indexed session, bounded, redacted, behind the token."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from opencode_restore.api import create_app
from opencode_restore.api.routes import search as search_route
from opencode_restore.api.routes.search import MAX_HITS
from opencode_restore.config import load_config
from opencode_restore.search.index import index_path, update
from opencode_restore.search.query import MARK_END, MARK_START, Hit
from opencode_restore.store.store import Store
from tests.search.helpers import SINCE_FORMS, since_given
from tests.store.builders import CLAUDE_COMPACT, FIXTURES, copy_to

TOKEN = "t" * 32
SECRETS = FIXTURES / "hostile" / "secrets.jsonl"
KEY = "sk-proj-AbCdEf0123456789AbCdEf0123456789AbCdEf01"


@pytest.fixture
def indexed(store: Store, tmp_path: Path) -> Store:
    """One session (a real greet log whose first request holds an API key), indexed."""
    log = copy_to(SECRETS, tmp_path / "logs")
    store.register("qa-secrets-0001", "claude-code", str(log), cwd="/home/dev/greet")
    update(store, index_path(store.path.parent))
    return store


def _client(store: Store, *, reads_need_token: bool = False) -> TestClient:
    app = create_app(store, token=TOKEN, config=load_config(), reads_need_token=reads_need_token)
    return TestClient(app, base_url="http://127.0.0.1")


@pytest.fixture
def client(indexed: Store) -> Iterator[TestClient]:
    with _client(indexed) as c:
        yield c


def test_a_query_finds_the_session_with_its_label_and_highlights(client: TestClient) -> None:
    r = client.get("/search", params={"q": "shout"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["query"] == "shout"
    hit = body["hits"][0]
    assert hit["session_id"] == "qa-secrets-0001"
    assert hit["agent"] == "claude-code"
    assert hit["label"].startswith("M")
    start, end = hit["highlights"][0]
    assert hit["snippet"][start:end].lower() == "shout"
    assert MARK_START not in hit["snippet"]


def test_secrets_never_reach_a_snippet(client: TestClient) -> None:
    body = client.get("/search", params={"q": "key", "limit": 50}).json()
    assert body["hits"]
    assert KEY not in str(body)


def test_a_secret_the_index_kept_is_redacted_on_the_way_out(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index written before a redaction pattern existed may hold a secret."""

    def stale(*args: Any, **kwargs: Any) -> list[Hit]:
        snippet = f"my {MARK_START}key{MARK_END} is {KEY}"
        return [Hit("s", "codex", f"/home/{KEY}", None, "M1", "message", "user", snippet, -1.0)]

    monkeypatch.setattr(search_route, "search", stale)
    hit = client.get("/search", params={"q": "key"}).json()["hits"][0]
    assert KEY not in str(hit)
    assert hit["snippet"].startswith("my key is [REDACTED")
    assert hit["highlights"] == [[3, 6]]


def test_filters_reach_the_query(client: TestClient) -> None:
    assert client.get("/search", params={"q": "shout", "agent": "codex"}).json()["hits"] == []
    assert client.get("/search", params={"q": "shout", "cwd": "/elsewhere"}).json()["hits"] == []
    assert client.get("/search", params={"q": "shout", "since": "2999-01-01"}).json()["hits"] == []
    kinds = {
        h["kind"]
        for h in client.get("/search", params={"q": "shout", "kind": "command"}).json()["hits"]
    }
    assert kinds <= {"command"}


@pytest.mark.parametrize(("since", "means"), SINCE_FORMS)
def test_since_takes_every_form_the_cli_does(
    client: TestClient,
    monkeypatch: pytest.MonkeyPatch,
    since: str,
    means: timedelta | datetime,
) -> None:
    with since_given(monkeypatch, search_route, means):
        r = client.get("/search", params={"q": "shout", "since": since})
    assert r.status_code == 200, r.text


def test_bad_queries_are_400_and_bad_bounds_422(client: TestClient) -> None:
    r = client.get("/search", params={"q": "shout", "kind": "nonsense"})
    assert r.status_code == 400
    assert "nonsense" in r.json()["detail"]
    assert client.get("/search", params={"q": "x", "limit": 10_000}).status_code == 422
    assert client.get("/search", params={"q": ""}).status_code == 422
    assert client.get("/search", params={"q": "x" * 5000}).status_code == 422
    assert client.get("/search", params={"q": "x", "since": "yesterdayish"}).status_code == 422


def test_reads_behind_the_token_need_it(indexed: Store) -> None:
    with _client(indexed, reads_need_token=True) as c:
        assert c.get("/search", params={"q": "shout"}).status_code == 401
        ok = c.get("/search", params={"q": "shout"}, headers={"Authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 200


def test_no_index_yet_is_no_hits(store: Store) -> None:
    with _client(store) as c:
        r = c.get("/search", params={"q": "anything"})
    assert r.status_code == 200
    assert r.json() == {"query": "anything", "hits": []}


def test_the_route_is_in_the_openapi(client: TestClient) -> None:
    assert "/search" in client.get("/openapi.json").json()["paths"]


def test_a_session_registered_after_the_index_was_built_is_found(
    indexed: Store, client: TestClient, tmp_path: Path
) -> None:
    log = copy_to(CLAUDE_COMPACT, tmp_path / "more")
    indexed.register("later-0002", "claude-code", str(log), cwd="/home/dev/src/greet-cli")
    body = client.get("/search", params={"q": "greet", "limit": MAX_HITS}).json()
    assert "later-0002" in {h["session_id"] for h in body["hits"]}


def test_a_busy_index_is_searched_as_it_is(
    indexed: Store, client: TestClient, tmp_path: Path
) -> None:
    log = copy_to(CLAUDE_COMPACT, tmp_path / "more")
    indexed.register("later-0002", "claude-code", str(log), cwd="/home/dev/src/greet-cli")
    writer = sqlite3.connect(index_path(indexed.path.parent), isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # a build in another process holds the index
    try:
        r = client.get("/search", params={"q": "greet", "limit": MAX_HITS})
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert r.status_code == 200
    assert {h["session_id"] for h in r.json()["hits"]} == {"qa-secrets-0001"}
