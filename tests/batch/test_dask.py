"""The batch on a local Dask cluster: partitions, part manifests, one manifest line per session."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from opencode_restore.batch.discover import discover
from opencode_restore.batch.settings import RunSettings
from opencode_restore.config import RateLimitConfig, RateLimitRule
from opencode_restore.diagnostics import WarningSink

from .helpers import CountingServer, calls_per_session, cli_env, make_sessions, read_manifest

distributed = pytest.importorskip("distributed")
dask_runner = pytest.importorskip("opencode_restore.batch.dask_runner")

SESSIONS = 10


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for key, value in cli_env(tmp_path / "data").items():
        monkeypatch.setenv(key, value)
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        dashboard_address=None,
        host="127.0.0.1",
        protocol="tcp://",
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def test_partitions_are_stable_and_cover_everything(tmp_path: Path) -> None:
    items = discover([str(p) for p in make_sessions(tmp_path, SESSIONS)], WarningSink())
    parts = dask_runner.partition(items, 3)
    assert sorted(i.key for p in parts for i in p) == sorted(i.key for i in items)
    assert [[i.key for i in p] for p in dask_runner.partition(list(reversed(items)), 3)] == [
        [i.key for i in reversed(p)] for p in parts
    ]


def test_rate_limits_are_shared_out() -> None:
    config = RateLimitConfig(
        requests_per_minute=100,
        providers={"openai": RateLimitRule(tokens_per_minute=1000)},
    )
    part = dask_runner.shared_limits(config, 0.25)
    assert part.requests_per_minute == 25
    assert part.tokens_per_minute is None
    assert part.providers["openai"].tokens_per_minute == 250
    assert part.pause_seconds == config.pause_seconds


def test_a_dask_batch_writes_each_session_once(tmp_path: Path, client: Any) -> None:
    items = discover([str(p) for p in make_sessions(tmp_path / "in", SESSIONS)], WarningSink())
    out = tmp_path / "out"
    with CountingServer(latency=0.05) as server:
        settings = RunSettings(
            model="openai:fake",
            base_url=server.openai_base_url,
            concurrency=2,
            skip_evidence_search=True,
        )
        report = dask_runner.run_on_dask(items, out, settings, client, partitions=4)
        assert sorted(o.status for o in report.outcomes) == ["done"] * SESSIONS
        lines = read_manifest(out / "manifest.jsonl")
        assert Counter(line["key"] for line in lines) == Counter(i.key for i in items)
        used = [k for k, part in enumerate(dask_runner.partition(items, 4)) if part]
        assert sorted(p.name for p in (out / "parts").iterdir()) == [
            f"manifest-{k:04d}.jsonl" for k in used
        ]
        for item in items:
            assert (out / f"{item.key}.md").is_file()

        # A part manifest that outlived its driver (killed before appending) is not redone,
        # and its lines reach the main manifest exactly once.
        (out / "manifest.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines[:3]))
        calls = len(server.requests)
        again = dask_runner.run_on_dask(items, out, settings, client, partitions=4)
        assert len(server.requests) == calls
        assert (
            sorted(o.status for o in again.outcomes) == ["done"] * (SESSIONS - 3) + ["skipped"] * 3
        )
        assert Counter(line["key"] for line in read_manifest(out / "manifest.jsonl")) == Counter(
            i.key for i in items
        )
        assert calls_per_session([r["body"] for r in server.requests], SESSIONS) == dict.fromkeys(
            range(SESSIONS), 4
        )


def test_a_lost_partition_fails_its_sessions_only(
    tmp_path: Path, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = discover([str(p) for p in make_sessions(tmp_path / "in", 4)], WarningSink())
    real = dask_runner.run_partition

    def flaky(index: int, part: list[Any], *args: Any) -> list[dict[str, Any]]:
        if index == 0:
            raise RuntimeError("worker lost")
        rows: list[dict[str, Any]] = real(index, part, *args)
        return rows

    monkeypatch.setattr(dask_runner, "run_partition", flaky)
    report = dask_runner.run_on_dask(items, tmp_path / "out", RunSettings(), client, partitions=2)
    failed = [o for o in report.outcomes if o.status == "failed"]
    assert failed
    assert all("partition failed: RuntimeError: worker lost" in (o.error or "") for o in failed)
    assert report.count("done") == 4 - len(failed)


def test_the_cli_runs_on_a_scheduler_address(tmp_path: Path, client: Any) -> None:
    from click.testing import CliRunner

    from opencode_restore.cli import cli

    make_sessions(tmp_path / "in", 3)
    address = client.scheduler.address
    result = CliRunner(env=cli_env(tmp_path / "data")).invoke(
        cli, ["batch", str(tmp_path / "in"), "--out", str(tmp_path / "out"), "--dask", address]
    )
    assert result.exit_code == 0, result.output
    assert "│        3 │    3 │" in result.output
    assert len(read_manifest(tmp_path / "out" / "manifest.jsonl")) == 3


def test_a_local_cluster_of_worker_processes() -> None:
    with dask_runner.dask_client("local:1") as c:
        assert len(c.nthreads()) == 1
        assert c.submit(sum, [1, 2], pure=False).result() == 3
