"""The HTTP API through FastAPI's test client."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from opencode_restore.api import create_app
from opencode_restore.api.routes import messages as messages_routes
from opencode_restore.config import load_config
from opencode_restore.diagnostics import WarningSink
from opencode_restore.report.messages import message_record
from opencode_restore.since import EXPECTED
from opencode_restore.sources import iter_messages
from opencode_restore.store.store import Store
from tests.store.builders import (
    CLAUDE_COMPACT,
    CLAUDE_SPOTTER,
    CODEX_RESUME,
    GEMINI_CONTINUED,
    GEMINI_LEGACY,
    OPENCODE_DB,
    copy_to,
)
from tests.waits import RUNAWAY_S

SID = "e57fea98-e10e-4cce-a470-5de2e7413154"
TOKEN = "t" * 32


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    """Open reads (as on loopback); POSTs carry the token."""
    app = create_app(store, token=TOKEN, config=load_config(), reads_need_token=False)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with TestClient(app, base_url="http://127.0.0.1", headers=auth) as c:
        yield c


def _messages(client: TestClient, sid: str, **params: Any) -> dict[str, Any]:
    r = client.get(f"/sessions/{sid}/messages", params=params)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/json"
    body: dict[str, Any] = json.loads(r.content)
    return body


def test_healthz_and_openapi(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok", "version": "0.1.0"}
    spec = client.get("/openapi.json").json()
    paths = set(spec["paths"])
    assert {
        "/healthz",
        "/sessions",
        "/sessions/{session_id}",
        "/sessions/{session_id}/messages",
        "/sessions/{session_id}/summary",
        "/sessions/{session_id}/restore",
        "/jobs/{job_id}",
    } <= paths
    ok = spec["paths"]["/sessions/{session_id}/messages"]["get"]["responses"]["200"]
    assert ok["content"]["application/json"]["schema"]["$ref"].endswith("/MessagesOut")
    assert client.get("/docs").status_code == 200


def test_list_sessions_filters_and_pages(client: TestClient, store: Store) -> None:
    for k, agent in enumerate(["claude-code", "codex", "gemini", "codex"]):
        store.register(f"s{k}", agent, f"/x/{k}", updated_at=f"2026-01-0{k + 1}T00:00:00.000000Z")
    body = client.get("/sessions").json()
    assert body["total"] == 4
    assert [s["id"] for s in body["sessions"]] == ["s3", "s2", "s1", "s0"]
    assert body["sessions"][0]["file_count"] == 1
    assert body["sessions"][0]["files"] is None
    body = client.get("/sessions", params={"agent": "codex"}).json()
    assert [s["id"] for s in body["sessions"]] == ["s3", "s1"]
    body = client.get("/sessions", params={"limit": 1, "offset": 1}).json()
    assert (body["total"], body["limit"], body["offset"]) == (4, 1, 1)
    assert [s["id"] for s in body["sessions"]] == ["s2"]
    body = client.get(
        "/sessions", params={"since": "2026-01-01T12:00:00Z", "until": "2026-01-03T00:00:00Z"}
    ).json()
    assert [s["id"] for s in body["sessions"]] == ["s2", "s1"]
    r = client.get("/sessions", params={"until": "last week"})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["query", "until"]
    assert client.get("/sessions", params={"limit": 0}).status_code == 422


def test_get_session_with_chain(client: TestClient, store: Store) -> None:
    store.register(SID, "claude-code", "/old.jsonl", cwd="/w")
    store.register(SID, "claude-code", "/new.jsonl")
    body = client.get(f"/sessions/{SID}").json()
    assert body["native_log_file"] == "/new.jsonl"
    assert [(f["index"], f["path"]) for f in body["files"]] == [
        (0, "/old.jsonl"),
        (1, "/new.jsonl"),
    ]
    assert body["file_count"] == 2
    r = client.get("/sessions/nope")
    assert r.status_code == 404
    assert "nope" in r.json()["detail"]


def test_every_session_route_takes_a_unique_id_prefix(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    store.register(SID, "claude-code", str(copy_to(CLAUDE_COMPACT, tmp_path)))
    store.register("e5-other", "codex", str(CODEX_RESUME))
    assert client.get("/sessions/e57f").json()["id"] == SID
    assert _messages(client, "e57fea98")["session_id"] == SID
    r = client.get("/sessions/e57/summary")
    assert r.status_code == 404
    assert r.json()["detail"] == f"session {SID!r} has no restoration yet"
    job = _wait(client, client.post("/sessions/e57f/restore", json={}).json()["id"])
    assert (job["status"], job["session_id"]) == ("done", SID)
    assert client.get("/sessions/e57f/summary").json()["session_id"] == SID
    r = client.get("/sessions/e6")
    assert r.status_code == 404
    assert r.json()["detail"] == "unknown session 'e6': no stored session id starts with it"


def test_an_ambiguous_prefix_is_a_409_listing_the_candidates(
    client: TestClient, store: Store
) -> None:
    store.register(SID, "claude-code", str(CLAUDE_COMPACT))
    store.register("e5-other", "codex", str(CODEX_RESUME))
    for method, path in (
        ("GET", "/sessions/e5"),
        ("GET", "/sessions/e5/messages"),
        ("GET", "/sessions/e5/summary"),
        ("POST", "/sessions/e5/restore"),
    ):
        r = client.request(method, path, json={} if method == "POST" else None)
        assert r.status_code == 409, (path, r.text)
        detail = r.json()["detail"]
        assert detail.startswith("session id prefix 'e5' matches 2 sessions; give more of the id:")
        assert f"{SID} (claude-code)" in detail
        assert "e5-other (codex)" in detail
    # An id that is whole wins over the longer ids it is a prefix of.
    store.register("e5", "gemini", str(GEMINI_LEGACY))
    assert client.get("/sessions/e5").json()["id"] == "e5"


def test_messages_limit_and_offset(client: TestClient, store: Store) -> None:
    store.register(SID, "claude-code", str(CLAUDE_COMPACT))
    every = _messages(client, SID)["messages"]
    assert len(every) > 5
    assert _messages(client, SID, limit=3)["messages"] == every[:3]
    assert _messages(client, SID, offset=2, limit=3)["messages"] == every[2:5]
    assert _messages(client, SID, offset=len(every) - 1)["messages"] == every[-1:]
    assert _messages(client, SID, offset=len(every))["messages"] == []
    # Past every filter: the page of the messages since a time is taken from those.
    since = every[3]["timestamp"]
    later = _messages(client, SID, since=since)["messages"]
    assert _messages(client, SID, since=since, limit=1)["messages"] == later[:1]
    assert client.get(f"/sessions/{SID}/messages", params={"limit": 0}).status_code == 422


def test_messages_of_a_claude_session(client: TestClient, store: Store) -> None:
    store.register(SID, "claude-code", str(CLAUDE_COMPACT))
    body = _messages(client, SID)
    assert (body["session_id"], body["agent"]) == (SID, "claude-code")
    msgs = body["messages"]
    human = [m["text"] for m in msgs if m["role"] == "user" and m["type"] == "text"]
    assert "Also mention the new flag in the README." in human
    assert all(m["type"] not in ("tool_use", "tool_result", "thinking") for m in msgs)
    assert all(m["file_index"] == 0 and m["entry_index"] >= 1 for m in msgs)
    compaction = [m for m in msgs if m["type"] == "compaction"]
    assert compaction == [
        {
            "id": compaction[0]["id"],
            "role": "system",
            "type": "compaction",
            "text": "Context compacted",
            "timestamp": "2026-11-21T11:41:03.011Z",
            "entry_index": compaction[0]["entry_index"],
            "file_index": 0,
        }
    ]
    full = _messages(client, SID, include_tools="true", include_thinking="true")["messages"]
    kinds = {m["type"] for m in full}
    assert {"tool_use", "tool_result", "thinking"} <= kinds
    tool = next(m for m in full if m["type"] == "tool_use")
    assert tool["tool_name"] == "Read"
    assert tool["tool_input"] == {"file_path": "/home/dev/src/greet-cli/greet.py"}
    # Exactly what the reader gives for the same file.
    direct = [message_record(m) for m in iter_messages([CLAUDE_COMPACT], WarningSink())]
    assert full == direct


def test_messages_since(client: TestClient, store: Store) -> None:
    store.register(SID, "claude-code", str(CLAUDE_COMPACT))
    msgs = _messages(client, SID, since="2026-11-21T11:41:03Z")["messages"]
    assert msgs
    assert all(m["timestamp"] > "2026-11-21T11:41:03" for m in msgs)
    assert msgs[-1]["text"].startswith("Summary of the work")
    assert _messages(client, SID, since="2030-01-01T00:00:00Z")["messages"] == []
    naive = _messages(client, SID, since="2026-11-21T11:41:03")["messages"]  # read as UTC
    assert naive == msgs
    r = client.get(f"/sessions/{SID}/messages", params={"since": "yesterday"})
    assert r.status_code == 422
    assert r.json()["detail"] == [
        {
            "loc": ["query", "since"],
            "msg": f"'yesterday': expected {EXPECTED}",
            "type": "value_error",
        }
    ]
    assert client.get("/sessions/nope/messages").status_code == 404


def test_time_parameters_take_a_span_back_from_now_as_since_does(
    client: TestClient, store: Store
) -> None:
    now = datetime.now(UTC)
    for sid, age in (("recent", timedelta(hours=2)), ("old", timedelta(days=3))):
        store.register(sid, "codex", f"/x/{sid}", updated_at=(now - age).isoformat())
    ids = [s["id"] for s in client.get("/sessions", params={"since": "24h"}).json()["sessions"]]
    assert ids == ["recent"]
    ids = [s["id"] for s in client.get("/sessions", params={"until": "1d"}).json()["sessions"]]
    assert ids == ["old"]
    store.register(SID, "claude-code", str(CLAUDE_COMPACT))
    every = _messages(client, SID)["messages"]
    assert _messages(client, SID, since="36500d")["messages"] == every  # a century back
    assert _messages(client, SID, since="1s")["messages"] == []
    for path, name in (
        ("/sessions", "since"),
        ("/sessions", "until"),
        (f"/sessions/{SID}/messages", "since"),
    ):
        r = client.get(path, params={name: "24"})
        assert r.status_code == 422
        assert r.json()["detail"] == [
            {"loc": ["query", name], "msg": f"'24': expected {EXPECTED}", "type": "value_error"}
        ]
    r = client.get("/sessions", params={"since": "0h"})
    assert r.json()["detail"][0]["msg"] == "'0h': a span must be positive (e.g. 24h)"


def test_since_fetch_reads_the_tail(client: TestClient, store: Store) -> None:
    store.register("big", "claude-code", str(CLAUDE_SPOTTER))
    everything = _messages(client, "big")["messages"]
    since = everything[-11]["timestamp"]
    r = client.get("/sessions/big/messages", params={"since": since})
    assert r.headers["x-fetch-mode"] == "tail"
    got = json.loads(r.content)["messages"]
    assert got == [m for m in everything if m["timestamp"] and m["timestamp"] > since]


def test_missing_chain_files_are_skipped(client: TestClient, store: Store, tmp_path: Path) -> None:
    store.register(SID, "claude-code", str(tmp_path / "gone.jsonl"))
    assert client.get(f"/sessions/{SID}/messages").status_code == 410
    store.register(SID, "claude-code", str(CLAUDE_COMPACT))
    r = client.get(f"/sessions/{SID}/messages")
    assert r.headers["x-missing-files"] == "1"
    msgs = json.loads(r.content)["messages"]
    assert msgs
    assert {m["file_index"] for m in msgs} == {1}  # the file keeps its place in the chain


def test_only_registered_files_are_read(client: TestClient, store: Store) -> None:
    """No endpoint takes a path: an id that looks like one is just an unknown session."""
    store.register(SID, "claude-code", str(CLAUDE_COMPACT))
    for sid in (
        "..%2F..%2Fetc%2Fpasswd",
        "%2Fetc%2Fpasswd",
        str(CLAUDE_COMPACT).replace("/", "%2F"),
    ):
        assert client.get(f"/sessions/{sid}/messages").status_code == 404
    assert client.get("/sessions/x/messages", params={"path": "/etc/passwd"}).status_code == 404


def test_codex_gemini_and_opencode_sessions(client: TestClient, store: Store) -> None:
    store.register("cx", "codex", str(CODEX_RESUME))
    codex = _messages(client, "cx")["messages"]
    prompts = [m["text"] for m in codex if m["role"] == "user"]
    assert "Also mention the new flag in the README." in prompts
    assert prompts.index("Also mention the new flag in the README.") > prompts.index(
        "Add a --shout flag to the greet CLI that upper-cases the greeting, and add a test for it."
    )
    store.register("gem-resume", "gemini", str(GEMINI_LEGACY))
    store.register("gem-resume", "gemini", str(GEMINI_CONTINUED))
    gem = _messages(client, "gem-resume")["messages"]
    assert [(m["text"], m["file_index"]) for m in gem][-1] == ("Next: tests.", 1)
    store.register("ses_e021ac976ffeprCgfn115CWSLu", "opencode", str(OPENCODE_DB))
    oc = _messages(client, "ses_e021ac976ffeprCgfn115CWSLu", since="2000-01-01T00:00:00Z")
    assert oc["agent"] == "opencode"
    assert any(m["type"] == "compaction" for m in oc["messages"])


def test_unknown_agent_name_falls_back_to_detection(client: TestClient, store: Store) -> None:
    store.register("odd", "claude", str(CLAUDE_COMPACT))
    assert _messages(client, "odd")["messages"]


def test_body_is_streamed_in_chunks(
    client: TestClient, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(messages_routes, "CHUNK_BYTES", 256)
    store.register(SID, "claude-code", str(CLAUDE_COMPACT))
    sizes = []
    with client.stream("GET", f"/sessions/{SID}/messages") as r:
        for chunk in r.iter_raw():
            sizes.append(len(chunk))
    assert len(sizes) > 5
    assert r.headers.get("content-length") is None  # chunked, not built whole


def test_summary_and_background_restore(client: TestClient, store: Store, tmp_path: Path) -> None:
    path = copy_to(CLAUDE_COMPACT, tmp_path)
    store.register(SID, "claude-code", str(path))
    r = client.get(f"/sessions/{SID}/summary")
    assert r.status_code == 404
    assert "no restoration" in r.json()["detail"]
    assert client.get("/sessions/nope/summary").status_code == 404
    assert client.post("/sessions/nope/restore", json={}).status_code == 404
    r = client.post(f"/sessions/{SID}/restore", json={"max_turns": 2})
    assert r.status_code == 202
    job = r.json()
    assert job["status"] in ("queued", "running", "done")
    job = _wait(client, job["id"])
    assert job["status"] == "done", job
    assert job["restoration_id"] is not None
    summary = client.get(f"/sessions/{SID}/summary").json()
    assert summary["id"] == job["restoration_id"]
    assert summary["provider"].startswith("offline")
    assert summary["markdown"].startswith("#")
    assert summary["summary"]["session"]["id"] == SID
    assert summary["summary"]["turn_count"] == 2
    assert summary["usage"]["calls"] >= 0
    assert summary["errors"] == {"failed_turns": [], "warnings": []}
    assert client.get("/jobs/nope").status_code == 404


def test_failed_restore_is_reported(client: TestClient, store: Store, tmp_path: Path) -> None:
    store.register("gone", "claude-code", str(tmp_path / "missing.jsonl"))
    job = _wait(client, client.post("/sessions/gone/restore", json={}).json()["id"])
    assert job["status"] == "failed"
    assert "no transcript file" in job["error"]


def _wait(client: TestClient, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + RUNAWAY_S
    while True:
        job: dict[str, Any] = client.get(f"/jobs/{job_id}").json()
        if job["status"] in ("done", "failed") or time.monotonic() > deadline:
            return job
        time.sleep(0.05)


def test_bearer_token(store: Store) -> None:
    store.register(SID, "claude-code", str(CLAUDE_COMPACT))
    with TestClient(create_app(store, token="s3cret"), base_url="http://localhost:8765") as c:
        assert c.get("/healthz").status_code == 401
        r = c.get("/sessions")
        assert r.status_code == 401
        assert r.headers["www-authenticate"] == "Bearer"
        assert c.get("/sessions", headers={"Authorization": "Bearer nope"}).status_code == 401
        ok = {"Authorization": "Bearer s3cret"}
        assert c.get("/sessions", headers=ok).json()["total"] == 1
        assert c.get(f"/sessions/{SID}/messages", headers=ok).status_code == 200
        assert c.get(f"/sessions/{SID}/messages").status_code == 401
        assert c.get("/jobs/x").status_code == 401
