"""`HistoryTools` in process: bounds, notes and the errors a caller can correct."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from opencode_restore.config import load_config
from opencode_restore.mcp.server import build_server
from opencode_restore.mcp.tools import HistoryTools, ToolFailure, cut_to_tokens
from opencode_restore.since import EXPECTED
from tests.batch.helpers import CLAUDE_3_TURNS

SESSION = CLAUDE_3_TURNS.stem


@pytest.fixture
def tools() -> HistoryTools:
    """The tools over the test's data dir, with one real session in the fake home."""
    projects = Path(os.environ["HOME"]) / ".claude" / "projects" / "-home-dev-p"
    projects.mkdir(parents=True)
    shutil.copy(CLAUDE_3_TURNS, projects / CLAUDE_3_TURNS.name)
    return HistoryTools(load_config())


def test_list_notes_what_the_limit_left_out(tools: HistoryTools) -> None:
    twin = CLAUDE_3_TURNS.read_text().replace(SESSION, "0ther-session")
    folder = Path(os.environ["HOME"]) / ".claude" / "projects" / "-home-dev-q"
    folder.mkdir()
    (folder / "0ther-session.jsonl").write_text(twin)
    listed = tools.list_sessions(limit=1)
    assert len(listed.sessions) == 1
    assert listed.total == 2
    assert listed.note == "1 of 2 sessions; raise limit for more"
    assert listed.sessions[0].turns is None  # never restored
    with pytest.raises(ToolFailure, match="limit must be at least 1"):
        tools.list_sessions(limit=0)


def test_messages_since_and_filters(tools: HistoryTools) -> None:
    async def main() -> None:
        every = await tools.get_messages(SESSION, limit=200, include_tools=True)
        plain = await tools.get_messages(SESSION, limit=200)
        late = await tools.get_messages(SESSION, since="2100-01-01T00:00:00Z")
        assert every.total > plain.total > 0
        assert all(m["type"] not in ("tool_use", "tool_result") for m in plain.messages)
        assert late.messages == []
        assert late.total == 0
        tool_label = next(m["label"] for m in every.messages if m["type"] == "tool_use")
        with pytest.raises(ToolFailure, match="filters leave out"):
            await tools.get_messages(SESSION, around=tool_label)
        around = await tools.get_messages(SESSION, around=f"[{tool_label}]", include_tools=True)
        assert tool_label in [m["label"] for m in around.messages]
        with pytest.raises(ToolFailure, match="format must be"):
            await tools.restore_session(SESSION, format="html")  # type: ignore[arg-type]

    anyio.run(main)


def test_since_takes_a_time_or_a_span_as_the_cli_does(tools: HistoryTools) -> None:
    async def main() -> None:
        every = await tools.get_messages(SESSION, limit=200)
        century = await tools.get_messages(SESSION, since="36500d", limit=200)
        assert century.messages == every.messages
        assert (await tools.get_messages(SESSION, since="1s")).messages == []
        first = every.messages[0]["timestamp"]
        after_first = await tools.get_messages(SESSION, since=first, limit=200)
        assert after_first.messages == [m for m in every.messages if m["timestamp"] > first]
        for bad, why in (("24", f"expected {EXPECTED}"), ("0h", "a span must be positive")):
            with pytest.raises(ToolFailure) as info:
                await tools.get_messages(SESSION, since=bad)
            assert str(info.value).startswith(f"since {bad!r}: {why}")

    anyio.run(main)


def test_a_log_path_is_restored_too_and_a_missing_one_is_a_failure(
    tools: HistoryTools, tmp_path: Path
) -> None:
    async def main() -> None:
        restored = await tools.restore_session(str(CLAUDE_3_TURNS))
        assert restored.session == SESSION
        assert "[M" in restored.text
        with pytest.raises(ToolFailure, match="no such file"):
            await tools.restore_session(str(tmp_path / "gone.jsonl"))
        with pytest.raises(ToolFailure, match="pattern refused"):
            await tools.search_log(SESSION, "x" * 500)

    anyio.run(main)


def test_the_server_answers_in_process(tools: HistoryTools) -> None:
    from mcp import Client

    async def main() -> None:
        async with Client(build_server(load_config())) as client:
            listed = await client.call_tool("list_sessions", {"agent": "claude-code"})
            gone = await client.call_tool("get_messages", {"session": "nope-nope"})
        assert listed.structured_content is not None
        assert [s["id"] for s in listed.structured_content["sessions"]] == [SESSION]
        assert gone.is_error

    anyio.run(main)


@given(st.text(alphabet="ab\n ", max_size=400), st.integers(min_value=1, max_value=100))
def test_a_cut_stays_within_its_budget(text: str, tokens: int) -> None:
    cut, was_cut = cut_to_tokens(text, tokens)
    assert text.startswith(cut)
    assert was_cut == (cut != text)
    assert len(cut) <= tokens * 3.5
