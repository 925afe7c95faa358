"""``opencode-restore mcp`` inside the real Claude Code from npm (opt-in, slow).

``install claude --mcp`` writes the server into a throw-away HOME's ``~/.claude.json``
(with ``alwaysLoad``, so a one-shot ``claude -p`` offers the tools in its first request);
Claude Code then starts it over stdio itself and offers its tools to the (fake) model.
The fake model calls ``restore_session`` with ``latest``, then ``search_log``; the check is
that the requests after them carry the answers: the older session (never the live one
asking) and a hit in its log with its ``[M#]`` label. Skipped unless Claude Code is found
(``CLAUDE_BIN``, else ``claude`` on PATH); see ``test_real_agents`` for how to install it
and run offline. Checked with Claude Code 2.1.332.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.agents.fake_model import FakeModel, anthropic_tool_stream
from tests.agents.test_real_agents import (
    _binary,
    _project,
    claude_env,
    install,
    run_ok,
)
from tests.batch.helpers import CLAUDE_3_TURNS

pytestmark = pytest.mark.slow
PREFIX = "mcp__opencode-restore__"
SESSION = CLAUDE_3_TURNS.stem
#: The calls the fake model makes, one per request, in order.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("restore_session", {"session": "latest"}),
    ("search_log", {"session": SESSION[:8], "pattern": "--shout"}),
]


def _results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        block
        for message in body.get("messages", [])
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


def _text(result: dict[str, Any]) -> str:
    content = result.get("content")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


def _called(body: dict[str, Any]) -> int:
    """How many of `CALLS` the conversation holds already."""
    names = [
        block.get("name")
        for message in body.get("messages", [])
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_use"
    ]
    return sum(1 for name, _ in CALLS if f"{PREFIX}{name}" in names)


class CallingModel(FakeModel):
    """Answers each request that offers our tools with the next of `CALLS`."""

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        names = {t.get("name") for t in body.get("tools", []) if isinstance(t, dict)}
        done = _called(body)
        if f"{PREFIX}search_log" in names and body.get("stream") and done < len(CALLS):
            with self._lock:
                self.requests.append((path, body))
                unique = f'"toolu_{len(self.requests)}_'.encode()
            name, arguments = CALLS[done]
            stream = anthropic_tool_stream(str(body.get("model")), f"{PREFIX}{name}", arguments)
            # One id per call (the fake's is its thread's, which a later request may reuse).
            return 200, "text/event-stream", stream.replace(b'"toolu_', unique)
        return super().answer(path, body)


def test_claude_code_starts_the_server_and_gets_a_cited_search(tmp_path: Path) -> None:
    claude = _binary("CLAUDE_BIN", "claude")
    home, data_dir = tmp_path / "home", tmp_path / "data"
    sessions = home / ".claude" / "projects" / "-home-dev-greet"
    sessions.mkdir(parents=True)
    shutil.copy(CLAUDE_3_TURNS, sessions / CLAUDE_3_TURNS.name)
    hour_ago = time.time() - 3600  # an earlier session, not one being written
    os.utime(sessions / CLAUDE_3_TURNS.name, (hour_ago, hour_ago))
    project = _project(tmp_path)
    with CallingModel() as model:
        env = claude_env(home, data_dir, model.url)
        install(env, "claude", "--mcp")
        run_ok(
            [claude, "--dangerously-skip-permissions", "-p", "Restore my last session here"],
            env,
            project,
        )
    offered = [
        {t.get("name") for t in body.get("tools", []) if isinstance(t, dict)}
        for _path, body in model.requests
    ]
    ours = {f"{PREFIX}{n}" for n in ("list_sessions", "restore_session", "get_messages")}
    # The first request already offers them: nothing deferred, nothing still starting.
    assert offered, "Claude Code sent no request"
    assert ours | {f"{PREFIX}search_log"} <= offered[0], offered
    results = max((_results(body) for _path, body in model.requests), key=len)
    assert len(results) == len(CALLS), "Claude Code sent the tool results back"
    assert not any(r.get("is_error") for r in results), results
    restored, found = (_text(r) for r in results)
    # `latest` is the earlier session, not the `claude -p` session calling the tool.
    assert json.loads(restored)["session"] == SESSION, restored
    assert "Restore my last session here" not in restored
    assert "--shout" in found
    assert "[M" in found  # the hit carries the label a restoration would cite
