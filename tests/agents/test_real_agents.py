"""The hook answer against the real Claude Code from npm (opt-in, slow), and the helpers
of the other agent tests (the opencode plugin and the pi extension: ``test_plugin_agents``).

Runs Claude Code (``@anthropic-ai/claude-code``) against a fake model on 127.0.0.1
(``fake_model``), with a throw-away HOME into which ``opencode-restore install`` wrote the
hooks, and checks that after a compaction the next request the model receives carries the
restoration. Skipped unless the program is found: ``CLAUDE_BIN``, else ``claude`` on PATH.
To run it:

    npm install --prefix /tmp/agents @anthropic-ai/claude-code
    CLAUDE_BIN=/tmp/agents/node_modules/.bin/claude pytest --no-cov tests/agents

Offline for certain (as root): ``unshare --net sh -c 'ip link set lo up && pytest ...'``;
the fake model and the agents then share a network namespace holding only loopback.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.agents.fake_model import SUMMARY, FakeModel

pytestmark = pytest.mark.slow
DEADLINE = 240
MARK = "# Restored context: earlier"


def _binary(env_name: str, name: str) -> str:
    found = os.environ.get(env_name) or shutil.which(name)
    if not found or not os.access(found, os.X_OK):
        pytest.skip(f"{name} not installed (set {env_name}; see this module's docstring)")
    return found


def _env(home: Path, data_dir: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, HOME=str(home), OPENCODE_RESTORE_DATA_DIR=str(data_dir), **extra)
    # The hook and the plugin run this checkout's CLI: the interpreter's bin first on PATH.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for key in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "ANTHROPIC_AUTH_TOKEN"):
        env.pop(key, None)
    return env


def claude_env(home: Path, data_dir: Path, model_url: str) -> dict[str, str]:
    """Claude Code's environment: the fake model, no traffic of its own, root allowed."""
    return _env(
        home,
        data_dir,
        ANTHROPIC_BASE_URL=model_url,
        ANTHROPIC_API_KEY="sk-ant-fake-00000000000000000000000000",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_ERROR_REPORTING="1",
        IS_SANDBOX="1",  # lets --dangerously-skip-permissions run as root
    )


def run_ok(
    args: list[str], env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a program (an agent, this CLI) to its end within the deadline; it must succeed."""
    result = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=DEADLINE, check=False
    )
    assert result.returncode == 0, result.stderr
    return result


def install(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``opencode-restore install ARGS`` of this checkout, in the test's HOME."""
    return run_ok([sys.executable, "-m", "opencode_restore", "install", *args], env)


def _install(agent: str, env: dict[str, str]) -> None:
    install(env, agent, "--user")


def _project(root: Path) -> Path:
    project = root / "proj"
    project.mkdir()
    (project / "greet.py").write_text('print("Hello, world!")\n')
    subprocess.run(["git", "init", "-q"], cwd=project, check=True, timeout=DEADLINE)
    return project


def _carries(body: dict[str, Any], text: str) -> bool:
    return text in json.dumps(body, ensure_ascii=False)


def test_claude_code_compact_gets_the_restoration(tmp_path: Path) -> None:
    claude = _binary("CLAUDE_BIN", "claude")
    home, data_dir = tmp_path / "home", tmp_path / "data"
    home.mkdir()
    project = _project(tmp_path)
    # Only the compaction answers, so a restoration in a request comes from /compact.
    config = home / ".config/opencode-restore/config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[hooks]\nrestore_on = ["compact"]\nbudget_seconds = 40\n')  # a loaded box
    with FakeModel() as model:
        env = claude_env(home, data_dir, model.url)
        _install("claude", env)
        sent: list[int] = []
        for prompt in (
            ["Add a --shout flag to greet.py"],
            ["--continue", "Also mention it in the README"],
            ["--continue", "/compact"],
            ["--continue", "What is next?"],
        ):
            sent.append(len(model.requests))
            run_ok([claude, "--dangerously-skip-permissions", "-p", *prompt], env, project)
    before_compact = model.requests[: sent[3]]
    after_compact = model.requests[sent[3] :]
    assert not any(_carries(body, MARK) for _path, body in before_compact)
    assert after_compact, "Claude Code sent nothing after the compaction"
    first = after_compact[0][1]
    assert _carries(first, SUMMARY)  # the compaction really happened
    assert _carries(first, MARK)
    assert _carries(first, "Add a --shout flag to greet.py")
    log = data_dir / "hook.log"
    assert not log.exists() or not log.read_text().strip(), log.read_text()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _call(port: int, method: str, path: str, body: Any = None, timeout: float = DEADLINE) -> Any:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=timeout) as reply:
        raw = reply.read()
    return json.loads(raw) if raw else None


def _stored(data_dir: Path, session: str) -> tuple[str, str] | None:
    """The store's (agent, last event) of ``session``."""
    if not (data_dir / "store.sqlite3").exists():
        return None
    db = sqlite3.connect(data_dir / "store.sqlite3")
    try:
        row = db.execute(
            "SELECT agent, last_event FROM sessions WHERE id = ?", (session,)
        ).fetchone()
    finally:
        db.close()
    return None if row is None else (row[0], row[1])
