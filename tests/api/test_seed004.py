"""Seed 004 (Session Messages API): one test per success criterion, end to end.

Sessions are fed the way users feed them: hook payloads (through ``hooks.run``) and
``sessions scan``; messages are read through the HTTP API.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from opencode_restore.api import create_app
from opencode_restore.config import load_config
from opencode_restore.diagnostics import WarningSink
from opencode_restore.hooks.receiver import run
from opencode_restore.report.messages import message_record
from opencode_restore.sources import iter_messages
from opencode_restore.store.store import Store
from tests.store.builders import (
    CLAUDE_COMPACT,
    CODEX_RESUME,
    GEMINI_COMPRESSION,
    GEMINI_CONTINUED,
    GEMINI_LEGACY,
    HOOKS,
    copy_to,
    line_of,
    split_file,
)

SID = "e57fea98-e10e-4cce-a470-5de2e7413154"
CODEX_ID = "01a1fde9-539c-77f2-9e0a-d405fab49546"


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The transcripts live in the test's folder: make it the home the hook accepts."""
    monkeypatch.setenv("HOME", str(tmp_path))


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    app = create_app(store, config=load_config(), reads_need_token=False)
    with TestClient(app, base_url="http://127.0.0.1") as c:
        yield c


def _hook(payload: dict[str, Any], agent: str | None = None) -> None:
    assert run(agent, json.dumps(payload)) == 0


def _claude_payload(event: str, path: Path) -> dict[str, Any]:
    lines = (HOOKS / "tui-compact/hooks_stdin.jsonl").read_text().splitlines()
    base = next(json.loads(x) for x in lines if x.strip() and event in x)
    return dict(base, transcript_path=str(path))


def _get(client: TestClient, sid: str, **params: Any) -> list[dict[str, Any]]:
    r = client.get(f"/sessions/{sid}/messages", params=params)
    assert r.status_code == 200, r.text
    body = json.loads(r.content)
    assert body["session_id"] == sid
    msgs: list[dict[str, Any]] = body["messages"]
    return msgs


def _rotated_claude(tmp_path: Path) -> list[Path]:
    """The recorded TUI session rotated into a second file right before turn 3."""
    at = line_of(CLAUDE_COMPACT, "Show me the git diff summary") - 1
    return split_file(CLAUDE_COMPACT, at, tmp_path / "claude", (f"{SID}.jsonl", "resumed.jsonl"))


def test_hook_receiver_preserves_old_transcript_paths(store: Store, tmp_path: Path) -> None:
    """Criterion 1: a new transcript path for the same session is appended, never replacing."""
    first, second = _rotated_claude(tmp_path)
    _hook(_claude_payload("SessionStart", first))
    _hook(_claude_payload("UserPromptSubmit", first))
    _hook(_claude_payload("PreCompact", second))  # the session moved to a new file
    _hook(_claude_payload("Stop", second))
    s = store.session(SID)
    assert s is not None
    assert [f.path for f in s.files] == [str(first), str(second)]
    assert s.native_log_file == str(second)  # FR1: still the latest file
    assert s.last_event == "Stop"


def test_messages_endpoint_returns_structured_json(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    """Criterion 2: every message, with role, type, text, timestamp and entry metadata."""
    path = copy_to(CLAUDE_COMPACT, tmp_path)
    _hook(_claude_payload("SessionStart", path))
    msgs = _get(client, SID, include_tools="true", include_thinking="true")
    assert msgs == [message_record(m) for m in iter_messages([path], WarningSink())]
    for m in msgs:
        assert {"role", "type", "text", "timestamp", "entry_index", "file_index"} <= set(m)
        assert m["role"] in ("user", "assistant", "system", "tool")
    users = [m["text"] for m in msgs if m["role"] == "user" and m["type"] == "text"]
    for prompt in (
        "Add a --shout flag to the greet CLI that upper-cases the greeting, and add a test for it.",
        "Also mention the new flag in the README.",
        "Show me the git diff summary and we're done.",
    ):
        assert prompt in users


def test_multi_file_sessions_are_stitched_in_order(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    """Criterion 3: file N's messages before file N+1's, each with its file_index."""
    first, second = _rotated_claude(tmp_path)
    _hook(_claude_payload("SessionStart", first))
    _hook(_claude_payload("Stop", second))
    msgs = _get(client, SID, include_tools="true")
    whole = [message_record(m) for m in iter_messages([CLAUDE_COMPACT], WarningSink())]
    whole = [m for m in whole if m["type"] != "thinking"]
    split_at = line_of(CLAUDE_COMPACT, "Show me the git diff summary") - 1
    assert [m["id"] for m in msgs] == [m["id"] for m in whole]
    indexes = [m["file_index"] for m in msgs]
    assert indexes == sorted(indexes)
    assert set(indexes) == {0, 1}
    for got, orig in zip(msgs, whole, strict=True):
        expected_line = orig["entry_index"] - (split_at if got["file_index"] == 1 else 0)
        assert got["entry_index"] == expected_line
    assert msgs[-1]["file_index"] == 1
    assert msgs[-1]["text"].startswith("Summary of the work")


def test_compaction_events_are_system_messages(client: TestClient, store: Store) -> None:
    """Criterion 4: the compact boundary is {"role": "system", "type": "compaction"}."""
    store.register(SID, "claude-code", str(CLAUDE_COMPACT))
    msgs = _get(client, SID)
    compactions = [m for m in msgs if m["type"] == "compaction"]
    assert len(compactions) == 1
    c = compactions[0]
    assert (c["role"], c["text"]) == ("system", "Context compacted")
    # It separates turn 2 from turn 3.
    order = [m["text"] for m in msgs]
    assert order.index("Also mention the new flag in the README.") < msgs.index(c)
    assert msgs.index(c) < order.index("Show me the git diff summary and we're done.")


def test_since_returns_only_newer_messages(client: TestClient, store: Store) -> None:
    """Criterion 5: ``since`` filters to messages strictly after it."""
    store.register(SID, "claude-code", str(CLAUDE_COMPACT))
    everything = _get(client, SID, include_tools="true", include_thinking="true")
    stamps = sorted({m["timestamp"] for m in everything if m["timestamp"]})
    for since in stamps[:: max(1, len(stamps) // 10)]:
        newer = _get(client, SID, since=since, include_tools="true", include_thinking="true")
        assert newer == [m for m in everything if m["timestamp"] and m["timestamp"] > since]
    r = client.get(f"/sessions/{SID}/messages", params={"since": "2026-13-45"})
    assert r.status_code == 422
    assert "expected an ISO 8601 time" in r.json()["detail"][0]["msg"]


def test_works_for_codex_multi_file(client: TestClient, store: Store, tmp_path: Path) -> None:
    """Criterion 6 (Codex): a thread whose rollout continues in a second file."""
    at = line_of(CODEX_RESUME, "Also mention the new flag") - 1
    parts = split_file(
        CODEX_RESUME,
        at,
        tmp_path / "codex",
        (
            f"rollout-2026-11-21T11-41-29-{CODEX_ID}.jsonl",
            f"rollout-2026-11-21T11-45-00-{CODEX_ID}.jsonl",
        ),
    )
    for p in parts:
        _hook(
            {"session_id": CODEX_ID, "transcript_path": str(p), "hook_event_name": "Stop"}, "codex"
        )
    s = store.session(CODEX_ID)
    assert s is not None
    assert s.agent == "codex"
    msgs = _get(client, CODEX_ID, include_tools="true")
    whole = [
        message_record(m)
        for m in iter_messages([CODEX_RESUME], WarningSink(), "codex")
        if m.type != "thinking"
    ]
    assert [(m["role"], m["type"], m["text"]) for m in msgs] == [
        (m["role"], m["type"], m["text"]) for m in whole
    ]
    by_file = {m["text"]: m["file_index"] for m in msgs if m["role"] == "user"}
    assert by_file["Also mention the new flag in the README."] == 1
    assert (
        by_file[
            "Add a --shout flag to the greet CLI that upper-cases the greeting, "
            "and add a test for it."
        ]
        == 0
    )


def test_works_for_gemini_multi_file(client: TestClient, store: Store, tmp_path: Path) -> None:
    """Criterion 6 (Gemini): a legacy .json session continued in a .jsonl file."""
    chats = tmp_path / ".gemini/tmp/proj/chats"
    legacy, continued = copy_to(GEMINI_LEGACY, chats), copy_to(GEMINI_CONTINUED, chats)
    for p, event in ((legacy, "SessionStart"), (continued, "AfterAgent")):
        _hook({"session_id": "gem-resume", "transcript_path": str(p), "hook_event_name": event})
    s = store.session("gem-resume")
    assert s is not None
    assert s.agent == "gemini"
    msgs = _get(client, "gem-resume")
    assert [(m["role"], m["text"], m["file_index"]) for m in msgs] == [
        (m.role, m.text, m.file_index)
        for m in iter_messages([legacy, continued], WarningSink(), "gemini")
    ]
    assert {m["file_index"] for m in msgs} == {0, 1}
    assert msgs[-1]["text"] == "Next: tests."
    since = _get(client, "gem-resume", since="2026-02-04T07:30:00Z")
    assert [m["text"] for m in since] == ["resumed: what next?", "Next: tests."]


def test_works_for_gemini_compression(client: TestClient, store: Store) -> None:
    store.register("gem-compress", "gemini", str(GEMINI_COMPRESSION))
    msgs = _get(client, "gem-compress")
    assert msgs
    assert msgs[0]["text"] == "add a --shout flag"


def test_native_log_file_consumers_unchanged(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    """Criterion 7: native_log_file keeps its meaning; single-file reads are as before."""
    first, second = _rotated_claude(tmp_path)
    _hook(_claude_payload("SessionStart", first))
    _hook(_claude_payload("Stop", second))
    s = client.get(f"/sessions/{SID}").json()
    assert s["native_log_file"] == str(second)
    # A consumer reading only native_log_file (the old single-file way) gets that file's
    # messages, exactly as the reader gives them; the checkpoint index changes nothing.
    alone = [message_record(m) for m in iter_messages([second], WarningSink())]
    assert alone
    stitched = _get(client, SID, include_tools="true", include_thinking="true")
    tail = [dict(m, file_index=0) for m in stitched if m["file_index"] == 1]
    assert tail == alone
