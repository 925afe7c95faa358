"""Codex 0.171's hooks (``hook --agent codex``, Claude Code's payloads): the restoration once.

Codex keeps a hook's ``additionalContext`` in its history (a developer message in the
rollout) and drops it at a compaction; an ``exec resume`` that compacts fires SessionStart
resume and compact back to back. The payloads are the ones Codex 0.171.0 sent (logged
with a stub hook), at the recorded ``/compact`` rollout.
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

from opencode_restore.hooks.restore import MARK, codex_restored, delivered_path

from ..store.builders import CODEX_COMPACT

SESSION = "01a1fde6-b303-7f63-b067-d32dfaddcad9"
CWD = "/home/dev/src/greet-cli"
DEADLINE = 120


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def rollout(home: Path) -> Path:
    path = home / ".codex/sessions/2026/11/21" / CODEX_COMPACT.name
    path.parent.mkdir(parents=True)
    path.write_bytes(CODEX_COMPACT.read_bytes())
    return path


def _payload(rollout: Path, event: str, **extra: str) -> dict[str, Any]:
    """What Codex 0.171.0 sends (its ``model`` and ``permission_mode`` too)."""
    return {
        "session_id": SESSION,
        "transcript_path": str(rollout),
        "cwd": CWD,
        "hook_event_name": event,
        "model": "fake-model",
        "permission_mode": "bypassPermissions",
        **extra,
    }


def _hook(payload: dict[str, Any], home: Path, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HOME=str(home), OPENCODE_RESTORE_DATA_DIR=str(data_dir))
    env.pop("CODEX_HOME", None)
    return subprocess.run(
        [sys.executable, "-m", "opencode_restore", "hook", "--agent", "codex"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        timeout=DEADLINE,
        check=False,
    )


def _context(out: str, event: str = "SessionStart") -> str:
    answer = json.loads(out)["hookSpecificOutput"]
    assert answer["hookEventName"] == event
    text: str = answer["additionalContext"]
    return text


def _log(data_dir: Path) -> str:
    path = data_dir / "hook.log"
    return path.read_text() if path.exists() else ""


def _codex_keeps(rollout: Path, text: str) -> None:
    """What Codex writes to the rollout after the hook answered: a developer message."""
    item = {
        "timestamp": "2026-11-21T12:00:00.000Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": text}],
        },
    }
    with rollout.open("a") as fh:
        fh.write(json.dumps(item, separators=(",", ":")) + "\n")


def _compacted(rollout: Path) -> None:
    line = {"timestamp": "2026-11-21T12:01:00.000Z", "type": "compacted", "payload": {}}
    with rollout.open("a") as fh:
        fh.write(json.dumps(line, separators=(",", ":")) + "\n")


def test_compact_answers_once_and_a_second_compaction_again(
    home: Path, rollout: Path, data_dir: Path
) -> None:
    result = _hook(_payload(rollout, "SessionStart", source="compact"), home, data_dir)
    assert result.returncode == 0, _log(data_dir)
    context = _context(result.stdout)
    assert context.startswith(f"{MARK} codex session `{SESSION}`"), context[:200]
    assert Path(delivered_path(str(data_dir), "codex", SESSION)).exists()
    # The same compaction's SessionStart again (before Codex wrote the context): nothing.
    again = _hook(_payload(rollout, "SessionStart", source="compact"), home, data_dir)
    assert (again.returncode, again.stdout) == (0, "")
    # Codex keeps it; a resume reloads it: nothing new.
    _codex_keeps(rollout, context)
    resumed = _hook(_payload(rollout, "SessionStart", source="resume"), home, data_dir)
    assert (resumed.returncode, resumed.stdout) == (0, "")
    # A later compaction drops it from the history: answered again.
    _compacted(rollout)
    later = _hook(_payload(rollout, "SessionStart", source="compact"), home, data_dir)
    assert _context(later.stdout).startswith(MARK), _log(data_dir)


def test_resume_then_compact_back_to_back_deliver_one(
    home: Path, rollout: Path, data_dir: Path
) -> None:
    # `codex exec resume` that compacts at once: PreCompact, SessionStart resume, compact.
    assert _hook(_payload(rollout, "PreCompact", trigger="auto"), home, data_dir).stdout == ""
    resumed = _hook(_payload(rollout, "SessionStart", source="resume"), home, data_dir)
    assert _context(resumed.stdout).startswith(MARK), _log(data_dir)
    compact = _hook(_payload(rollout, "SessionStart", source="compact"), home, data_dir)
    assert (compact.returncode, compact.stdout) == (0, "")
    prompt = _hook(_payload(rollout, "UserPromptSubmit", prompt="go on"), home, data_dir)
    assert (prompt.returncode, prompt.stdout) == (0, "")


def test_nothing_to_do_events_answer_nothing_fast(
    home: Path, rollout: Path, data_dir: Path
) -> None:
    for payload in (
        _payload(rollout, "SessionStart", source="startup"),
        _payload(rollout, "UserPromptSubmit", prompt="hello"),
        _payload(rollout, "Stop", stop_hook_active="false"),
    ):
        started = time.monotonic()
        result = _hook(payload, home, data_dir)
        assert (result.returncode, result.stdout) == (0, ""), payload
        assert time.monotonic() - started < 10  # a process each; bench/hook.py times them
    assert _log(data_dir) == ""
    assert not (data_dir / "hooks").exists()  # no restore was started


def test_codex_restored(tmp_path: Path) -> None:
    data_dir = str(tmp_path / "data")
    rollout = tmp_path / "r.jsonl"
    assert not codex_restored(str(rollout), data_dir, SESSION)  # no rollout yet
    rollout.write_bytes(CODEX_COMPACT.read_bytes())
    assert not codex_restored(str(rollout), data_dir, SESSION)
    _codex_keeps(rollout, f"{MARK} codex session")
    assert codex_restored(str(rollout), data_dir, SESSION)
    _compacted(rollout)  # the compaction dropped it
    assert not codex_restored(str(rollout), data_dir, SESSION)
    note = Path(delivered_path(data_dir, "codex", SESSION))
    note.parent.mkdir(parents=True)
    note.write_text(json.dumps({"size": rollout.stat().st_size}))
    assert codex_restored(str(rollout), data_dir, SESSION)  # delivered since
    _compacted(rollout)
    assert not codex_restored(str(rollout), data_dir, SESSION)
