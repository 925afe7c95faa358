"""Synthetic batch inputs and a fake LLM server that counts overlapping calls."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..fakes.fake_llm_server import FakeLLMServer
from ..fakes.process import fake_server_process

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "tests" / "fakes" / "fake_llm_server.py"
EXPORT = ROOT / "fixtures" / "opencode" / "recorded" / "tui-compact" / "export.json"
#: A real Claude Code session of three turns (recorded offline, see its PROVENANCE.md).
CLAUDE_3_TURNS = (
    ROOT / "fixtures/claude-code/recorded/print-continue/d703ad6a-fc57-46ca-94d6-a6af7cf0c933.jsonl"
)
_EXPORT_ID = "ses_e021ac976ffeprCgfn115CWSLu"


def marker(k: int) -> str:
    """The text that names synthetic session ``k`` inside every prompt built from it."""
    return f"BATCHMARK{k:04d}"


def session_id(k: int) -> str:
    return f"ses_batch{k:04d}"


def make_sessions(directory: Path, count: int, start: int = 0) -> list[Path]:
    """``count`` copies of the recorded opencode export, each with its own id and marker."""
    directory.mkdir(parents=True, exist_ok=True)
    text = EXPORT.read_text(encoding="utf-8")
    paths = []
    for k in range(start, start + count):
        data = json.loads(text.replace(_EXPORT_ID, session_id(k)))
        data["info"]["title"] += f" {marker(k)}"
        for message in data["messages"]:
            if message["info"]["role"] != "user":
                continue
            for part in message["parts"]:
                if part.get("type") == "text":
                    part["text"] += f" ({marker(k)})"
        path = directory / f"{session_id(k)}.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        paths.append(path)
    return paths


def calls_per_session(bodies: list[Any], count: int) -> Counter[int]:
    """How many logged requests name each synthetic session."""
    seen: Counter[int] = Counter()
    for body in bodies:
        text = json.dumps(body)
        for k in range(count):
            if marker(k) in text:
                seen[k] += 1
    return seen


class CountingServer(FakeLLMServer):
    """The fake server, also recording arrival times and the most calls in flight at once."""

    def __init__(self, *args: Any, hold_until_in_flight: int = 0, **kwargs: Any) -> None:
        """``hold_until_in_flight``: hold every reply until that many calls were in flight
        at once (or 30 s passed), so a test of overlap does not depend on timing."""
        super().__init__(*args, **kwargs)
        self.in_flight = 0
        self.max_in_flight = 0
        self.arrivals: list[float] = []
        self.answers: list[tuple[float, int]] = []  # (time, status)
        self._count_lock = threading.Lock()
        self._hold_target = hold_until_in_flight
        self._reached = threading.Event()
        if not hold_until_in_flight:
            self._reached.set()

    def handle(
        self, path: str, headers: dict[str, str], body: Any, received: float | None = None
    ) -> tuple[int, dict[str, str], Any]:
        with self._count_lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.arrivals.append(time.monotonic())
            if self.in_flight >= self._hold_target:
                self._reached.set()
        self._reached.wait(30)
        try:
            reply = super().handle(path, headers, body, received)
        finally:
            with self._count_lock:
                self.in_flight -= 1
        with self._count_lock:
            self.answers.append((time.monotonic(), reply[0]))
        return reply


@contextmanager
def server_process(
    tmp: Path,
    *,
    latency: float = 0.0,
    script: list[dict[str, Any]] | None = None,
    gate: Path | None = None,
) -> Iterator[tuple[str, Path, subprocess.Popen[bytes]]]:
    """The fake server as a subprocess: (OpenAI base URL, request log, process)."""
    with fake_server_process(tmp, latency=latency, script=script, gate=gate) as (url, log, proc):
        yield f"{url}/v1", log, proc


def cli_env(data_dir: Path) -> dict[str, str]:
    """The environment of a CLI subprocess: its own data dir, a dummy key, no user config."""
    env = dict(os.environ)
    env.update(
        OPENAI_API_KEY="dummy",
        OPENCODE_RESTORE_DATA_DIR=str(data_dir),
        HOME=str(data_dir / "home"),
        PYTHONPATH=str(ROOT / "src"),
    )
    return env


def read_manifest(path: Path) -> list[dict[str, Any]]:
    """Every line of a manifest, parsed."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
