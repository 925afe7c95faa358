"""The batch runner: outputs, manifest, skips, failures, bounded concurrency and 429 storms."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from rich.console import Console
from rich.progress import Progress

from opencode_restore.batch.discover import discover
from opencode_restore.batch.display import BatchProgress
from opencode_restore.batch.items import BatchItem, finalize
from opencode_restore.batch.manifest import Manifest
from opencode_restore.batch.runner import BatchJob, BatchReport
from opencode_restore.config import Config, load_config
from opencode_restore.diagnostics import WarningSink
from opencode_restore.llm.ratelimit import RateLimitedProvider, rate_limited
from opencode_restore.llm.registry import close_provider, get_provider
from opencode_restore.llm.settings import ProviderSettings
from opencode_restore.pipeline.restoration import Restoration
from opencode_restore.pipeline.run import RestoreOptions

from .helpers import CountingServer, calls_per_session, make_sessions, session_id


def _config(tmp: Path, **llm: Any) -> Config:
    return load_config(
        env={},
        overrides={"paths": {"data_dir": str(tmp / "data")}, "llm": llm},
    )


def _run(job: BatchJob) -> BatchReport:
    async def main() -> BatchReport:
        try:
            return await job.run()
        finally:
            await close_provider(job.provider)

    return anyio.run(main)


def _job(tmp: Path, items: list[BatchItem], config: Config, **kw: Any) -> BatchJob:
    provider = rate_limited(
        get_provider(config.llm.model, ProviderSettings.from_config(config)), config.ratelimit
    )
    out = tmp / "out"
    return BatchJob(items, out, config, provider, Manifest(out / "manifest.jsonl"), **kw)


def _lines(tmp: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (tmp / "out" / "manifest.jsonl").read_text().splitlines()]


def test_outputs_manifest_and_a_failure_that_stops_nothing(tmp_path: Path) -> None:
    paths = make_sessions(tmp_path / "in", 3)
    items = discover([str(p) for p in paths], WarningSink())
    broken = finalize([BatchItem("gone", "claude-code", [tmp_path / "gone.jsonl"])])
    config = _config(tmp_path)
    report = _run(_job(tmp_path, [items[0], *broken, *items[1:]], config, concurrency=2))
    assert sorted((o.item.key, o.status) for o in report.outcomes) == [
        ("gone", "failed"),
        *[(session_id(k), "done") for k in range(3)],
    ]
    assert report.exit_code == 1
    [failed] = report.failed
    assert failed.error is not None
    assert "gone.jsonl: cannot read" in failed.error
    lines = {line["key"]: line for line in _lines(tmp_path)}
    assert set(lines) == {"gone", *(session_id(k) for k in range(3))}
    done = lines[session_id(1)]
    assert done["status"] == "done"
    assert done["error"] is None
    assert done["source_files"] == [str(paths[1])]
    assert done["hash"] == items[1].content_hash
    assert done["provider"].startswith("offline")
    # The offline rules answered; no model was called, so nothing was spent.
    assert done["usage"]["offline_answers"] >= 1
    assert (done["usage"]["calls"], done["usage"]["input_tokens"]) == (0, 0)
    assert done["usage"]["cost_usd"] == 0.0
    assert done["duration_s"] > 0
    assert lines["gone"]["outputs"] == []
    restored = json.loads((tmp_path / "out" / f"{session_id(1)}.json").read_text())
    assert restored["session"]["id"] == session_id(1)
    markdown = (tmp_path / "out" / f"{session_id(1)}.md").read_text()
    assert markdown.startswith("# SESSION SUMMARY")

    # Again: the done sessions are skipped, the failed one is tried again.
    again = _run(_job(tmp_path, [items[0], *broken, *items[1:]], config))
    assert sorted(o.status for o in again.outcomes) == ["failed", "skipped", "skipped", "skipped"]
    assert len(_lines(tmp_path)) == 5

    # --force redoes everything.
    forced = _run(_job(tmp_path, items, config, force=True))
    assert [o.status for o in forced.outcomes] == ["done"] * 3
    assert forced.exit_code == 0


def test_result_hook_adds_to_the_line_and_its_failure_fails_the_session(tmp_path: Path) -> None:
    items = discover([str(p) for p in make_sessions(tmp_path / "in", 2)], WarningSink())
    seen: list[str] = []

    def hook(item: BatchItem, restoration: Restoration) -> dict[str, Any]:
        seen.append(restoration.session.id)
        if item.session_id == session_id(1):
            raise OSError("store is read-only")
        return {"restoration_id": 7}

    mirror = Manifest(tmp_path / "day" / "manifest.jsonl")
    report = _run(_job(tmp_path, items, _config(tmp_path), on_result=hook, mirror=mirror))
    assert sorted(seen) == [session_id(0), session_id(1)]
    by_key = {o.item.key: o for o in report.outcomes}
    assert by_key[session_id(0)].status == "done"
    assert by_key[session_id(1)].status == "failed"
    assert "store is read-only" in (by_key[session_id(1)].error or "")
    lines = {line["key"]: line for line in _lines(tmp_path)}
    assert lines[session_id(0)]["restoration_id"] == 7
    copied = (tmp_path / "day" / "manifest.jsonl").read_text().splitlines()
    assert len(copied) == 2


def test_running_never_exceeds_the_concurrency_while_outputs_are_written(
    tmp_path: Path,
) -> None:
    # The first session's outputs are held until the worker has started the second
    # session: counted until written, the first one made "2 running" at concurrency 1.
    paths = make_sessions(tmp_path / "in", 2)
    items = discover([str(p) for p in paths], WarningSink())
    second_started = threading.Event()

    def hold(item: BatchItem, restoration: Restoration) -> dict[str, Any]:
        assert second_started.wait(30)  # a runaway guard, never reached when it works
        return {}

    job = _job(tmp_path, items, _config(tmp_path), concurrency=1, on_result=hold)
    running: list[int] = []
    with Progress(console=Console(file=io.StringIO())) as bar:
        shown = BatchProgress(bar, len(items), offline=True)

        def start(item: BatchItem) -> None:
            shown.start(item)
            running.append(shown.running)
            if len(running) == 2:
                second_started.set()

        job.on_start, job.on_restored, job.on_finish = start, shown.restored, shown.finish
        report = _run(job)
    assert [o.status for o in report.outcomes] == ["done", "done"]
    assert running == [1, 1]
    assert shown.running == 0


def test_incomplete_restorations_are_not_done(tmp_path: Path) -> None:
    items = discover([str(p) for p in make_sessions(tmp_path / "in", 1)], WarningSink())
    # Every call fails for good (400 is not retried): the turns fail, the session is incomplete.
    with CountingServer([{"status": 400}] * 50) as server:
        config = _config(tmp_path, model="openai:fake", base_url=server.openai_base_url)
        report = _run(
            _job(tmp_path, items, config, options=RestoreOptions(skip_evidence_search=True))
        )
    [outcome] = report.outcomes
    assert outcome.status == "incomplete"
    assert outcome.error is not None
    assert outcome.error.startswith("turns 1, 2, 3 failed")
    assert report.exit_code == 1
    assert _lines(tmp_path)[0]["outputs"] == [f"{session_id(0)}.md", f"{session_id(0)}.json"]


@pytest.mark.parametrize("concurrency", [1, 4])
def test_calls_overlap_up_to_the_concurrency(tmp_path: Path, concurrency: int) -> None:
    items = discover([str(p) for p in make_sessions(tmp_path / "in", 8)], WarningSink())
    # Replies wait until `concurrency` calls are in flight at once: a limit that let fewer
    # (or more) through shows in max_in_flight whatever the machine's speed.
    with CountingServer(latency=0.05, hold_until_in_flight=concurrency) as server:
        config = _config(tmp_path, model="openai:fake", base_url=server.openai_base_url)
        job = _job(
            tmp_path,
            items,
            config,
            concurrency=concurrency,
            options=RestoreOptions(skip_evidence_search=True),
        )
        report = _run(job)
        bodies = [r["body"] for r in server.requests]
    assert [o.status for o in report.outcomes] == ["done"] * 8
    assert server.max_in_flight == concurrency
    # Each session's calls are its own: 3 turns and the synthesis, none repeated.
    assert calls_per_session(bodies, 8) == dict.fromkeys(range(8), 4)


def test_a_429_storm_makes_every_worker_back_off(tmp_path: Path) -> None:
    items = discover([str(p) for p in make_sessions(tmp_path / "in", 6)], WarningSink())
    storm = [{"status": 429, "headers": {"retry-after": "0.6"}}] * 4
    # Leave the first 4 requests through, then the storm hits the next 4 (one per worker).
    script: list[dict[str, Any]] = [{}] * 4 + storm
    with CountingServer(script, latency=0.1) as server:
        config = _config(tmp_path, model="openai:fake", base_url=server.openai_base_url)
        job = _job(
            tmp_path,
            items,
            config,
            concurrency=4,
            options=RestoreOptions(skip_evidence_search=True),
        )
        assert isinstance(job.provider, RateLimitedProvider)
        limiter = job.provider.limiter
        # On the limiter's own clock: when each pause began and ended, and when each
        # request was let through (the server's arrival times depend on thread scheduling).
        pauses: list[tuple[float, float]] = []
        permits: list[float] = []
        pause, acquire = limiter.pause, limiter.acquire

        def recording_pause(seconds: float | None) -> None:
            start = limiter.clock()
            pause(seconds)
            pauses.append((start, limiter.pause_until))

        async def recording_acquire(tokens: int = 0) -> None:
            await acquire(tokens)
            permits.append(limiter.clock())

        limiter.pause = recording_pause  # type: ignore[method-assign]
        limiter.acquire = recording_acquire  # type: ignore[method-assign]
        report = _run(job)
        answers = list(server.answers)
        arrivals = list(server.arrivals)
    assert [o.status for o in report.outcomes] == ["done"] * 6
    assert sum(o.usage.failed_calls for o in report.outcomes) == 0
    assert limiter.pauses >= 1
    # While a pause runs, no worker is let through: every request waits for its end.
    for start, until in pauses:
        assert until - start >= 0.6 - 1e-6
        assert not [t for t in permits if start <= t < until]
    assert sum(1 for _, status in answers if status == 429) == 4
    assert len(arrivals) == 6 * 4 + 4
