"""`opencode-restore nightly`: dated output, store records, idempotence, lock, --dry-run."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from opencode_restore.batch.nightly import NightlyBusy, nightly_lock
from opencode_restore.cli import cli
from tests.waits import RUNAWAY_S

from .helpers import ROOT, cli_env, read_manifest, server_process

CLAUDE = ROOT / "fixtures" / "claude-code" / "recorded"
FILES = sorted(CLAUDE.glob("*/*.jsonl"))


#: The frozen nightly clock of ``tests/conftest.py`` (a test moves it by setting ``[0]``).
Clock = list[datetime]


def _day(clock: Clock) -> str:
    """The dated folder a nightly run at ``clock`` writes to (local date, as the run names it)."""
    return clock[0].astimezone().strftime("%Y-%m-%d")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A private data dir and home, and sessions under ``root`` in Claude Code's layout."""
    for k, f in enumerate(FILES):
        target = tmp_path / "root" / ".claude" / "projects" / f"-p{k}"
        target.mkdir(parents=True)
        shutil.copy(f, target / f.name)
    return cli_env(tmp_path / "data")


def _nightly(env: dict[str, str], tmp: Path, *args: str) -> tuple[int, str]:
    result = CliRunner(env=env).invoke(
        cli, ["nightly", "--root", str(tmp / "root"), "--out", str(tmp / "out"), *args]
    )
    return result.exit_code, result.output


def _snapshot(tmp: Path) -> tuple[list[tuple[str, int, bytes]], int, tuple[int, str | None]]:
    files = sorted(
        (str(p.relative_to(tmp)), p.stat().st_mtime_ns, p.read_bytes())
        for base in (tmp / "out", tmp / "data" / "nightly")
        if base.exists()
        for p in base.rglob("*")
        if p.is_file()
    )
    conn = sqlite3.connect(tmp / "data" / "store.sqlite3")
    try:
        restorations = conn.execute("SELECT COUNT(*) FROM restorations").fetchone()[0]
        runs = conn.execute("SELECT COUNT(*), MAX(finished_at) FROM runs").fetchone()
    finally:
        conn.close()
    return files, restorations, runs


def test_first_run_restores_into_a_dated_folder_and_the_store(
    env: dict[str, str], tmp_path: Path, clock: Clock
) -> None:
    code, output = _nightly(env, tmp_path, "-q")
    assert code == 0, output
    day = _day(clock)
    folder = tmp_path / "out" / day
    lines = read_manifest(folder / "manifest.jsonl")
    assert sorted(line["session"] for line in lines) == sorted(f.stem for f in FILES)
    assert {line["status"] for line in lines} == {"done"}
    for f in FILES:
        assert (folder / f"{f.stem}.md").read_text().startswith("# SESSION SUMMARY")
    assert all(isinstance(line["restoration_id"], int) for line in lines)
    conn = sqlite3.connect(tmp_path / "data" / "store.sqlite3")
    try:
        stored = conn.execute("SELECT session_id FROM restorations ORDER BY session_id").fetchall()
        runs = conn.execute(
            "SELECT session_id, status FROM runs WHERE kind = 'nightly' ORDER BY session_id"
        ).fetchall()
    finally:
        conn.close()
    assert [s for (s,) in stored] == sorted(f.stem for f in FILES)
    assert runs == [
        (None, "done"),
        *[(f.stem, "done") for f in sorted(FILES, key=lambda f: f.stem)],
    ]


def test_twice_changes_nothing_then_a_grown_log_is_restored_alone(
    env: dict[str, str], tmp_path: Path
) -> None:
    assert _nightly(env, tmp_path, "-q")[0] == 0
    before = _snapshot(tmp_path)
    code, output = _nightly(env, tmp_path)
    assert code == 0
    assert f"{len(FILES)} sessions up to date" in output
    assert _snapshot(tmp_path) == before

    grown = next((tmp_path / "root").rglob(FILES[0].name))
    with grown.open("a") as fh:
        fh.write(FILES[0].read_text().splitlines()[-1] + "\n")
    code, output = _nightly(env, tmp_path, "-q")
    assert code == 0, output
    lines = read_manifest(tmp_path / "data" / "nightly" / "state.jsonl")
    assert [line["session"] for line in lines[len(FILES) :]] == [FILES[0].stem]
    assert _snapshot(tmp_path)[1] == before[1] + 1  # one more restoration stored


def test_dry_run_lists_and_writes_nothing(env: dict[str, str], tmp_path: Path) -> None:
    code, output = _nightly(env, tmp_path, "--dry-run")
    assert code == 0, output
    assert f"would restore {len(FILES)} sessions (0 unchanged)" in output
    for f in FILES:
        assert f.stem[:8] in output
    assert "new" in output
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").rglob("*.sqlite3"))
    assert not (tmp_path / "data" / "nightly.lock").exists()

    assert _nightly(env, tmp_path, "-q")[0] == 0
    grown = next((tmp_path / "root").rglob(FILES[0].name))
    with grown.open("a") as fh:
        fh.write("\n")
    before = _snapshot(tmp_path)
    code, output = _nightly(env, tmp_path, "--dry-run")
    assert code == 0
    assert f"would restore 1 session ({len(FILES) - 1} unchanged)" in output
    assert "changed" in output
    assert _snapshot(tmp_path) == before


def test_a_held_lock_stops_a_second_run(env: dict[str, str], tmp_path: Path) -> None:
    data = tmp_path / "data"
    with nightly_lock(data) as lock:
        code, output = _nightly(env, tmp_path)
        assert code == 75
        assert "another nightly run is in progress (pid" in output
        assert str(lock) in output
        with pytest.raises(NightlyBusy), nightly_lock(data):
            pass
    assert not (tmp_path / "out").exists()
    # Released with the holder: the next run goes ahead.
    assert _nightly(env, tmp_path, "-q")[0] == 0


@pytest.mark.slow
def test_two_real_processes_contend_for_the_lock(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for k, f in enumerate(FILES):
        (root / f"p{k}").mkdir(parents=True)
        shutil.copy(f, root / f"p{k}" / f.name)
    env = cli_env(tmp_path / "data")
    # The server holds every reply until the gate opens, so the first run is still inside
    # its lock when the second one starts, however slowly the second process starts.
    gate = tmp_path / "gate"
    with server_process(tmp_path, gate=gate) as (url, _log, _server):
        cmd = [sys.executable, "-m", "opencode_restore", "nightly", "--root", str(root)]
        cmd += ["--out", str(tmp_path / "out"), "-m", "openai:fake", "--base-url", url]
        # Every session is in the window whatever this process's clock says: the window is
        # not what this test is about, the lock is.
        cmd += ["--skip-evidence-search", "-q", "--since", "36500d"]
        first = subprocess.Popen(cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE)
        holder = tmp_path / "data" / "nightly.holder"
        deadline = time.monotonic() + RUNAWAY_S
        while not (holder.exists() and holder.read_text().startswith("pid")):
            assert time.monotonic() < deadline
            assert first.poll() is None
            time.sleep(0.02)
        second = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert second.returncode == 75
        assert f"pid {first.pid}" in second.stderr
        assert "Nothing done." in second.stderr
        gate.touch()
        assert first.wait(120) == 0


def test_bad_since_is_a_usage_error(env: dict[str, str], tmp_path: Path) -> None:
    code, output = _nightly(env, tmp_path, "--since", "yesterday")
    assert code == 2
    assert "Invalid value for '--since': 'yesterday': expected an ISO 8601 time" in output


def test_old_sessions_are_outside_the_window(
    env: dict[str, str], tmp_path: Path, clock: Clock
) -> None:
    old = (clock[0] - timedelta(days=3)).timestamp()
    for p in (tmp_path / "root").rglob("*.jsonl"):
        os.utime(p, (old, old))
    code, output = _nightly(env, tmp_path, "--dry-run")
    assert code == 0
    assert "would restore 0 sessions" in output
    code, output = _nightly(env, tmp_path, "--dry-run", "--since", "4d")
    assert code == 0
    assert f"would restore {len(FILES)} sessions" in output
    # The same windows given as times: one meaning for --since across commands.
    for days, count in ((2, 0), (4, len(FILES))):
        when = (clock[0] - timedelta(days=days)).isoformat()
        code, output = _nightly(env, tmp_path, "--dry-run", "--since", when)
        assert (code, f"would restore {count} sessions" in output) == (0, True), output


def test_a_since_time_still_to_come_is_a_usage_error(
    env: dict[str, str], tmp_path: Path, clock: Clock
) -> None:
    code, output = _nightly(env, tmp_path, "--since", (clock[0] + timedelta(hours=1)).isoformat())
    assert code == 2
    assert "that time is not in the past" in output


def test_opencode_sessions_and_vanished_files(
    env: dict[str, str], tmp_path: Path, clock: Clock
) -> None:
    source = ROOT / "fixtures" / "opencode" / "recorded" / "tui-compact"
    shutil.copytree(source, tmp_path / "root" / "oc")
    # The session's own update time (not the file's) decides: an hour before "now".
    updated = json.loads((source / "export.json").read_text())["info"]["time"]["updated"]
    clock[0] = datetime.fromtimestamp(updated / 1000, UTC) + timedelta(hours=1)
    code, output = _nightly(env, tmp_path, "--dry-run")
    assert code == 0
    assert "ses_e021ac976ffeprCgfn115CWSLu" in output
    assert _nightly(env, tmp_path, "-q")[0] == 0
    day = _day(clock)
    assert (tmp_path / "out" / day / "ses_e021ac976ffeprCgfn115CWSLu.md").is_file()
    # A session whose file is gone is skipped with a warning, not failed.
    gone = next((tmp_path / "root").rglob(FILES[0].name))
    gone.unlink()
    code, output = _nightly(env, tmp_path)
    assert code == 0
    assert f"{FILES[0].stem}: no transcript file of this session exists any more" in output


def test_the_report_is_titled_nightly_and_names_the_output_folder(
    env: dict[str, str], tmp_path: Path, clock: Clock
) -> None:
    code, output = _nightly(env, tmp_path)
    assert code == 0, output
    lines = output.splitlines()
    assert any(line.strip() == "nightly" for line in lines), output
    assert not any(line.strip() == "batch" for line in lines)
    assert f"outputs: {tmp_path / 'out' / _day(clock)}" in output
