"""The fake LLM server as a subprocess, for tests that run the real CLI against it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.waits import RUNAWAY_S

ROOT = Path(__file__).resolve().parents[2]
SERVER = Path(__file__).resolve().parent / "fake_llm_server.py"


@contextmanager
def fake_server_process(
    tmp: Path,
    *,
    latency: float = 0.0,
    script: list[dict[str, Any]] | None = None,
    gate: Path | None = None,
    strict: bool = False,
    reasoning_models: list[str] | None = None,
    profile: str | None = None,
    context_window: int | None = None,
) -> Iterator[tuple[str, Path, subprocess.Popen[bytes]]]:
    """Start the server on 127.0.0.1: (its root URL, its request log, the process).

    With ``gate``, every reply is held until that file exists; ``strict`` refuses what
    the real APIs refuse (``reasoning_models``: more names treated as reasoning models);
    ``profile`` answers like that local server (``context_window``: its window).
    """
    port_file, log = tmp / "port", tmp / "requests.jsonl"
    cmd = [sys.executable, str(SERVER), "--port-file", str(port_file), "--log", str(log)]
    cmd += ["--latency", str(latency)]
    if gate is not None:
        cmd += ["--gate", str(gate)]
    if strict:
        cmd.append("--strict")
    if profile is not None:
        cmd += ["--profile", profile]
    if context_window is not None:
        cmd += ["--context-window", str(context_window)]
    for pattern in reasoning_models or []:
        cmd += ["--reasoning-model", pattern]
    if script is not None:
        (tmp / "script.json").write_text(json.dumps(script))
        cmd += ["--script", str(tmp / "script.json")]
    proc = subprocess.Popen(cmd, cwd=ROOT)
    try:
        # The SDK parameter types the server validates against take seconds to import.
        deadline = time.monotonic() + RUNAWAY_S
        while not (port_file.exists() and port_file.read_text().strip()):
            assert proc.poll() is None, "fake server died"
            assert time.monotonic() < deadline, "fake server did not start"
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port_file.read_text().strip()}", log, proc
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:  # a loaded machine: never leave the server behind
            proc.kill()
            proc.wait(10)
