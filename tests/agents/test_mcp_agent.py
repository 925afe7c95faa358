"""``opencode-restore mcp`` inside the real Claude Code from npm (opt-in, slow).

``install claude --mcp`` writes the server into a throw-away HOME's ``~/.claude.json``;
Claude Code then starts it over stdio itself and offers its tools to the (fake) model.
The fake model calls ``search_log`` once; the check is that the next request it receives
carries the tool's answer: a hit in the session's log with its ``[M#]`` label. Skipped
unless Claude Code is found (``CLAUDE_BIN``, else ``claude`` on PATH); see
``test_real_agents`` for how to install it and run offline.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agents.fake_model import FakeModel, anthropic_tool_stream
from tests.agents.test_real_agents import DEADLINE, _binary, _project, claude_env
from tests.batch.helpers import CLAUDE_3_TURNS

pytestmark = pytest.mark.slow
PREFIX = "mcp__opencode-restore__"
SESSION = CLAUDE_3_TURNS.stem


class SearchingModel(FakeModel):
    """Answers the first request that offers our tools with one ``search_log`` call."""

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        names = {t.get("name") for t in body.get("tools", []) if isinstance(t, dict)}
        last = (body.get("messages") or [{}])[-1]
        content = last.get("content") if isinstance(last, dict) else None
        answered = isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        )
        if f"{PREFIX}search_log" in names and body.get("stream") and not answered:
            with self._lock:
                self.requests.append((path, body))
            arguments = {"session": SESSION[:8], "pattern": "--shout"}
            stream = anthropic_tool_stream(str(body.get("model")), f"{PREFIX}search_log", arguments)
            return 200, "text/event-stream", stream
        return super().answer(path, body)


def test_claude_code_starts_the_server_and_gets_a_cited_search(tmp_path: Path) -> None:
    claude = _binary("CLAUDE_BIN", "claude")
    home, data_dir = tmp_path / "home", tmp_path / "data"
    sessions = home / ".claude" / "projects" / "-home-dev-greet"
    sessions.mkdir(parents=True)
    shutil.copy(CLAUDE_3_TURNS, sessions / CLAUDE_3_TURNS.name)
    project = _project(tmp_path)
    with SearchingModel() as model:
        env = claude_env(home, data_dir, model.url)
        installed = subprocess.run(
            [sys.executable, "-m", "opencode_restore", "install", "claude", "--mcp"],
            env=env,
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            check=False,
        )
        assert installed.returncode == 0, installed.stderr
        result = subprocess.run(
            [claude, "--dangerously-skip-permissions", "-p", "Where was --shout asked for?"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            check=False,
        )
        assert result.returncode == 0, result.stderr
    offered = [
        {t.get("name") for t in body.get("tools", []) if isinstance(t, dict)}
        for _path, body in model.requests
    ]
    ours = {f"{PREFIX}{n}" for n in ("list_sessions", "restore_session", "get_messages")}
    assert any(ours | {f"{PREFIX}search_log"} <= names for names in offered), offered
    results = [
        block
        for _path, body in model.requests
        for message in body.get("messages", [])
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    assert results, "Claude Code sent no tool result back"
    text = json.dumps(results[-1])
    assert "--shout" in text
    assert "[M" in text  # the hit carries the label a restoration would cite
