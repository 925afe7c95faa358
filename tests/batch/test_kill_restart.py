"""SIGKILL in the middle of a real batch process, then a restart: nothing redone, nothing lost."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.waits import RUNAWAY_S

from .helpers import ROOT, calls_per_session, cli_env, make_sessions, read_manifest, server_process

SESSIONS = 12


def _batch(inputs: Path, out: Path, url: str, data: Path) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "opencode_restore", "batch", str(inputs), "--out", str(out)]
    cmd += ["-m", "openai:fake", "--base-url", url, "--skip-evidence-search", "--concurrency", "3"]
    return subprocess.Popen(
        cmd, cwd=ROOT, env=cli_env(data), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def _bodies(log: Path) -> list[object]:
    return [json.loads(line)["body"] for line in log.read_text().splitlines() if line.strip()]


@pytest.mark.slow
def test_sigkill_then_restart_redoes_nothing_and_loses_nothing(tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    make_sessions(inputs, SESSIONS)
    out, data = tmp_path / "out", tmp_path / "data"
    manifest = out / "manifest.jsonl"
    with server_process(tmp_path, latency=0.1) as (url, log, _server):
        first = _batch(inputs, out, url, data)
        deadline = time.monotonic() + RUNAWAY_S
        while len(read_manifest(manifest)) < 4:
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the batch made no progress"
            time.sleep(0.01)
        first.send_signal(signal.SIGKILL)
        first.wait()
        done_before = {line["key"] for line in read_manifest(manifest)}
        calls_before = len(_bodies(log))
        assert 4 <= len(done_before) < SESSIONS

        second = _batch(inputs, out, url, data)
        stdout, stderr = second.communicate(timeout=120)
        assert second.returncode == 0, stderr.decode()
        bodies = _bodies(log)

    lines = read_manifest(manifest)
    # Nothing lost: every session has exactly one line, done, with both outputs on disk.
    assert sorted(line["key"] for line in lines) == sorted(
        f"ses_batch{k:04d}" for k in range(SESSIONS)
    )
    assert {line["status"] for line in lines} == {"done"}
    for line in lines:
        for name in line["outputs"]:
            assert (out / name).stat().st_size > 0
        restored = json.loads((out / f"{line['key']}.json").read_text())
        assert restored["session"]["id"] == line["key"]
    # Nothing redone: the restart sent no call for a session finished before the kill.
    after = calls_per_session(bodies[calls_before:], SESSIONS)
    redone = [k for k in range(SESSIONS) if f"ses_batch{k:04d}" in done_before and after[k]]
    assert redone == []
    assert "skipped" in stdout.decode()
    # No temporary output file is left behind.
    assert not [p for p in out.iterdir() if p.name.startswith(".")]
