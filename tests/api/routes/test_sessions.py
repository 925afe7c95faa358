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


def test_the_list_filters_by_project_across_pages(store: Store) -> None:
    for n in range(3):
        store.register(f"G{n}", "claude-code", str(CLAUDE_CONTINUE), cwd=f"/home/dev/greet/sub{n}")
    store.register("O", "claude-code", str(CLAUDE_CONTINUE), cwd="/home/dev/greeting")
    store.register("P", "codex", str(CLAUDE_CONTINUE), cwd="/w/greet")
    app = create_app(store, token="t" * 32, config=load_config(), reads_need_token=False)
    with TestClient(app, base_url="http://127.0.0.1") as c:

        def ids(**params: str | int) -> tuple[set[str], int]:
            page = c.get("/sessions", params=params).json()
            return {s["id"] for s in page["sessions"]}, page["total"]

        # The directory, one under it, or one whose last part it is; never a prefix of a name.
        assert ids(cwd="/home/dev/greet") == ({"G0", "G1", "G2"}, 3)
        assert ids(cwd="greet") == ({"P"}, 1)
        assert ids(cwd="sub1") == ({"G1"}, 1)
        assert ids(cwd="greet", agent="claude-code") == (set(), 0)
        # The total counts every match, not the page's (the page filtered only what it had).
        assert ids(cwd="/home/dev/greet", limit=1)[1] == 3
        assert ids(cwd="/home/dev/gree%") == (set(), 0)
        assert c.get("/sessions", params={"cwd": "x" * 5000}).status_code == 422


def test_the_project_filter_reads_windows_paths(store: Store) -> None:
    # Sessions recorded on Windows (the real devset's Claude Code sessions are) keep
    # backslashes in their cwd: the last part and the directories above are still found.
    store.register("W", "claude-code", str(CLAUDE_CONTINUE), cwd="D:\\oh-my-posh")
    store.register("U", "claude-code", str(CLAUDE_CONTINUE), cwd="C:\\src\\app\\web")
    store.register("L", "claude-code", str(CLAUDE_CONTINUE), cwd="/home/dev/oh-my-posh-fork")
    app = create_app(store, token="t" * 32, config=load_config(), reads_need_token=False)
    with TestClient(app, base_url="http://127.0.0.1") as c:

        def ids(cwd: str) -> set[str]:
            return {s["id"] for s in c.get("/sessions", params={"cwd": cwd}).json()["sessions"]}

        assert ids("oh-my-posh") == {"W"}
        assert ids("D:\\oh-my-posh") == {"W"}
        assert ids("C:\\src\\app") == {"U"}
        assert ids("web") == {"U"}
        assert ids("app") == set()  # a middle part is not the project
        assert ids("C:\\src\\ap") == set()  # nor a prefix of a name
