"""Memory at session start inside the real Claude Code and Gemini CLI (opt-in, slow).

``install AGENT --memory``; a first session runs one prompt, its restoration is saved in
the store (as ``nightly`` saves one), and the next fresh session of the project must carry
the digest in its first request, once, cited with the first session's id. Run as
``test_hook_agents`` says (``CLAUDE_BIN`` / ``GEMINI_BIN``, offline with loopback up).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from opencode_restore.hooks.memory import MARK
from opencode_restore.store import open_store
from tests.agents.fake_gemini import FakeGemini
from tests.agents.fake_model import FakeModel
from tests.agents.test_hook_agents import FIRST, Claude, Gemini, _chats, _quiet_log
from tests.agents.test_real_agents import install, run_ok

pytestmark = pytest.mark.slow


def _save_restoration(env: dict[str, str], data_dir: Path, session_id: str) -> None:
    """Restore ``session_id`` offline and save it in the store, as ``nightly`` does."""
    restored = run_ok(
        [sys.executable, "-m", "opencode_restore", "restore", session_id, "--format", "json"],
        {**env, "OPENCODE_RESTORE_MODEL": "offline"},
    )
    store = open_store(data_dir)
    try:
        store.add_restoration(
            session_id,
            provider="offline",
            summary_markdown="",
            summary=json.loads(restored.stdout),
            usage={},
            errors={},
        )
    finally:
        store.close()


def _memories(body: dict[str, Any]) -> int:
    return json.dumps(body, ensure_ascii=False).count(MARK)


def test_claude_code_memory_at_startup(tmp_path: Path) -> None:
    with FakeModel() as model:
        claude = Claude(tmp_path, model, ["compact"])
        install(claude.env, "claude", "--user", "--memory")
        first = claude.run(FIRST)
        (transcript,) = (claude.home / ".claude/projects").glob("*/*.jsonl")
        _save_restoration(claude.env, claude.data_dir, transcript.stem)
        fresh = claude.run("What is next?")
        continued = claude.run("--continue", "And then?")
    assert all(_memories(body) == 0 for body in first)  # nothing restored yet
    assert fresh
    text = json.dumps(fresh[0], ensure_ascii=False)
    assert _memories(fresh[0]) == 1
    assert f"- Goal: {FIRST} [{transcript.stem[:8]} M1]" in text  # the first session's, cited
    assert "not instructions" in text
    # --continue reloads the conversation, the digest in it: none piles up.
    assert [_memories(body) for body in continued] == [1] * len(continued)
    _quiet_log(claude.data_dir)


def test_gemini_memory_at_startup(tmp_path: Path) -> None:
    with FakeGemini() as model:
        gemini = Gemini(tmp_path, model, ["compact"])
        install(gemini.env, "gemini", "--user", "--memory")
        first = _chats(gemini.run(FIRST))
        (chat,) = (gemini.home / ".gemini/tmp").glob("*/chats/*.json*")
        store = open_store(gemini.data_dir)
        try:
            rows, _ = store.sessions(agent="gemini", limit=5)
        finally:
            store.close()
        (row,) = rows
        _save_restoration(gemini.env, gemini.data_dir, row.id)
        fresh = _chats(gemini.run("What is next?"))
    assert all(_memories(body) == 0 for body in first)
    assert fresh
    assert _memories(fresh[0]) == 1
    text = json.dumps(fresh[0], ensure_ascii=False)
    assert f"- Goal: {FIRST} [{row.id[:8]} M2]" in text  # M1: Gemini's own session context
    assert chat.exists()
    _quiet_log(gemini.data_dir)
