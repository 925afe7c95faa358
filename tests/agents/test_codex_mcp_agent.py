"""``opencode-restore mcp`` inside the real Codex CLI from npm (opt-in, slow).

``install codex --mcp`` adds the server to a throw-away HOME's ``~/.codex/config.toml``,
beside a provider that is the fake model's Responses API on 127.0.0.1
(``fake_responses``). ``codex exec`` starts the server itself; it does not wait for MCP
servers before its first model request, so the tools are there only because the server
answers its handshake at once. The fake model calls ``restore_session`` with ``latest``
(which must be the earlier session, not the ``codex exec`` session asking), then
``search_log``; the request after each carries the answer. Skipped unless Codex is found
(``CODEX_BIN``, else ``codex`` on PATH). Checked with Codex 0.171.0:

    npm install --prefix /tmp/agents-codex @openai/codex@0.171.0
    CODEX_BIN=/tmp/agents-codex/node_modules/.bin/codex pytest --no-cov tests/agents

Offline for certain (as root): ``unshare --net sh -c 'ip link set lo up && pytest ...'``.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.agents.fake_responses import (
    ResponsesModel,
    call_item,
    codex_config,
    function_outputs,
    tool_names,
)
from tests.agents.test_real_agents import _binary, _env, _project, install, run_ok
from tests.batch.helpers import CLAUDE_3_TURNS

pytestmark = pytest.mark.slow
NAMESPACE = "mcp__opencode_restore"
SESSION = CLAUDE_3_TURNS.stem
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("restore_session", {"session": "latest"}),
    ("search_log", {"session": SESSION[:8], "pattern": "--shout"}),
]


class CallingModel(ResponsesModel):
    """Answers each request that offers our tools with the next of `CALLS`."""

    def items(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        done = len(function_outputs(body))
        if f"{NAMESPACE}.search_log" in tool_names(body) and done < len(CALLS):
            name, arguments = CALLS[done]
            return [call_item(name, arguments, namespace=NAMESPACE)]
        return super().items(body)


def _output(item: dict[str, Any]) -> str:
    """The tool's answer in a ``function_call_output`` (Codex puts a wall-time header
    before it)."""
    output = item.get("output")
    text = output if isinstance(output, str) else json.dumps(output)
    return text.split("Output:\n", 1)[-1]


def test_codex_exec_starts_the_server_and_restores_the_earlier_session(tmp_path: Path) -> None:
    codex = _binary("CODEX_BIN", "codex")
    home, data_dir = tmp_path / "home", tmp_path / "data"
    sessions = home / ".claude" / "projects" / "-home-dev-greet"
    sessions.mkdir(parents=True)
    shutil.copy(CLAUDE_3_TURNS, sessions / CLAUDE_3_TURNS.name)
    hour_ago = time.time() - 3600  # an earlier session, not one being written
    os.utime(sessions / CLAUDE_3_TURNS.name, (hour_ago, hour_ago))
    project = _project(tmp_path)
    with CallingModel() as model:
        env = _env(home, data_dir, FAKE_API_KEY="fake")
        env.pop("CODEX_HOME", None)
        config = home / ".codex" / "config.toml"
        config.parent.mkdir(parents=True)
        config.write_text(codex_config(model.url))
        install(env, "codex", "--mcp")
        run_ok(
            [codex, "exec", "--skip-git-repo-check", "Restore my last session here"], env, project
        )
    bodies = [body for path, body in model.requests if path.split("?")[0].endswith("/responses")]
    assert bodies, "Codex sent no request"
    # The first request already offers the tools: the handshake was answered in time.
    assert {f"{NAMESPACE}.{n}" for n, _ in CALLS} <= tool_names(bodies[0])
    outputs = max((function_outputs(body) for body in bodies), key=len)
    assert len(outputs) == len(CALLS), outputs
    restored, found = (_output(item) for item in outputs)
    # `latest` is the earlier session, not the `codex exec` session calling the tool.
    assert json.loads(restored)["session"] == SESSION, restored
    assert "Restore my last session here" not in restored
    assert "--shout" in found
    assert "[M" in found  # the hit carries the label a restoration would cite
