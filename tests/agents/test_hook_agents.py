"""The hooks inside the real Claude Code and Gemini CLI from npm (opt-in, slow).

Each agent runs against a fake model on 127.0.0.1 (``fake_model``; ``fake_gemini`` for the
Gemini API) with a throw-away HOME into which ``opencode-restore install`` wrote the hooks.
The checks are on what the model receives: the first request after a compaction, a clear
or a resume carries the restoration exactly once, and no restoration piles up. Pinned
versions (others are skipped: hook behaviour changes between releases):

    npm install --prefix /tmp/agents-claude @anthropic-ai/claude-code@2.1.332
    npm install --prefix /tmp/agents-gemini @google/gemini-cli@0.61.0
    CLAUDE_BIN=/tmp/agents-claude/node_modules/.bin/claude \\
    GEMINI_BIN=/tmp/agents-gemini/node_modules/.bin/gemini \\
        unshare --net sh -c 'ip link set lo up && pytest --no-cov -p no:cacheprovider tests/agents'

Skipped unless the programs are found (``CLAUDE_BIN`` / ``GEMINI_BIN``, else ``claude`` /
``gemini`` on PATH). Both run with ``-p`` (one prompt per process), continuing the session
with ``--continue`` / ``--resume latest``; slash commands given to ``-p`` run as commands.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.agents.fake_gemini import (
    MODEL,
    OVERFLOW_TOKENS,
    FakeGemini,
    is_chat,
    is_compression,
    last_text,
)
from tests.agents.fake_model import SUMMARY, FakeModel
from tests.agents.test_real_agents import (
    DEADLINE,
    _binary,
    _env,
    _install,
    _project,
    claude_env,
    run_ok,
)

pytestmark = pytest.mark.slow
CLAUDE_VERSION = "2.1.332"
GEMINI_VERSION = "0.61.0"
MARK = "# Restored context: earlier"
FIRST = "Add a --shout flag to greet.py"


def _pinned(binary: str, version: str) -> str:
    out = subprocess.run(
        [binary, "--version"], capture_output=True, text=True, timeout=DEADLINE, check=False
    ).stdout
    if version not in out:
        pytest.skip(f"{binary} is {out.strip()!r}; these checks are pinned to {version}")
    return binary


def _marks(body: dict[str, Any]) -> int:
    return json.dumps(body, ensure_ascii=False).count(MARK)


def _config(home: Path, restore_on: list[str]) -> None:
    config = home / ".config/opencode-restore/config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    # A generous wait for the restore: the default 8 s failed a resume test on a loaded box
    # (the restoration then comes with the next event, not the one the test looks at).
    config.write_text(f"[hooks]\nrestore_on = {json.dumps(restore_on)}\nbudget_seconds = 40\n")


def _quiet_log(data_dir: Path) -> None:
    log = data_dir / "hook.log"
    assert not log.exists() or not log.read_text().strip(), log.read_text()


# -- Claude Code -----------------------------------------------------------------------


class Claude:
    """Claude Code in ``project`` with the hooks installed; ``run`` returns its requests."""

    def __init__(self, tmp_path: Path, model: FakeModel, restore_on: list[str]) -> None:
        self.binary = _pinned(_binary("CLAUDE_BIN", "claude"), CLAUDE_VERSION)
        self.home, self.data_dir = tmp_path / "home", tmp_path / "data"
        self.home.mkdir()
        self.project = _project(tmp_path)
        self.model = model
        _config(self.home, restore_on)
        self.env = claude_env(self.home, self.data_dir, model.url)
        _install("claude", self.env)

    def run(self, *prompt: str) -> list[dict[str, Any]]:
        before = len(self.model.requests)
        run_ok(
            [self.binary, "--dangerously-skip-permissions", "-p", *prompt], self.env, self.project
        )
        return [body for _path, body in self.model.requests[before:]]


def test_claude_code_compact_once_and_continue_adds_none(tmp_path: Path) -> None:
    with FakeModel() as model:
        claude = Claude(tmp_path, model, ["compact", "clear", "resume"])
        first = claude.run(FIRST)
        continued = claude.run("--continue", "Also mention it in the README")
        compaction = claude.run("--continue", "/compact")
        after = claude.run("--continue", "What is next?")
        later = claude.run("--continue", "And then?")
        resumed = claude.run("--resume", _session_of(claude), "Anything left?")
    # Nothing before the compaction: resume/continue reload the conversation.
    assert all(_marks(body) == 0 for body in first + continued + compaction)
    assert after
    assert _marks(after[0]) == 1
    assert SUMMARY in json.dumps(after[0])  # the compaction really happened
    assert FIRST in json.dumps(after[0])  # the restoration of the first turn
    # The reloaded conversation holds that one restoration: none piles up.
    assert [_marks(body) for body in later + resumed] == [1] * len(later + resumed)
    _quiet_log(claude.data_dir)


def _session_of(claude: Claude) -> str:
    (transcript,) = (claude.home / ".claude/projects").glob("*/*.jsonl")
    return transcript.stem


def test_claude_code_clear_gets_the_session_before_it(tmp_path: Path) -> None:
    with FakeModel() as model:
        claude = Claude(tmp_path, model, ["clear"])
        claude.run(FIRST)
        old = _session_of(claude)
        assert claude.run("--continue", "/clear") == []  # -p /clear sends nothing
        after = claude.run("--continue", "What is next?")
        later = claude.run("--continue", "And then?")
    # --continue picks the cleared (newest) session, whose SessionStart(clear) restored
    # the one before it: its first request has it once, and so does the next (reloaded).
    assert after
    assert _marks(after[0]) == 1
    assert f"claude-code session `{old}`" in json.dumps(after[0])
    assert FIRST in json.dumps(after[0])
    assert [_marks(body) for body in later] == [1] * len(later)
    _quiet_log(claude.data_dir)


# -- Gemini CLI ------------------------------------------------------------------------


class Gemini:
    """Gemini CLI in ``project`` with the hooks installed; ``run`` returns its requests."""

    def __init__(self, tmp_path: Path, model: FakeGemini, restore_on: list[str]) -> None:
        self.binary = _pinned(_binary("GEMINI_BIN", "gemini"), GEMINI_VERSION)
        self.home, self.data_dir = tmp_path / "home", tmp_path / "data"
        self.project = _project(tmp_path)
        self.model = model
        settings = self.home / ".gemini/settings.json"
        settings.parent.mkdir(parents=True)
        settings.write_text(
            json.dumps(
                {
                    "security": {
                        "auth": {"selectedType": "gemini-api-key"},
                        "folderTrust": {"enabled": False},
                    },
                    "privacy": {"usageStatisticsEnabled": False},
                    "general": {"disableAutoUpdate": True},
                }
            )
        )
        _config(self.home, restore_on)
        self.env = _env(
            self.home,
            self.data_dir,
            GOOGLE_GEMINI_BASE_URL=model.url,
            GEMINI_API_KEY="fake",
            GEMINI_CLI_NO_RELAUNCH="1",
        )
        _install("gemini", self.env)

    def run(self, *prompt: str) -> list[tuple[str, dict[str, Any]]]:
        before = len(self.model.requests)
        gemini = [self.binary, "--model", MODEL, "--yolo"]
        run_ok([*gemini, *prompt[:-1], "-p", prompt[-1]], self.env, self.project)
        return self.model.requests[before:]

    def interactive(self, *args: str, prompts: tuple[str, ...]) -> list[list[tuple[str, Any]]]:
        """The TUI in a pseudo-terminal: each prompt typed once the one before it reached
        the model; the requests that followed each. (``-p "/compress"`` compresses in the
        background and may exit first: only the TUI compresses for certain.)"""
        import fcntl
        import os
        import pty
        import signal
        import struct
        import termios
        import threading
        import time

        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        proc = subprocess.Popen(
            [self.binary, "--model", MODEL, "--yolo", *args],
            cwd=self.project,
            env={**self.env, "TERM": "xterm-256color"},
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
        )
        os.close(slave)
        screen = bytearray()

        def drain() -> None:
            while True:
                try:
                    data = os.read(master, 1 << 16)
                except OSError:
                    return
                if not data:
                    return
                screen.extend(data)

        def wait(done: Any, what: str) -> None:
            deadline = time.monotonic() + DEADLINE
            while not done():
                assert proc.poll() is None, f"gemini exited: {screen[-2000:]!r}"
                assert time.monotonic() < deadline, f"{what}: {screen[-2000:]!r}"
                time.sleep(0.2)

        threading.Thread(target=drain, daemon=True).start()
        answers: list[list[tuple[str, Any]]] = []
        try:
            wait(lambda: b"Type your message" in screen, "the TUI never became ready")
            time.sleep(1)  # the resumed history is still being drawn
            for prompt in prompts:
                before = len(self.model.requests)
                for char in prompt:
                    os.write(master, char.encode())
                    time.sleep(0.02)
                time.sleep(0.5)
                os.write(master, b"\r")
                compress = prompt == "/compress"

                def done(before: int = before, compress: bool = compress) -> bool:
                    return any(
                        is_compression(body) if compress else is_chat(path, body)
                        for path, body in self.model.requests[before:]
                    )

                wait(done, f"{prompt!r} never reached the model")
                time.sleep(1)  # the rest of its requests
                answers.append(self.model.requests[before:])
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
            os.close(master)
        return answers


def _chats(requests: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [body for path, body in requests if is_chat(path, body)]


def test_gemini_resume_once_per_resume(tmp_path: Path) -> None:
    with FakeGemini() as model:
        gemini = Gemini(tmp_path, model, ["resume"])
        first = _chats(gemini.run(FIRST))
        resumed = _chats(gemini.run("--resume", "latest", "Also mention it in the README"))
        again = _chats(gemini.run("--resume", "latest", "What is next?"))
    assert first
    assert all(_marks(body) == 0 for body in first)
    # The first resume gets one; Gemini keeps it in the history that the second resume
    # reloads, so that one adds none.
    assert [_marks(body) for body in resumed[:1] + again[:1]] == [1, 1]
    assert "Also mention it in the README" in last_text(resumed[0])
    assert FIRST in json.dumps(resumed[0]).split(MARK, 1)[1]  # the restoration names it
    _quiet_log(gemini.data_dir)


def test_gemini_compress_reaches_the_next_request_once(tmp_path: Path) -> None:
    with FakeGemini() as model:
        gemini = Gemini(tmp_path, model, ["compact"])
        gemini.run(FIRST)
        # A request first: Gemini compresses only a history whose size a reply reported.
        prompts = ("Also mention it in the README", "/compress", "What is next?", "And then?")
        _readme, compress, after, later = gemini.interactive("--resume", "latest", prompts=prompts)
    assert any(is_compression(body) for _path, body in compress)
    assert all(_marks(body) == 0 for _path, body in compress)
    first = _chats(after)[0]
    assert _marks(first) == 1
    assert SUMMARY in json.dumps(first)  # the compressed history
    assert "What is next?" in last_text(first)
    assert FIRST in json.dumps(first).split(MARK, 1)[1]
    # Once: the next prompt adds none (the history keeps the one appended before).
    assert all(_marks(body) <= 1 for body in _chats(later))
    _quiet_log(gemini.data_dir)


def test_gemini_auto_compression_reaches_the_next_prompt_once(tmp_path: Path) -> None:
    overflow = "Read greet.py, the history is long now"
    with FakeGemini(overflow=overflow) as model:
        gemini = Gemini(tmp_path, model, ["compact"])
        gemini.run(FIRST)
        # The reply to this prompt's first request reports OVERFLOW_TOKENS: Gemini compresses
        # on its own before the next request (the tool's answer). No hook runs there.
        overflowing = gemini.run("--resume", "latest", overflow)
        after = _chats(gemini.run("--resume", "latest", "What is next?"))
        later = _chats(gemini.run("--resume", "latest", "And then?"))
    assert OVERFLOW_TOKENS > 1_048_576 // 2
    assert sum(is_compression(body) for _path, body in overflowing) >= 1  # summary (+ check)
    chats = _chats(overflowing)
    assert len(chats) == 2
    assert SUMMARY not in json.dumps(chats[0])
    assert SUMMARY in json.dumps(chats[1])  # the tool's answer went with the compressed history
    assert all(_marks(body) == 0 for body in chats)  # no hook runs per request
    # The next prompt's BeforeAgent found the compression in the chat file: once.
    assert after
    assert _marks(after[0]) == 1
    assert "What is next?" in last_text(after[0])
    assert FIRST in json.dumps(after[0]).split(MARK, 1)[1]
    # Later prompts carry the one kept in the history, and no other.
    assert later
    assert [_marks(body) for body in later] == [1] * len(later)
    _quiet_log(gemini.data_dir)


def test_gemini_clear_gets_the_session_before_it(tmp_path: Path) -> None:
    with FakeGemini() as model:
        gemini = Gemini(tmp_path, model, ["clear"])
        gemini.run(FIRST)
        cleared = _chats(gemini.run("--resume", "latest", "/clear"))
    # -p "/clear" clears, then sends the text itself: the first request of the new session.
    assert cleared
    assert _marks(cleared[0]) == 1
    assert FIRST in json.dumps(cleared[0]).split(MARK, 1)[1]
    _quiet_log(gemini.data_dir)


def test_an_unwritable_data_dir_is_shown_by_both_agents(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("")  # a data dir under a file cannot be made
    said = "opencode-restore hook: cannot write the store in"
    (tmp_path / "claude").mkdir()
    (tmp_path / "gemini").mkdir()
    with FakeModel() as model:
        claude = Claude(tmp_path / "claude", model, ["compact"])
        claude.env["OPENCODE_RESTORE_DATA_DIR"] = str(blocker / "data")
        shown = subprocess.run(
            [claude.binary, "--dangerously-skip-permissions", "-p", FIRST],
            cwd=claude.project,
            env=claude.env,
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            check=False,
        )
    assert shown.returncode == 0  # the agent goes on
    assert said in shown.stderr  # Claude Code prints the failed hook's one line
    assert "Traceback" not in shown.stderr
    with FakeGemini() as gemini_model:
        gemini = Gemini(tmp_path / "gemini", gemini_model, ["compact"])
        gemini.env["OPENCODE_RESTORE_DATA_DIR"] = str(blocker / "data")
        shown = subprocess.run(
            [gemini.binary, "--model", MODEL, "--yolo", "-p", FIRST],
            cwd=gemini.project,
            env=gemini.env,
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            check=False,
        )
    assert shown.returncode == 0
    assert f"Warning: {said}" in shown.stderr  # Gemini CLI's hook warning
    assert "Traceback" not in shown.stderr
