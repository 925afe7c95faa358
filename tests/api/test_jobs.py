"""Background restore jobs: other agents, failures and cancellation."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from opencode_restore.api import jobs
from opencode_restore.config import load_config
from opencode_restore.store.store import Store
from tests.store.builders import OPENCODE_DB, copy_to

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

    monkeypatch.setattr(jobs, "restore_session", forever)

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
