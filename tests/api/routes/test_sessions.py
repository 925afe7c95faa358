"""``GET /sessions/{id}`` says when the session was last restored (``restored_at``)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from opencode_restore.api import create_app
from opencode_restore.config import load_config
from opencode_restore.store.store import Store
from tests.store.builders import CLAUDE_CONTINUE


def test_restored_at_tells_whether_a_restoration_exists(store: Store) -> None:
    store.register("S", "claude-code", str(CLAUDE_CONTINUE))
    app = create_app(store, token="t" * 32, config=load_config(), reads_need_token=False)
    with TestClient(app, base_url="http://127.0.0.1") as c:
        assert c.get("/sessions/S").json()["restored_at"] is None
        store.add_restoration(
            "S",
            provider="offline:rules",
            summary_markdown="# x",
            summary={},
            usage=None,
            errors=None,
        )
        restored = store.latest_restoration("S")
        assert restored is not None
        assert c.get("/sessions/S").json()["restored_at"] == restored.created_at
        assert c.get("/sessions/S/summary").json()["created_at"] == restored.created_at
        # The list does not look it up (as it leaves out the files).
        assert c.get("/sessions").json()["sessions"][0]["restored_at"] is None
