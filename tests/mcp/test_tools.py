"""`HistoryTools` in process: bounds, notes and the errors a caller can correct."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import cast

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from opencode_restore.config import load_config
from opencode_restore.mcp.server import build_server, reason
from opencode_restore.mcp.tools import (
    CALLER_ENV,
    Caller,
    HistoryTools,
    ToolFailure,
    cut_to_tokens,
)
from opencode_restore.since import EXPECTED
from opencode_restore.store.store import ChainFile, SessionRow, Store
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


def test_list_takes_since_as_the_cli_does(tools: HistoryTools) -> None:
    assert [s.id for s in tools.list_sessions(since="36500d").sessions] == [SESSION]
    later = tools.list_sessions(since="2100-01-01T00:00:00Z")
    assert (later.sessions, later.total) == ([], 0)
    with pytest.raises(ToolFailure, match="since 'yesterday'"):
        tools.list_sessions(since="yesterday")


def test_an_ambiguous_prefix_names_every_candidate_in_one_line(tools: HistoryTools) -> None:
    twin = f"{SESSION[:4]}x-twin"
    folder = Path(os.environ["HOME"]) / ".claude" / "projects" / "-home-dev-p"
    (folder / f"{twin}.jsonl").write_text(CLAUDE_3_TURNS.read_text().replace(SESSION, twin))

    async def main() -> None:
        for call in (
            lambda: tools.restore_session(SESSION[:4]),
            lambda: tools.get_messages(SESSION[:4]),
            lambda: tools.search_log(SESSION[:4], "greet"),
        ):
            with pytest.raises(ToolFailure) as info:
                await call()
            text = str(info.value)
            assert "\n" not in text
            assert text.startswith(f"session id prefix {SESSION[:4]!r} matches 2 sessions")
            assert f"{SESSION} (claude-code)" in text
            assert f"{twin} (claude-code)" in text
        restored = await tools.restore_session(SESSION[:5])  # one more character: unique
        assert restored.session == SESSION

    anyio.run(main)


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


# -- the caller's own session ----------------------------------------------------------

NOW = 2_000_000_000.0


class _NoStore:
    """`Store.session` finding nothing: the rows given are all there is."""

    def session(self, session_id: str) -> None:
        return None


def _row(tmp_path: Path, name: str, age: float, text: str = "{}\n") -> SessionRow:
    path = tmp_path / f"{name}.jsonl"
    path.write_text(text)
    os.utime(path, (NOW - age, NOW - age))
    files = [ChainFile(0, str(path), "", "test")]
    return SessionRow(name, "claude-code", str(path), None, None, "", "", None, 1, files)


def _skip(caller: Caller, rows: list[SessionRow]) -> list[str]:
    return [r.id for r in caller.skip(rows, cast(Store, _NoStore()))]


def test_latest_is_never_the_callers_own_session(tmp_path: Path) -> None:
    live = _row(tmp_path, "live", age=5)
    mine = _row(tmp_path, "mine", age=3600)
    older = _row(tmp_path, "older", age=7200)
    # Nothing names the caller: the newest log still being written is its own.
    assert _skip(Caller(now=NOW), [live, older]) == ["older"]
    assert _skip(Caller(now=NOW), [mine, older]) == ["mine", "older"]
    # The caller's id from its environment, when its session is the newest.
    assert _skip(Caller("mine", now=NOW), [mine, older]) == ["older"]
    # Cleared into a new session: the new one is live, the named one is what to restore.
    assert _skip(Caller("mine", now=NOW), [live, mine, older]) == ["mine", "older"]
    assert _skip(Caller(now=NOW), []) == []


def test_the_log_holding_the_tool_call_is_the_callers(tmp_path: Path) -> None:
    other = _row(tmp_path, "other", age=2)
    mine = _row(tmp_path, "mine", age=4, text='{"id": "toolu_42"}\n')
    assert _skip(Caller(tool_call_id="toolu_42", now=NOW), [other, mine]) == ["other"]
    # A call id no log holds: the rule of the newest applies.
    assert _skip(Caller(tool_call_id="toolu_7", now=NOW), [other, mine]) == ["mine"]


def test_the_callers_id_is_read_from_its_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in CALLER_ENV:
        monkeypatch.delenv(name, raising=False)
    assert Caller.from_env("toolu_1") == Caller(None, "toolu_1")
    monkeypatch.setenv("CODEX_THREAD_ID", "thread-1")
    assert Caller.from_env().session_id == "thread-1"
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "claude-1")
    assert Caller.from_env().session_id == "claude-1"


def test_latest_restores_the_session_before_the_live_one(
    tools: HistoryTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in CALLER_ENV:
        monkeypatch.delenv(name, raising=False)
    folder = Path(os.environ["HOME"]) / ".claude" / "projects" / "-home-dev-p"
    hour_ago = time.time() - 3600
    os.utime(folder / CLAUDE_3_TURNS.name, (hour_ago, hour_ago))
    live = CLAUDE_3_TURNS.read_text().replace(SESSION, "11ve0000-live")
    (folder / "11ve0000-live.jsonl").write_text(live)  # written just now

    listed = tools.list_sessions()
    assert {s.id: s.current for s in listed.sessions} == {"11ve0000-live": True, SESSION: False}

    async def main() -> None:
        restored = await tools.restore_session("latest")
        assert restored.session == SESSION
        messages = await tools.get_messages("latest", limit=1)
        assert messages.session == SESSION

    anyio.run(main)


# -- labels on a log that grows ----------------------------------------------------------


def _append_request(path: Path, text: str) -> None:
    """A user request appended to a Claude Code log, as a live session writes it."""
    last = json.loads(path.read_text().splitlines()[-1])
    entry = {
        **{k: last[k] for k in ("sessionId", "cwd", "version") if k in last},
        "type": "user",
        "uuid": "7e57a11a-0000-4000-8000-00000000abcd",
        "parentUuid": last.get("uuid"),
        "timestamp": "2099-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": text},
    }
    with path.open("a") as f:
        f.write(json.dumps(entry) + "\n")


def test_a_log_that_grew_keeps_its_labels_and_numbers_the_new_messages(
    tools: HistoryTools,
) -> None:
    log = Path(os.environ["HOME"]) / ".claude/projects/-home-dev-p" / CLAUDE_3_TURNS.name

    async def main() -> None:
        before = await tools.get_messages(SESSION, limit=200, include_tools=True)
        _append_request(log, "also add a --whisper flag")
        after = await tools.get_messages(SESSION, limit=200, include_tools=True)
        labels = {m["id"]: m["label"] for m in before.messages}
        assert {m["id"]: m["label"] for m in after.messages if m["id"] in labels} == labels
        new = after.messages[-1]
        assert new["text"] == "also add a --whisper flag"
        issued = [int(label[1:]) for label in labels.values() if label]
        assert int(new["label"][1:]) > max(issued)
        found = await tools.search_log(SESSION, "--whisper", literal=True)
        assert new["label"] in found.labels

    anyio.run(main)


def test_labels_without_a_saved_journal(tools: HistoryTools) -> None:
    config = load_config(overrides={"restore": {"resume": False}})
    unsaved = HistoryTools(config)

    async def main() -> None:
        listed = await unsaved.get_messages(SESSION, limit=200)
        assert listed.messages
        assert all(m["label"] for m in listed.messages)
        found = await unsaved.search_log(SESSION, "--shout", literal=True)
        assert found.labels

    anyio.run(main)


# -- failures carry their reason -----------------------------------------------------------


def test_an_unusable_data_dir_is_a_tool_error_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp import Client

    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    monkeypatch.setenv("OPENCODE_RESTORE_DATA_DIR", str(not_a_dir / "data"))
    config = load_config()

    async def main() -> None:
        async with Client(build_server(config)) as client:
            listed = await client.call_tool("list_sessions", {})
        assert listed.is_error
        [content] = listed.content
        text = getattr(content, "text", "")
        assert str(not_a_dir) in text, text
        assert "\n" not in text

    anyio.run(main)


def test_reasons_are_one_line() -> None:
    assert reason(FileNotFoundError(2, "No such file or directory", "/x")) == (
        "/x: No such file or directory"
    )
    assert reason(ToolFailure("bad label\nmore")) == "bad label"
    assert reason(KeyError("k")) == "KeyError: 'k'"
    assert reason(RuntimeError()) == "RuntimeError"
