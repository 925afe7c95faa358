"""Background restore jobs: other agents, failures and cancellation."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from opencode_restore.api import create_app, jobs
from opencode_restore.config import Config, load_config
from opencode_restore.store.store import Store
from tests.fakes.fake_llm_server import FakeLLMServer
from tests.store.builders import CLAUDE_COMPACT, CLAUDE_CONTINUE, OPENCODE_DB, copy_to

OC_ID = "ses_e021ac976ffeprCgfn115CWSLu"


def test_opencode_session_is_restored_by_id(store: Store, tmp_path: Path) -> None:
    db = copy_to(OPENCODE_DB, tmp_path)
    store.register(OC_ID, "opencode", str(db))
    row = store.session(OC_ID)
    assert row is not None
    run_id = store.create_run(OC_ID, "restore")
    asyncio.run(jobs.run_restore(store, load_config(env={}), row, run_id, 1))
    run = store.run(run_id)
    assert run is not None
    assert run.status == "done", run.error
    r = store.latest_restoration(OC_ID)
    assert r is not None
    assert r.summary["session"]["id"] == OC_ID
    assert r.summary["session"]["agent"] == "opencode"


def test_cancelled_job_is_marked_failed(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = copy_to(OPENCODE_DB, tmp_path)
    store.register(OC_ID, "opencode", str(db))
    row = store.session(OC_ID)
    assert row is not None
    run_id = store.create_run(OC_ID, "restore")

    async def forever(*_a: object, **_k: object) -> None:
        await asyncio.sleep(3600)

    monkeypatch.setattr(jobs, "restore_locked", forever)

    async def main() -> None:
        task = asyncio.create_task(jobs.run_restore(store, load_config(env={}), row, run_id, None))
        for _ in range(200):
            await asyncio.sleep(0.01)
            current = await asyncio.to_thread(store.run, run_id)
            if current is not None and current.status == "running":
                break
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    run = store.run(run_id)
    assert run is not None
    assert (run.status, run.error) == ("failed", "cancelled")


# --- one job per session, a cap on jobs, the saved timeline (issue 14, item 6) ---

CONTINUE_ID = "d703ad6a-fc57-46ca-94d6-a6af7cf0c933"  # three turns
TOKEN = "job-token-" + "x" * 24
AUTH = {"Authorization": f"Bearer {TOKEN}"}
#: Bounds every wait of these tests (the whole test fails past it, never hangs).
DEADLINE = 120


def _fake_llm_config(data_dir: Path, base_url: str, **api: int) -> Config:
    return load_config(
        env={},
        overrides={
            "llm": {"model": "openai:fake", "base_url": base_url, "max_attempts": 1},
            "restore": {"skip_evidence_search": True},
            "paths": {"data_dir": str(data_dir)},
            "api": api,
        },
    )


def _schema_names(server: FakeLLMServer) -> Counter[str]:
    return Counter(r["body"]["response_format"]["json_schema"]["name"] for r in server.requests)


async def _until(predicate: Callable[[], Awaitable[bool]]) -> None:
    with anyio.fail_after(DEADLINE):
        while not await predicate():
            await anyio.sleep(0.02)


async def _job(client: httpx.AsyncClient, job_id: str) -> dict[str, Any]:
    body: dict[str, Any] = (await client.get(f"/jobs/{job_id}")).json()
    return body


def test_concurrent_posts_make_one_restores_worth_of_calls(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """200 POSTs at once made 1,025 LLM calls: now they share one job, and a later job
    continues from the saved timeline instead of paying for the turns again."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    store.register(CONTINUE_ID, "claude-code", str(copy_to(CLAUDE_CONTINUE, tmp_path)))
    gate = tmp_path / "gate"
    with FakeLLMServer(gate=gate) as server:
        config = _fake_llm_config(tmp_path / "data", server.openai_base_url)
        app = create_app(store, token=TOKEN, config=config, reads_need_token=False)
        url = f"/sessions/{CONTINUE_ID}/restore"

        async def main() -> None:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://127.0.0.1", headers=AUTH, timeout=DEADLINE
            ) as client:
                with anyio.fail_after(DEADLINE):
                    burst = await asyncio.gather(*(client.post(url, json={}) for _ in range(100)))
                assert sorted(r.status_code for r in burst) == [200] * 99 + [202]
                ids = {r.json()["id"] for r in burst}
                assert len(ids) == 1
                job_id = ids.pop()

                async def calling() -> bool:
                    return bool(server.requests)

                await _until(calling)
                with anyio.fail_after(DEADLINE):
                    during = await asyncio.gather(*(client.post(url, json={}) for _ in range(100)))
                assert {(r.status_code, r.json()["id"]) for r in during} == {(200, job_id)}
                assert (await _job(client, job_id))["status"] == "running"
                gate.touch()

                async def finished() -> bool:
                    return (await _job(client, job_id))["status"] in ("done", "failed")

                await _until(finished)
                assert (await _job(client, job_id))["status"] == "done"
                assert _schema_names(server) == {"TurnSummary": 3, "SessionSummary": 1}

                again = await client.post(url, json={})
                assert again.status_code == 202
                second = again.json()["id"]
                assert second != job_id

                async def second_done() -> bool:
                    return (await _job(client, second))["status"] in ("done", "failed")

                await _until(second_done)
                assert (await _job(client, second))["status"] == "done"
            await app.state.jobs.close()

        anyio.run(main)
        # The second job resumed from the saved timeline: not one more call.
        assert _schema_names(server) == {"TurnSummary": 3, "SessionSummary": 1}


def test_jobs_beyond_the_cap_wait_and_beyond_the_queue_are_refused(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    store.register(CONTINUE_ID, "claude-code", str(copy_to(CLAUDE_CONTINUE, tmp_path)))
    store.register("second", "claude-code", str(copy_to(CLAUDE_COMPACT, tmp_path)))
    store.register("third", "claude-code", str(CLAUDE_COMPACT))
    gate = tmp_path / "gate"
    with FakeLLMServer(gate=gate) as server:
        config = _fake_llm_config(
            tmp_path / "data", server.openai_base_url, max_jobs=1, max_queued_jobs=2
        )
        app = create_app(store, token=TOKEN, config=config, reads_need_token=False)

        async def main() -> None:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://127.0.0.1", headers=AUTH, timeout=DEADLINE
            ) as client:
                first = await client.post(f"/sessions/{CONTINUE_ID}/restore", json={})
                second = await client.post("/sessions/second/restore", json={})
                assert (first.status_code, second.status_code) == (202, 202)

                async def calling() -> bool:
                    return bool(server.requests)

                await _until(calling)
                # The first job holds the only slot until the gate opens: the second waits.
                assert (await _job(client, first.json()["id"]))["status"] == "running"
                assert (await _job(client, second.json()["id"]))["status"] == "queued"
                refused = await client.post("/sessions/third/restore", json={})
                assert refused.status_code == 429
                assert "2 jobs are queued or running" in refused.json()["detail"]
                await app.state.jobs.close()  # what a server shutdown does
                for r in (first, second):
                    job = await _job(client, r.json()["id"])
                    assert (job["status"], job["error"]) == ("failed", "cancelled")
            gate.touch()

        anyio.run(main)
    assert len(server.requests) == 1  # the queued job never called the model
