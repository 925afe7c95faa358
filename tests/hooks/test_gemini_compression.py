"""Gemini CLI's automatic compression, found at BeforeAgent in the bytes its chat file gained.

Gemini CLI 0.61 compresses on its own past a token threshold, checked before every model
request; no hook is installed there (PreCompress(auto) would cost every request). So each
BeforeAgent (once per prompt) reads what the chat file gained since the last look and, on a
new compression checkpoint, delivers the restoration once. The chat file is the real
recording of ``fixtures/gemini/own/compress`` (line 31 is the compression's
``$set.messages``, lines 38-39 a ``--resume`` restating it under the same ids).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from opencode_restore.diagnostics import WarningSink
from opencode_restore.hooks.restore import compressions_in, gemini_compressed, seen_path
from opencode_restore.pipeline.journal.identity import journal_key
from opencode_restore.pipeline.journal.store import JournalStore
from opencode_restore.sources import open_session
from tests.waits import RUNAWAY_S

from ..store.builders import FIXTURES, GEMINI_COMPRESSION

RECORDED = FIXTURES / "gemini/own/compress/session-2026-11-27T07-31-0899d14b.jsonl"
SESSION = "0899d14b-1e2a-412a-b8e0-d2dbf9433896"
SUMMARY_ID = "8b1629f0-e679-4add-af82-02622eb2ce93"
LINES = RECORDED.read_bytes().splitlines(keepends=True)
#: Before the compression; the compression (its sessionId, checkpoint, note); the next
#: prompt; a --resume restating the compressed context.
BEFORE, COMPRESSION, NEXT, RESUME = LINES[:29], LINES[29:33], LINES[33:37], LINES[37:]
DEADLINE = RUNAWAY_S  # a runaway guard: a loaded machine is slow, not wrong


def _chat(tmp_path: Path, lines: list[bytes]) -> tuple[Path, Path]:
    home = tmp_path / "home"
    chats = home / ".gemini/tmp/hello/chats"
    chats.mkdir(parents=True)
    chat = chats / RECORDED.name
    chat.write_bytes(b"".join(lines))
    return home, chat


def _append(chat: Path, *lines: bytes) -> None:
    with chat.open("ab") as fh:
        fh.write(b"".join(lines))


def test_compressions_in_finds_the_summary_of_each_checkpoint() -> None:
    assert compressions_in(b"".join(COMPRESSION)) == [SUMMARY_ID]
    assert compressions_in(b"".join(RESUME)) == [SUMMARY_ID]  # restated, same id
    assert compressions_in(b"".join(BEFORE + NEXT)) == []
    assert compressions_in(GEMINI_COMPRESSION.read_bytes()) == ["sum-1"]
    # A message quoting the marks is no checkpoint.
    quoted = json.dumps({"id": "u9", "type": "user", "content": "<state_snapshot> x"})
    assert compressions_in(quoted.encode() + b"\n") == []


def test_a_growing_chat_file_reports_a_compression_once(tmp_path: Path) -> None:
    _home, chat = _chat(tmp_path, BEFORE)
    data = str(tmp_path / "data")

    def look() -> bool:
        return gemini_compressed(str(chat), data, SESSION)

    assert look() is False  # the first look learns the file
    assert look() is False  # nothing new
    line = COMPRESSION[1]
    _append(chat, COMPRESSION[0], line[:500])  # the checkpoint half written
    assert look() is False
    _append(chat, line[500:], *COMPRESSION[2:])
    assert look() is True
    assert look() is False  # once
    _append(chat, *NEXT)
    assert look() is False  # grew, no compression
    _append(chat, *RESUME)
    assert look() is False  # the resume restates the same summary
    state = json.loads(Path(seen_path(data, "gemini", SESSION)).read_text())
    assert (state["offset"], state["ids"]) == (chat.stat().st_size, [SUMMARY_ID])
    # A file written anew (another inode) is read from its start: nothing new in it.
    chat.unlink()
    chat.write_bytes(RECORDED.read_bytes())
    assert look() is False


def test_a_first_look_at_a_compressed_file_reports_nothing(tmp_path: Path) -> None:
    _home, chat = _chat(tmp_path, BEFORE + COMPRESSION)
    assert gemini_compressed(str(chat), str(tmp_path / "data"), SESSION) is False
    assert gemini_compressed(None, str(tmp_path / "data"), SESSION) is False
    assert gemini_compressed(str(chat) + ".gone", str(tmp_path / "data"), SESSION) is False


def _hook(payload: dict[str, Any], home: Path, data_dir: Path, **env: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "opencode_restore", "hook", "--agent", "gemini"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=dict(os.environ, HOME=str(home), OPENCODE_RESTORE_DATA_DIR=str(data_dir), **env),
        timeout=DEADLINE,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _event(chat: Path, event: str, **fields: str) -> dict[str, Any]:
    return {
        "session_id": SESSION,
        "transcript_path": str(chat),
        "cwd": "/tmp/gemc/hello",
        "hook_event_name": event,
        "timestamp": "2026-11-27T07:32:23Z",
        **fields,
    }


def _context(out: str) -> str:
    answer = json.loads(out)["hookSpecificOutput"]
    assert answer["hookEventName"] == "BeforeAgent"
    context: str = answer["additionalContext"]
    return context


def _log(data_dir: Path) -> str:
    path = data_dir / "hook.log"
    return path.read_text() if path.exists() else ""


def test_an_automatic_compression_is_delivered_once_at_the_next_before_agent(
    tmp_path: Path, data_dir: Path
) -> None:
    home, chat = _chat(tmp_path, BEFORE)
    prompt = _event(chat, "BeforeAgent", prompt="go on")
    assert _hook(_event(chat, "SessionStart", source="startup"), home, data_dir) == ""
    assert _hook(prompt, home, data_dir) == ""
    _append(chat, *COMPRESSION)  # Gemini compressed on its own: no hook ran
    first = _context(_hook(prompt, home, data_dir))
    assert first.startswith(f"# Restored context: earlier gemini session `{SESSION}`")
    assert "create hello.py that prints hello" in first
    assert _hook(prompt, home, data_dir) == ""  # once
    _append(chat, *NEXT, *RESUME)  # a later --resume restates the compressed context
    assert _hook(prompt, home, data_dir) == ""
    assert not list((data_dir / "hooks").glob("*.pending"))
    assert _log(data_dir) == ""


def test_an_automatic_compression_restores_nothing_unless_compact_is_on(
    tmp_path: Path, data_dir: Path
) -> None:
    home, chat = _chat(tmp_path, BEFORE)
    prompt = _event(chat, "BeforeAgent", prompt="go on")
    off = {"OPENCODE_RESTORE_HOOKS_RESTORE_ON": "clear,resume"}
    assert _hook(prompt, home, data_dir, **off) == ""
    _append(chat, *COMPRESSION)
    assert _hook(prompt, home, data_dir, **off) == ""
    assert _hook(prompt, home, data_dir) == ""  # seen: not owed later either
    assert not list((data_dir / "hooks").glob("*.p*"))
    assert _log(data_dir) == ""


def test_a_manual_compress_is_delivered_once_not_again_for_its_checkpoint(
    tmp_path: Path, data_dir: Path
) -> None:
    home, chat = _chat(tmp_path, BEFORE)
    prompt = _event(chat, "BeforeAgent", prompt="go on")
    assert _hook(prompt, home, data_dir) == ""
    assert _hook(_event(chat, "PreCompress", trigger="manual"), home, data_dir) == ""
    _append(chat, *COMPRESSION)  # /compress wrote its checkpoint
    assert f"gemini session `{SESSION}`" in _context(_hook(prompt, home, data_dir))
    assert _hook(prompt, home, data_dir) == ""
    assert _log(data_dir) == ""


def test_past_the_budget_the_next_before_agent_delivers(tmp_path: Path, data_dir: Path) -> None:
    home, chat = _chat(tmp_path, BEFORE)
    prompt = _event(chat, "BeforeAgent", prompt="go on")
    assert _hook(prompt, home, data_dir) == ""
    _append(chat, *COMPRESSION)
    key = journal_key(open_session([chat], WarningSink(), "gemini"))
    lock = JournalStore(data_dir / "timelines").path_for(key).with_suffix(".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(lock):  # another restore holds the session: the child waits past the budget
        assert _hook(prompt, home, data_dir, OPENCODE_RESTORE_HOOKS_BUDGET_SECONDS="0.5") == ""
        assert "not ready within 0.5 s" in _log(data_dir)
    prepared = data_dir / "hooks" / f"gemini-{SESSION}.prompt"
    deadline = time.monotonic() + DEADLINE
    while not prepared.exists():
        assert time.monotonic() < deadline, "the background restore never finished"
        time.sleep(0.1)
    assert lock.with_suffix(".json").is_file()  # the lock held was the restore's own
    assert f"gemini session `{SESSION}`" in _context(_hook(prompt, home, data_dir))
    assert _hook(prompt, home, data_dir) == ""


@pytest.mark.parametrize("size", [0, 1])
def test_an_unreadable_state_is_a_first_look(tmp_path: Path, size: int) -> None:
    _home, chat = _chat(tmp_path, BEFORE + COMPRESSION)
    data = tmp_path / "data"
    note = Path(seen_path(str(data), "gemini", SESSION))
    note.parent.mkdir(parents=True)
    note.write_text("{" * size)
    assert gemini_compressed(str(chat), str(data), SESSION) is False
    assert json.loads(note.read_text())["ids"] == [SUMMARY_ID]
