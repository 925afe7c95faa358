"""SIGKILL a real `restore` subprocess mid-run against the fake Anthropic server, then resume.

The fake server logs every request it receives. A turn call that was answered is never
sent again; a call in flight at the kill (sent, never answered) is sent once more. The saved
timeline is valid JSON whenever it is read, before and after each kill.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from opencode_restore.pipeline.journal.store import JournalStore
from tests.fakes.process import fake_server_process
from tests.waits import RUNAWAY_S

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "fixtures" / "pi" / "pi-mono" / "large-session.jsonl"
TURNS = 12
#: A turn's call, or one segment's call of a long turn.
_TURN = re.compile(r'<session_log turn="(\d+)"(?: part="(\d+) of \d+")?>')


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    with fake_server_process(tmp_path, latency=0.25) as (url, log, _):
        yield url, log


def _env(tmp_path: Path) -> dict[str, str]:
    return dict(
        os.environ,
        HOME=str(tmp_path),
        OPENCODE_RESTORE_DATA_DIR=str(tmp_path / "data"),
        ANTHROPIC_API_KEY="sk-ant-test",
    )


def _args(base: str, tmp_path: Path, turns: int = TURNS) -> list[str]:
    return [
        sys.executable, "-m", "opencode_restore", "restore", str(LOG),
        "-m", "anthropic:claude-sonnet-4-5", "--base-url", base, "--skip-evidence-search",
        "--max-turns", str(turns), "--format", "json", "-o", str(tmp_path / "out.json"),
    ]  # fmt: skip


def _start(base: str, tmp_path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        _args(base, tmp_path),
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _timeline(tmp_path: Path) -> dict[str, Any] | None:
    """The saved timeline (snapshot and journal), read as a resumed run reads it."""
    directory = tmp_path / "data" / "timelines"
    files = list(directory.glob("*.json"))
    if not files:
        return None
    json.loads(files[0].read_text())  # the snapshot is never torn: it must always parse
    return JournalStore(directory).load(files[0].stem)


def _requests(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _turn_of(request: dict[str, Any]) -> tuple[int, int] | None:
    body = request["body"]
    if body.get("tool_choice", {}).get("name") != "emit_turn_summary":
        return None
    text = "".join(block.get("text", "") for m in body["messages"] for block in m["content"])
    match = _TURN.search(text)
    return (int(match.group(1)), int(match.group(2) or 1)) if match else None


def _kill_after(proc: subprocess.Popen[str], tmp_path: Path, done: int) -> int:
    """SIGKILL ``proc`` once the saved timeline holds ``done`` turns; the turns saved then."""
    deadline = time.monotonic() + RUNAWAY_S
    while True:
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, "the restore made no progress"
        data = _timeline(tmp_path)
        if data is not None and len(data["turns"]) >= done:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
            saved = _timeline(tmp_path)
            assert saved is not None
            return len(saved["turns"])
        time.sleep(0.02)


def test_sigkill_mid_run_then_resume(server: tuple[str, Path], tmp_path: Path) -> None:
    base, log = server
    saved_at_kill = []
    for done in (3, 7):
        saved_at_kill.append(_kill_after(_start(base, tmp_path), tmp_path, done))
    assert saved_at_kill[0] >= 3
    assert saved_at_kill[1] >= 7
    final = _start(base, tmp_path)
    _out, err = final.communicate(timeout=120)
    assert final.returncode == 0, err
    assert "resumed at turn" in err
    result = json.loads((tmp_path / "out.json").read_text())
    assert [t["turn_number"] for t in result["turns"]] == list(range(1, TURNS + 1))
    assert result["timeline"]["turns_reused"] == saved_at_kill[1]

    calls = [t for r in _requests(log) if (t := _turn_of(r)) is not None]
    counts = Counter(calls)
    assert sorted({turn for turn, _part in counts}) == list(range(1, TURNS + 1))
    # Only a call in flight at a kill (the turn after the ones saved) was ever sent twice.
    repeated = {turn for (turn, _part), n in counts.items() if n > 1}
    assert repeated <= {saved_at_kill[0] + 1, saved_at_kill[1] + 1}
    assert all(n <= 2 for n in counts.values())
    synthesis = [
        r
        for r in _requests(log)
        if r["body"].get("tool_choice", {}).get("name") == "emit_session_summary"
    ]
    assert len(synthesis) == 1

    saved = _timeline(tmp_path)
    assert saved is not None
    assert saved["schema"] == "restore.timeline.v1"
    assert len(saved["turn_ids"]) == TURNS
    assert not list((tmp_path / "data" / "timelines").glob(".*.tmp"))

    # A second run over the unchanged log asks nothing; a longer prefix asks only the new turns.
    before = len(_requests(log))
    again = _start(base, tmp_path)
    assert again.wait(timeout=120) == 0
    assert len(_requests(log)) == before
    more = subprocess.run(
        _args(base, tmp_path, TURNS + 2),
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert more.returncode == 0, more.stderr
    new = [t for r in _requests(log)[before:] if (t := _turn_of(r)) is not None]
    assert sorted({turn for turn, _part in new}) == [TURNS + 1, TURNS + 2]
