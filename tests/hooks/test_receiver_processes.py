"""The hook as agents run it: real processes, many at once, on a store that does not exist yet."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ..store.builders import HOOKS

SESSION = "e57fea98-e10e-4cce-a470-5de2e7413154"


def _base_payload() -> dict[str, object]:
    line = (HOOKS / "tui-compact/hooks_stdin.jsonl").read_text().splitlines()[0]
    return dict(json.loads(line))


def _env(data_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["OPENCODE_RESTORE_DATA_DIR"] = str(data_dir)
    env["HOME"] = "/home/dev"  # the recorded payloads' transcripts are in that home
    return env


@pytest.mark.slow
@pytest.mark.parametrize(
    "entry", [["-m", "opencode_restore", "hook"], ["-m", "opencode_restore.hooks"]]
)
def test_fifty_hook_processes_lose_no_chain_entry(tmp_path: Path, entry: list[str]) -> None:
    data_dir = tmp_path / "data"
    base = _base_payload()
    procs = []
    for k in range(50):
        payload = dict(base, transcript_path=f"/home/dev/.claude/projects/-p/part-{k:02d}.jsonl")
        if k % 10 == 9:
            payload["session_id"] = f"other-{k}"  # a few other sessions interleave
        p = subprocess.Popen(
            [sys.executable, *entry],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(data_dir),
        )
        procs.append((p, json.dumps(payload).encode()))
    # Feed them only once all are running, so their writes really overlap.
    outs = [p.communicate(data, timeout=120) for p, data in procs]
    assert [p.returncode for p, _ in procs] == [0] * 50
    assert all(out == b"" for out, _err in outs)  # nothing on stdout: the agent reads it
    assert not (data_dir / "hook.log").exists()
    conn = sqlite3.connect(data_dir / "store.sqlite3")
    rows = conn.execute(
        "SELECT position, path FROM transcript_files WHERE session_id = ? ORDER BY position",
        (SESSION,),
    ).fetchall()
    expected = {
        f"/home/dev/.claude/projects/-p/part-{k:02d}.jsonl" for k in range(50) if k % 10 != 9
    }
    assert [r[0] for r in rows] == list(range(45))
    assert {r[1] for r in rows} == expected
    native = conn.execute(
        "SELECT native_log_file FROM sessions WHERE id = ?", (SESSION,)
    ).fetchone()
    assert native[0] == rows[-1][1]
    assert conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 6
    conn.close()


def test_codex_notify_argument_through_the_cli(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    payload = json.dumps({"type": "agent-turn-complete", "thread-id": "T-1", "cwd": "/w"})
    env = _env(data_dir)
    env["CODEX_HOME"] = str(tmp_path / "codex")
    out = subprocess.run(
        [sys.executable, "-m", "opencode_restore", "hook", "--agent", "codex", payload],
        capture_output=True,
        env=env,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert (out.returncode, out.stdout) == (0, b"")
    conn = sqlite3.connect(data_dir / "store.sqlite3")
    assert conn.execute("SELECT id, agent, cwd FROM sessions").fetchall() == [
        ("T-1", "codex", "/w")
    ]
    conn.close()
    assert "no transcript path found" in (data_dir / "hook.log").read_text()


def test_garbage_never_fails_the_agent(tmp_path: Path) -> None:
    for args, stdin in (
        (["hook"], b"\xff\xfe not json"),
        (["hook", "--bogus-flag"], b"{}"),
        (["hook", "--agent", "codex", "{"], b""),
    ):
        out = subprocess.run(
            [sys.executable, "-m", "opencode_restore", *args],
            input=stdin,
            capture_output=True,
            env=_env(tmp_path / "data"),
            timeout=60,
        )
        assert out.returncode == 0, (args, out.stderr)
        assert out.stdout == b""
