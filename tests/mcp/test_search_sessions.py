"""The `search_sessions` tool: every indexed session at once, bounded and redacted."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from opencode_restore.config import load_config
from opencode_restore.mcp import tools as tools_module
from opencode_restore.mcp.server import build_server
from opencode_restore.mcp.tools import MAX_HITS, HistoryTools, ToolFailure
from opencode_restore.search.index import index_path, update
from opencode_restore.search.query import MARK_END, MARK_START, Hit
from opencode_restore.store import open_store
from tests.search.helpers import SINCE_FORMS, since_given
from tests.store.builders import CLAUDE_COMPACT, FIXTURES, copy_to

KEY = "sk-proj-AbCdEf0123456789AbCdEf0123456789AbCdEf01"


@pytest.fixture
def tools(data_dir: Path, tmp_path: Path) -> HistoryTools:
    """The tools over a data dir holding one indexed session (its first request has a key)."""
    log = copy_to(FIXTURES / "hostile" / "secrets.jsonl", tmp_path / "logs")
    store = open_store(data_dir)
    try:
        store.register("qa-secrets-0001", "claude-code", str(log), cwd="/home/dev/greet")
        update(store, index_path(data_dir))
    finally:
        store.close()
    return HistoryTools(load_config())


def test_hits_name_session_label_and_highlight(tools: HistoryTools) -> None:
    found = tools.search_sessions("shout")
    assert found.hits
    hit = found.hits[0]
    assert (hit["session_id"], hit["agent"]) == ("qa-secrets-0001", "claude-code")
    assert hit["label"].startswith("M")
    start, end = hit["highlights"][0]
    assert hit["snippet"][start:end].lower() == "shout"
    assert "get_messages" in found.note


def test_no_secret_in_any_answer(tools: HistoryTools, monkeypatch: pytest.MonkeyPatch) -> None:
    assert KEY not in str(tools.search_sessions("key", limit=MAX_HITS).model_dump())

    def stale(*args: Any, **kwargs: Any) -> list[Hit]:
        snippet = f"my {MARK_START}key{MARK_END} is {KEY}"
        return [Hit("s", "codex", f"/home/{KEY}", None, "M1", "message", "user", snippet, -1.0)]

    monkeypatch.setattr(tools_module, "search", stale)
    hit = tools.search_sessions("key").hits[0]
    assert KEY not in str(hit)
    assert hit["highlights"] == [[3, 6]]


def test_bounds_and_errors_are_one_line_failures(
    tools: HistoryTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    def spy(*args: Any, **kwargs: Any) -> list[Hit]:
        seen.update(kwargs)
        return []

    with pytest.raises(ToolFailure, match="nonsense"):
        tools.search_sessions("shout", kind="nonsense")
    with pytest.raises(ToolFailure, match="limit"):
        tools.search_sessions("shout", limit=0)
    with pytest.raises(ToolFailure):
        tools.search_sessions("shout", since="not a time")
    monkeypatch.setattr(tools_module, "search", spy)
    tools.search_sessions("shout", limit=10**6, kind="error, command")
    assert seen["limit"] == MAX_HITS
    assert seen["kinds"] == frozenset({"error", "command"})


@pytest.mark.parametrize(("since", "means"), SINCE_FORMS)
def test_since_takes_every_form_the_cli_does(
    tools: HistoryTools,
    monkeypatch: pytest.MonkeyPatch,
    since: str,
    means: timedelta | datetime,
) -> None:
    with since_given(monkeypatch, tools_module, means):
        tools.search_sessions("shout", since=since)


def test_filters_narrow(tools: HistoryTools) -> None:
    assert tools.search_sessions("shout", agent="codex").hits == []
    assert tools.search_sessions("shout", cwd="/elsewhere").hits == []


def test_no_index_is_made_and_no_session_is_no_hits(data_dir: Path) -> None:
    found = HistoryTools(load_config()).search_sessions("anything")
    assert found.hits == []
    assert found.note.startswith("0 hits")
    assert index_path(data_dir).is_file()


def test_an_index_that_cannot_be_made_says_how_to_make_one(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def busy(*args: Any) -> None:
        return None  # as when a build holds the index and none existed before

    monkeypatch.setattr(tools_module, "before_query", busy)
    found = HistoryTools(load_config()).search_sessions("anything")
    assert found.hits == []
    assert "opencode-restore index" in found.note


def test_sessions_the_store_saw_change_are_found_without_an_index_command(
    tools: HistoryTools, data_dir: Path, tmp_path: Path
) -> None:
    log = copy_to(CLAUDE_COMPACT, tmp_path / "more")
    store = open_store(data_dir)
    try:
        store.register("later-0002", "claude-code", str(log), cwd="/home/dev/src/greet-cli")
    finally:
        store.close()
    found = tools.search_sessions("greet", limit=MAX_HITS)
    assert "later-0002" in {h["session_id"] for h in found.hits}


def test_the_server_lists_the_tool() -> None:
    async def names() -> set[str]:
        listed = await build_server(load_config()).list_tools()
        return {t.name for t in listed}

    assert "search_sessions" in anyio.run(names)
