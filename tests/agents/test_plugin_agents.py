"""The opencode plugin and the pi extension inside the real agents from npm (opt-in, slow).

Each agent runs against a fake model on 127.0.0.1 (``fake_model``: OpenAI Chat Completions
for both) with a throw-away HOME into which ``opencode-restore install`` wrote the plugin /
the extension. The checks are on what the model receives. Pinned versions (others are
skipped: plugin APIs change between releases):

    npm install --prefix /tmp/agents-opencode opencode-ai@1.18.33
    npm install --prefix /tmp/agents-pi @mariozechner/pi-coding-agent@0.73.1
    OPENCODE_BIN=/tmp/agents-opencode/node_modules/.bin/opencode \\
    PI_BIN=/tmp/agents-pi/node_modules/.bin/pi \\
        unshare --net sh -c "ip link set lo up && pytest --no-cov tests/agents"

Skipped unless the programs are found (``OPENCODE_BIN`` / ``PI_BIN``, else ``opencode`` /
``pi`` on PATH). opencode runs as ``opencode serve`` (its HTTP API: messages, then
``summarize``); pi as ``pi --mode rpc`` (JSON lines: ``prompt``, ``compact``).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pytest

from tests.agents.fake_model import SUMMARY, FakeModel
from tests.agents.test_real_agents import (
    DEADLINE,
    _binary,
    _call,
    _carries,
    _env,
    _free_port,
    _install,
    _project,
    _stored,
)

pytestmark = pytest.mark.slow
OPENCODE_VERSION = "1.18.33"
PI_VERSION = "0.73.1"
MARK = "# Restored context: earlier"
#: opencode must answer its API this soon after it starts. Generous (a start takes 2-7 s
#: here); it catches the npm install that once held every offline start up 70-75 s.
START_DEADLINE = 60
CHOSEN = {"providerID": "fakeai", "modelID": "fake-model"}


def _pinned(binary: str, version: str) -> str:
    out = subprocess.run(
        [binary, "--version"], capture_output=True, text=True, timeout=DEADLINE, check=False
    )
    found = (out.stdout + out.stderr).strip()
    if version not in found:
        pytest.skip(f"{binary} is {found!r}; these checks are pinned to {version}")
    return binary


def _marks(body: dict[str, Any]) -> int:
    return json.dumps(body, ensure_ascii=False).count(MARK)


# -- opencode --------------------------------------------------------------------------


def _opencode_env(home: Path, data_dir: Path, model_url: str) -> dict[str, str]:
    env = _env(
        home,
        data_dir,
        OPENCODE_DISABLE_AUTOUPDATE="1",
        OPENCODE_DISABLE_MODELS_FETCH="1",
        OPENCODE_DISABLE_LSP_DOWNLOAD="1",
        OPENCODE_DISABLE_DEFAULT_PLUGINS="1",
        OPENCODE_DISABLE_SHARE="1",
        OPENCODE_DISABLE_CLAUDE_CODE="1",
    )
    config = home / ".config/opencode/opencode.json"
    config.parent.mkdir(parents=True)
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "fake",
        "options": {"baseURL": f"{model_url}/v1", "apiKey": "fake"},
        "models": {"fake-model": {"name": "fake"}},
    }
    config.write_text(json.dumps({"provider": {"fakeai": provider}, "model": "fakeai/fake-model"}))
    return env


@contextmanager
def _opencode_serve(opencode: str, project: Path, env: dict[str, str], log: Path) -> Iterator[int]:
    """``opencode serve`` on a free port, once it answers its API (within START_DEADLINE)."""
    port = _free_port()
    with log.open("a") as out:
        started = time.monotonic()
        server = subprocess.Popen(
            [opencode, "serve", "--port", str(port), "--hostname", "127.0.0.1"],
            cwd=project,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            # The first call waits for the instance (plugins included) to load.
            while True:
                try:
                    _call(port, "GET", "/session", timeout=5)
                    break
                except OSError:
                    assert time.monotonic() - started < START_DEADLINE, "start held up"
                    time.sleep(0.2)
            yield port
        finally:
            server.terminate()
            server.wait(timeout=30)


def _say(port: int, session: str, text: str) -> None:
    part = {"type": "text", "text": text}
    _call(port, "POST", f"/session/{session}/message", {"parts": [part], **CHOSEN})


def test_opencode_compaction_and_the_requests_after_carry_the_restoration(
    tmp_path: Path,
) -> None:
    opencode = _pinned(_binary("OPENCODE_BIN", "opencode"), OPENCODE_VERSION)
    home, data_dir = tmp_path / "home", tmp_path / "data"
    home.mkdir()
    # The restarted plugin waits for its restore at most the hooks' budget, read from the
    # user's config file: generous here (an offline restore takes ~5 s, more on a busy box).
    config = home / ".config/opencode-restore/config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[hooks]\nbudget_seconds = 40\n")
    project = _project(tmp_path)
    log = tmp_path / "opencode.log"
    with FakeModel() as model:
        env = _opencode_env(home, data_dir, model.url)
        _install("opencode", env)
        with _opencode_serve(opencode, project, env, log) as port:
            session = _call(port, "POST", "/session", {})["id"]
            _say(port, session, "Add a --shout flag to greet.py")
            _say(port, session, "Also mention it in the README")
            before = len(model.requests)
            assert _call(port, "POST", f"/session/{session}/summarize", CHOSEN) is True
            compacted = len(model.requests)
            _say(port, session, "What is next?")
            _say(port, session, "And after that?")
            # session.compacted reaches the plugin as an event, after the reply.
            deadline = time.monotonic() + DEADLINE
            while _stored(data_dir, session) != ("opencode", "session.compacted"):
                assert time.monotonic() < deadline, "session.compacted was never recorded"
                time.sleep(0.2)
        stopped = len(model.requests)
        # A new opencode process on the same data: the plugin holds nothing for the session.
        with _opencode_serve(opencode, project, env, log) as port:
            _say(port, session, "After the restart, what is left?")
    assert not any(_carries(body, MARK) for _path, body in model.requests[:before])
    compaction = model.requests[before][1]
    assert _marks(compaction) == 1
    assert _carries(compaction, f"opencode session `{session}`")
    after = [b for _p, b in model.requests[compacted:stopped] if _carries(b, "What is next?")]
    assert len(after) == 2, "two requests after the compaction"
    for body in after:
        assert _carries(body, SUMMARY)  # the compaction really happened
        assert _marks(body) == 1  # the restoration, once, in each request after it
        assert _carries(body, "Add a --shout flag to greet.py")
    restarted = [b for _p, b in model.requests[stopped:] if _carries(b, "what is left?")]
    assert restarted, "no request after the restart"
    first = restarted[0]  # the first request after the restart waited for its restore
    assert _carries(first, SUMMARY)
    assert _marks(first) == 1
    assert _carries(first, "Add a --shout flag to greet.py")


# -- pi --------------------------------------------------------------------------------


class Rpc:
    """``pi --mode rpc``: one JSON command a line in, events and responses a line out."""

    def __init__(self, proc: subprocess.Popen[str], transcript: IO[str]) -> None:
        self.proc = proc
        self.transcript = transcript

    def send(self, command: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()

    def until(self, kind: str, command: str | None = None) -> dict[str, Any]:
        """Read up to the first event of ``kind`` (a ``response`` to ``command``)."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.transcript.write(line)
            event: dict[str, Any] = json.loads(line)
            if event.get("type") == kind and (command is None or event.get("command") == command):
                return event
        raise AssertionError(f"pi ended before {kind} {command or ''}")


def test_pi_compaction_carries_the_restoration(tmp_path: Path) -> None:
    pi = _pinned(_binary("PI_BIN", "pi"), PI_VERSION)
    home, data_dir = tmp_path / "home", tmp_path / "data"
    home.mkdir()
    project = _project(tmp_path)
    with FakeModel() as model:
        env = _env(home, data_dir, PI_OFFLINE="1", PI_SKIP_VERSION_CHECK="1")
        env.pop("PI_CODING_AGENT_DIR", None)
        agent_dir = home / ".pi/agent"
        agent_dir.mkdir(parents=True)
        provider = {
            "baseUrl": f"{model.url}/v1",
            "api": "openai-completions",
            "apiKey": "fake",
            "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
            "models": [{"id": "fake-model"}],
        }
        (agent_dir / "models.json").write_text(json.dumps({"providers": {"fakeai": provider}}))
        _install("pi", env)
        assert (agent_dir / "extensions/opencode-restore.ts").is_file()
        transcript = (tmp_path / "rpc.jsonl").open("w")
        proc = subprocess.Popen(
            [pi, "--mode", "rpc", "--provider", "fakeai", "--model", "fake-model"],
            cwd=project,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=(tmp_path / "pi.err").open("w"),
            text=True,
        )
        rpc = Rpc(proc, transcript)
        try:
            for text in ("Add a --shout flag to greet.py", "Also mention it in the README"):
                rpc.send({"type": "prompt", "message": text})
                rpc.until("agent_end")
            before = len(model.requests)
            rpc.send({"type": "compact"})
            done = rpc.until("response", "compact")
            assert done.get("success"), done
            compacted = len(model.requests)
            rpc.send({"type": "prompt", "message": "What is next?"})
            rpc.until("agent_end")
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
            transcript.close()
    assert not any(_carries(body, MARK) for _path, body in model.requests[:before])
    compaction = [body for _path, body in model.requests[before:compacted]]
    assert len(compaction) == 1, "one summary request"
    assert _marks(compaction[0]) == 1
    assert _carries(compaction[0], "earlier pi session")
    assert _carries(compaction[0], "Add a --shout flag to greet.py")
    # The summary the model wrote from it is what pi keeps for the requests after.
    after = model.requests[compacted][1]
    assert _carries(after, SUMMARY)
    assert _carries(after, "What is next?")
