"""batch and nightly continue the journal: a grown session costs only its new turn.

The LLM calls are counted at the fake server (real HTTP, the real OpenAI SDK): a turn
summary request carries the ``TurnSummary`` schema, the synthesis ``SessionSummary``.
The session is the recorded Claude Code ``print-continue`` fixture (3 turns); growing
it appends one user prompt and one assistant reply to a copy, as Claude Code does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from opencode_restore.batch.items import BatchItem, finalize
from opencode_restore.batch.manifest import Manifest
from opencode_restore.batch.runner import BatchJob, BatchReport
from opencode_restore.batch.settings import journal_store
from opencode_restore.cli import cli
from opencode_restore.config import load_config
from opencode_restore.diagnostics import WarningSink
from opencode_restore.llm.registry import close_provider, get_provider
from opencode_restore.llm.settings import ProviderSettings
from opencode_restore.pipeline.journal.batch_store import BatchJournals
from opencode_restore.pipeline.journal.identity import journal_key
from opencode_restore.pipeline.journal.lock import journal_lock, lock_path
from opencode_restore.pipeline.journal.store import JournalStore
from opencode_restore.sources import open_session

from ..fakes.fake_llm_server import FakeLLMServer
from .helpers import CLAUDE_3_TURNS, ROOT, cli_env, read_manifest, server_process

FIXTURE = CLAUDE_3_TURNS
SESSION = FIXTURE.stem
NEW_PROMPT = "GROWNTURN: also add a --whisper flag."
TURNS = 3
ARGS = ["--skip-evidence-search", "-q"]


def _grow(path: Path) -> None:
    """Append a fourth turn (a user prompt and the assistant's answer) to ``path``."""
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    last = next(x for x in reversed(lines) if x.get("type") == "assistant")
    prompt = next(
        x
        for x in reversed(lines)
        if x.get("type") == "user" and isinstance(x["message"]["content"], str)
    )
    user = {**prompt, "uuid": "grown-user-0001", "parentUuid": last["uuid"]}
    user["message"] = {**prompt["message"], "content": NEW_PROMPT}
    user["timestamp"] = "2099-01-01T00:00:00.000Z"
    reply = {**last, "uuid": "grown-assistant-0001", "parentUuid": user["uuid"]}
    reply["message"] = {
        **last["message"],
        "content": [{"type": "text", "text": "Added --whisper."}],
    }
    reply["timestamp"] = "2099-01-01T00:00:05.000Z"
    with path.open("a") as fh:
        fh.write(json.dumps(user) + "\n" + json.dumps(reply) + "\n")


def _journal_key(log: Path) -> str:
    """The name of the journal a restore of the Claude Code log ``log`` keeps."""
    return journal_key(open_session([log], WarningSink(), "claude-code"))


def _kinds(server: FakeLLMServer, since: int = 0) -> Counter[str]:
    """Requests after the first ``since``, by the name of the schema they ask for."""
    out: Counter[str] = Counter()
    for entry in server.requests[since:]:
        out[entry["body"]["response_format"]["json_schema"]["name"]] += 1
    return out


def _invoke(env: dict[str, str], args: list[str]) -> str:
    result = CliRunner(env=env).invoke(cli, args)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def server() -> Any:
    with FakeLLMServer() as fake:
        yield fake


def _model(server: FakeLLMServer) -> list[str]:
    return ["-m", "openai:fake", "--base-url", server.openai_base_url]


def test_nightly_after_a_new_turn_asks_only_that_turn_and_the_synthesis(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    log = tmp_path / "root" / ".claude" / "projects" / "-p0" / FIXTURE.name
    log.parent.mkdir(parents=True)
    shutil.copy(FIXTURE, log)
    env = cli_env(tmp_path / "data")
    args = ["nightly", "--root", str(tmp_path / "root"), "--out", str(tmp_path / "out")]
    args += _model(server) + ARGS
    _invoke(env, args)
    assert _kinds(server) == {"TurnSummary": TURNS, "SessionSummary": 1}
    saved = JournalStore(tmp_path / "data" / "timelines").path_for(_journal_key(log))
    assert saved.is_file()

    _grow(log)
    first = len(server.requests)
    _invoke(env, args)
    assert _kinds(server, first) == {"TurnSummary": 1, "SessionSummary": 1}
    [turn] = [e for e in server.requests[first:] if "TurnSummary" in json.dumps(e["body"])][:1]
    assert NEW_PROMPT in json.dumps(turn["body"])
    state = read_manifest(tmp_path / "data" / "nightly" / "state.jsonl")
    assert [(x["session"], x["turns_reused"], x["usage"]["calls"]) for x in state] == [
        (SESSION, 0, TURNS + 1),
        (SESSION, TURNS, 2),
    ]
    restored = json.loads(next((tmp_path / "out").rglob(f"{SESSION}.json")).read_text())
    assert restored["turn_count"] == TURNS + 1
    assert [t["turn_number"] for t in restored["turns"]] == [1, 2, 3, 4]


def test_batch_continues_the_timeline_force_starts_again_and_resume_off_never_saves(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    log = tmp_path / "in" / FIXTURE.name
    log.parent.mkdir()
    shutil.copy(FIXTURE, log)
    env = cli_env(tmp_path / "data")
    args = ["batch", str(log), "--out", str(tmp_path / "out"), *_model(server), *ARGS]
    _invoke(env, args)
    assert _kinds(server) == {"TurnSummary": TURNS, "SessionSummary": 1}

    _grow(log)
    first = len(server.requests)
    _invoke(env, args)
    assert _kinds(server, first) == {"TurnSummary": 1, "SessionSummary": 1}

    first = len(server.requests)
    _invoke(env, [*args, "--force"])  # the manifest says done: --force redoes every turn
    assert _kinds(server, first) == {"TurnSummary": TURNS + 1, "SessionSummary": 1}
    lines = read_manifest(tmp_path / "out" / "manifest.jsonl")
    assert [x["turns_reused"] for x in lines] == [0, TURNS, 0]

    # [restore] resume = false: no timeline is read or written, every turn is asked again.
    off = dict(env, OPENCODE_RESTORE_RESTORE_RESUME="false")
    shutil.rmtree(tmp_path / "data" / "timelines")
    first = len(server.requests)
    _invoke(off, [*args, "--force"])
    assert _kinds(server, first) == {"TurnSummary": TURNS + 1, "SessionSummary": 1}
    assert not (tmp_path / "data" / "timelines").exists()


@pytest.mark.slow
def test_two_batches_of_one_session_at_once_ask_the_model_once(tmp_path: Path) -> None:
    # Two processes (two batches into two folders, one data dir) restore the same
    # session at the same time: the second waits for the timeline lock, then reuses.
    log = tmp_path / "in" / FIXTURE.name
    log.parent.mkdir()
    shutil.copy(FIXTURE, log)
    env = cli_env(tmp_path / "data")
    with server_process(tmp_path, latency=0.2) as (url, requests, _):
        command = [sys.executable, "-m", "opencode_restore", "batch", str(log)]
        command += ["-m", "openai:fake", "--base-url", url, *ARGS]
        runs = [
            subprocess.Popen([*command, "--out", str(tmp_path / name)], cwd=ROOT, env=env)
            for name in ("out1", "out2")
        ]
        assert [run.wait(120) for run in runs] == [0, 0]
        bodies = [json.loads(line)["body"] for line in requests.read_text().splitlines()]
    names = Counter(body["response_format"]["json_schema"]["name"] for body in bodies)
    assert names == {"TurnSummary": TURNS, "SessionSummary": 1}
    lines = [read_manifest(tmp_path / name / "manifest.jsonl") for name in ("out1", "out2")]
    assert sorted(x["usage"]["calls"] for [x] in lines) == [0, TURNS + 1]
    assert sorted(x["turns_reused"] for [x] in lines) == [0, TURNS]
    assert {x["status"] for [x] in lines} == {"done"}


def test_another_session_with_the_same_id_keeps_its_own_timeline(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        shutil.copy(FIXTURE, tmp_path / folder / FIXTURE.name)
    items = finalize(
        [BatchItem(SESSION, "claude-code", [tmp_path / f / FIXTURE.name]) for f in ("a", "b")]
    )
    config = load_config(
        env={},
        overrides={
            "paths": {"data_dir": str(tmp_path / "data")},
            "llm": {"model": "openai:fake", "base_url": server.openai_base_url},
            "restore": {"skip_evidence_search": True},
        },
    )
    provider = get_provider(config.llm.model, ProviderSettings.from_config(config))
    store = journal_store(config)
    assert store is not None
    job = BatchJob(
        items,
        tmp_path / "out",
        config,
        provider,
        Manifest(tmp_path / "out" / "manifest.jsonl"),
        concurrency=2,
        journals=store,
    )

    async def main() -> BatchReport:
        try:
            return await job.run()
        finally:
            await close_provider(provider)

    report = anyio.run(main)
    assert sorted(o.status for o in report.outcomes) == ["done", "done"]
    assert items[1].key != SESSION
    assert sorted(p.name for p in store.directory.glob("*.json")) == sorted(
        store.path_for(_journal_key(i.files[0])).name for i in items
    )
    assert _kinds(server) == {"TurnSummary": 2 * TURNS, "SessionSummary": 2}


def test_the_lock_makes_a_second_holder_wait(tmp_path: Path) -> None:
    store = JournalStore(tmp_path / "timelines")
    order: list[str] = []

    async def hold(name: str, seconds: float) -> None:
        async with journal_lock(store, "s1"):
            order.append(f"{name} in")
            await anyio.sleep(seconds)
            order.append(f"{name} out")

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(hold, "first", 0.2)
            await anyio.sleep(0.05)
            tg.start_soon(hold, "second", 0)
            # Another key is not held up.
            async with journal_lock(store, "s2"):
                order.append("other key")

    anyio.run(main)
    assert order == ["first in", "other key", "first out", "second in", "second out"]
    assert lock_path(store, "s1") == tmp_path / "timelines" / "s1.lock"


def test_the_lock_is_held_across_processes_and_freed_when_the_holder_dies(
    tmp_path: Path,
) -> None:
    store = JournalStore(tmp_path / "timelines")
    path = lock_path(store, "s1")
    path.parent.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nfrom filelock import FileLock\n"
            f"lock = FileLock({str(path)!r})\nlock.acquire()\n"
            "print('held', flush=True)\ntime.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == b"held\n"

        async def attempt(wait: float = 0.3) -> bool:
            with anyio.move_on_after(wait):
                async with journal_lock(store, "s1"):
                    return True
            return False

        assert anyio.run(attempt) is False
        holder.kill()  # SIGKILL: the kernel drops the lock with the process
        holder.wait(10)
        # Freed at once; the generous wait only keeps a loaded machine from failing it.
        assert anyio.run(attempt, 30.0) is True
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)
    assert os.path.exists(path)


def test_batch_timelines_keep_saves_in_memory_until_flushed(tmp_path: Path) -> None:
    store = BatchJournals(tmp_path / "timelines")
    assert store.load("s1") is None
    store.save("s1", {"turns": [1]})
    store.save("s1", {"turns": [1, 2]})
    assert not store.path_for("s1").exists()
    assert store.load("s1") == {"turns": [1, 2]}  # a restore of s1 would continue it
    store.flush("s1")
    store.flush("s1")  # nothing waiting: no second write
    store.flush("never-saved")
    assert json.loads(store.path_for("s1").read_text()) == {"turns": [1, 2]}
    assert sorted(p.name for p in store.directory.iterdir()) == ["s1.json"]
    assert BatchJournals(tmp_path / "timelines").load("s1") == {"turns": [1, 2]}


def test_batch_timelines_apply_turn_changes_in_memory(tmp_path: Path) -> None:
    store = BatchJournals(tmp_path / "timelines")
    store.save("s1", {"generation": 2, "turns": [1], "numbering": {"labels": ["M1"]}})
    change = {"generation": 2, "append": {"turns": [2], "numbering.labels": ["M2"]}}
    store.append("s1", change)
    assert not store.changes_for("s1").exists()  # no fsynced line per turn in a batch
    store.flush("s1")
    saved = json.loads(store.path_for("s1").read_text())
    assert saved == {"generation": 2, "turns": [1, 2], "numbering": {"labels": ["M1", "M2"]}}
    # A change for a snapshot that is not waiting here goes to the journal on disk.
    store.append("s1", {"generation": 2, "append": {"turns": [3]}})
    assert store.changes_for("s1").exists()
    loaded = BatchJournals(tmp_path / "timelines").load("s1")
    assert loaded is not None
    assert loaded["turns"] == [1, 2, 3]
