"""The API on a real uvicorn server bound to 127.0.0.1, read with a real HTTP client."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn

from opencode_restore.api import create_app
from opencode_restore.config import load_config
from opencode_restore.store.store import Store
from tests.store.builders import CLAUDE_COMPACT, CLAUDE_SPOTTER
from tests.waits import RUNAWAY_S

SID = "e57fea98-e10e-4cce-a470-5de2e7413154"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def server(store: Store) -> Iterator[str]:
    store.register(SID, "claude-code", str(CLAUDE_COMPACT))
    store.register("big", "claude-code", str(CLAUDE_SPOTTER))
    app = create_app(store, token="t0k", config=load_config())
    port = _free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + RUNAWAY_S
    while not srv.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(timeout=30)


def test_real_server_end_to_end(server: str) -> None:
    auth = {"Authorization": "Bearer t0k"}
    with httpx.Client(base_url=server, timeout=30) as c:
        assert c.get("/healthz", headers=auth).json()["status"] == "ok"
        assert c.get("/sessions").status_code == 401
        listing = c.get("/sessions", headers=auth).json()
        assert {s["id"] for s in listing["sessions"]} == {SID, "big"}
        assert c.get(f"/sessions/{SID}", headers=auth).json()["file_count"] == 1
        r = c.get(f"/sessions/{SID}/messages", headers=auth, params={"include_tools": True})
        assert r.status_code == 200
        assert r.headers["transfer-encoding"] == "chunked"
        msgs = r.json()["messages"]
        assert any(m["type"] == "compaction" and m["role"] == "system" for m in msgs)
        assert any(m["type"] == "tool_use" for m in msgs)
        assert c.get("/sessions/zzz/messages", headers=auth).status_code == 404
        bad = c.get(f"/sessions/{SID}/messages", headers=auth, params={"since": "noon"})
        assert bad.status_code == 422
        assert bad.json()["detail"][0]["loc"] == ["query", "since"]
        assert c.get("/openapi.json", headers=auth).json()["info"]["title"] == "opencode-restore"


def test_real_server_streams_a_large_session(server: str) -> None:
    auth = {"Authorization": "Bearer t0k"}
    with httpx.Client(base_url=server, timeout=60) as c:
        chunks = 0
        body = b""
        with c.stream(
            "GET", "/sessions/big/messages", headers=auth, params={"include_tools": True}
        ) as r:
            for chunk in r.iter_raw():
                chunks += 1
                body += chunk
        assert chunks > 1
        msgs = json.loads(body)["messages"]
        assert len(msgs) > 400
        since = msgs[-11]["timestamp"]
        r = c.get(
            "/sessions/big/messages", headers=auth, params={"since": since, "include_tools": True}
        )
        assert r.headers["x-fetch-mode"] == "tail"
        assert r.json()["messages"] == [
            m for m in msgs if m["timestamp"] and m["timestamp"] > since
        ]
