"""Two ``restore`` runs of one session at once: the second waits and reuses the first's turns.

Real processes and real HTTP (the fake OpenAI server with latency, so the runs
overlap); the LLM calls are counted at the server by the schema each asks for.
"""

from __future__ import annotations

import json
import select
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from opencode_restore.pipeline.journal.lock import journal_lock
from opencode_restore.pipeline.journal.store import JournalStore
from tests.batch.helpers import CLAUDE_3_TURNS, ROOT, cli_env, server_process
from tests.waits import RUNAWAY_S

FIXTURE = CLAUDE_3_TURNS
TURNS = 3


def _requests(log: Path) -> list[dict[str, Any]]:
    """The request bodies the server logged; a line it is still writing is not one yet."""
    if not log.exists():
        return []
    whole = log.read_text().rpartition("\n")[0]
    return [json.loads(line)["body"] for line in whole.splitlines() if line.strip()]


@pytest.mark.slow
def test_a_second_restore_waits_and_reuses_every_turn(tmp_path: Path) -> None:
    log = tmp_path / FIXTURE.name
    shutil.copy(FIXTURE, log)
    env = cli_env(tmp_path / "data")
    # The server holds every reply until the gate exists, so the first restore is still
    # inside its first call (holding the lock) when the second one asks for the lock:
    # the order is forced, not a race against the latency.
    gate = tmp_path / "gate"
    with server_process(tmp_path, gate=gate) as (url, requests, _):
        command = [sys.executable, "-m", "opencode_restore", "restore", str(log)]
        command += ["-m", "openai:fake", "--base-url", url, "--skip-evidence-search"]

        def start(name: str) -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                [*command, "-o", str(tmp_path / f"{name}.md")],
                cwd=ROOT,
                env=env,
                stderr=subprocess.PIPE,
            )

        first = start("first")
        deadline = time.monotonic() + RUNAWAY_S
        while not _requests(requests):  # the first holds the lock once it calls the model
            assert first.poll() is None, "the first restore ended before calling the model"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        second = start("second")
        assert second.stderr is not None
        waited = b""
        while b"is running" not in waited:  # the second says so once it waits for the lock
            ready, _, _ = select.select([second.stderr], [], [], deadline - time.monotonic())
            assert ready, "the second restore never waited for the lock"
            line = second.stderr.readline()
            assert line, "the second restore ended without waiting for the lock"
            waited += line
        gate.touch()
        first_err = first.communicate(timeout=120)[1].decode()
        second_err = waited.decode() + second.communicate(timeout=120)[1].decode()
        errs = [first_err, second_err]
        assert [first.returncode, second.returncode] == [0, 0]
        bodies = _requests(requests)
    names = Counter(b["response_format"]["json_schema"]["name"] for b in bodies)
    assert names == {"TurnSummary": TURNS, "SessionSummary": 1}
    assert f"{TURNS} turns, {TURNS + 1} calls" in errs[0]
    assert f"{TURNS} turns, 0 calls" in errs[1]
    assert "another restore of d703ad6a-fc57-46ca-94d6-a6af7cf0c933 is running" in errs[1]
    assert "journal: resumed: all 3 turns unchanged" in errs[1]
    assert (tmp_path / "first.md").read_text().count("\n") > 5
    assert (tmp_path / "second.md").exists()


def test_the_lock_is_held_until_released_and_told_once(tmp_path: Path) -> None:
    store = JournalStore(tmp_path / "timelines")
    waits: list[str] = []

    async def main() -> None:
        async with journal_lock(store, "s"):
            with anyio.move_on_after(0.2):
                async with journal_lock(store, "s", on_wait=lambda: waits.append("s")):
                    raise AssertionError("taken while held")
        async with journal_lock(store, "s", on_wait=lambda: waits.append("again")):
            pass

    anyio.run(main)
    assert waits == ["s"]  # told once, while held; never when free
