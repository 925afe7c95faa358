"""Run a batch on a Dask cluster (``pip install 'opencode-restore[dask]'``); see docs/scaling.md.

* Partitions: a session always lands in partition ``sha256(key) % n``, so a re-run
  sends it to the same partition and the same part manifest.
* One task per partition runs the ordinary `BatchJob` (bounded concurrency, atomic
  outputs) with its own part manifest ``<out>/parts/manifest-NNNN.jsonl``, holding a
  cluster-wide `distributed.Lock` named after it: a task that Dask retries or runs
  twice (a worker presumed dead that is still alive) waits for the first one and then
  skips what it finished, so a part manifest always has a single writer.
* The driver is the only writer of ``<out>/manifest.jsonl``: a task returns the last
  record of each of its sessions (from its part manifest, so work done by an earlier,
  failed attempt is included) and the driver appends those it has not written yet —
  one line per finished session, exactly once.
* Rate limits: each task gets ``1 / tasks running at once`` of the configured
  requests and tokens per minute; a 429 pauses the workers of that task's process.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

from ..config import Config, RateLimitConfig, RateLimitRule
from ..llm.registry import close_provider
from ..pipeline.restoration import UsageReport
from .items import BatchItem
from .manifest import MANIFEST_NAME, Manifest
from .runner import BatchJob, BatchReport, Outcome
from .settings import RunSettings, journal_store, provider_for

PARTS = "parts"
#: Fixed, not derived from the cluster size, so a re-run on another cluster puts every
#: session in the same partition as before.
DEFAULT_PARTITIONS = 64


def partition(items: list[BatchItem], count: int) -> list[list[BatchItem]]:
    """Items split into ``count`` stable partitions by the hash of their key."""
    parts: list[list[BatchItem]] = [[] for _ in range(count)]
    for item in items:
        digest = hashlib.sha256(item.key.encode()).digest()
        parts[int.from_bytes(digest[:8], "big") % count].append(item)
    return parts


def _share(rule: RateLimitRule, share: float) -> dict[str, int | None]:
    def part(value: int | None) -> int | None:
        return None if value is None else max(1, int(value * share))

    return {
        "requests_per_minute": part(rule.requests_per_minute),
        "tokens_per_minute": part(rule.tokens_per_minute),
    }


def shared_limits(config: RateLimitConfig, share: float) -> RateLimitConfig:
    """``config`` with every per-minute limit scaled to one task's share."""
    providers = {k: RateLimitRule(**_share(v, share)) for k, v in config.providers.items()}
    return config.model_copy(update={**_share(config, share), "providers": providers})


def part_manifest(out: Path, index: int) -> Path:
    """Where partition ``index`` records its sessions."""
    return out / PARTS / f"manifest-{index:04d}.jsonl"


def run_partition(
    index: int, items: list[BatchItem], out: Path, settings: RunSettings, share: float
) -> list[dict[str, Any]]:
    """Restore one partition on a Dask worker; the last record of each of its sessions."""
    from distributed import Lock

    with Lock(f"opencode-restore:{out.resolve()}:{index}"):  # type: ignore[no-untyped-call]
        config = settings.config()
        config = config.model_copy(update={"ratelimit": shared_limits(config.ratelimit, share)})
        manifest = Manifest(part_manifest(out, index))
        job = BatchJob(
            items,
            out,
            config,
            provider_for(config),
            manifest,
            concurrency=settings.concurrency,
            options=settings.options(),
            journals=journal_store(config),
        )

        async def main() -> None:
            try:
                await job.run()
            finally:
                await close_provider(job.provider)

        anyio.run(main)
        return [manifest.latest[i.key] for i in items if i.key in manifest.latest]


def _spec(config: Config) -> str:
    provider = provider_for(config)
    anyio.run(close_provider, provider)
    return f"{provider.name}:{provider.model}"


def run_on_dask(
    items: list[BatchItem],
    out: Path,
    settings: RunSettings,
    client: Any,
    *,
    partitions: int = DEFAULT_PARTITIONS,
) -> BatchReport:
    """Restore ``items`` on the cluster behind ``client``; the driver writes the manifest."""
    from distributed import as_completed

    start = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    manifest = Manifest(out / MANIFEST_NAME)
    spec = _spec(settings.config())
    report = BatchReport([], provider=spec)
    todo = []
    for item in items:
        if manifest.is_done(item.key, item.content_hash, spec):
            report.outcomes.append(Outcome(item, "skipped"))
        else:
            todo.append(item)
    slots = max(1, sum(client.nthreads().values()))
    # Numbered before empty ones are dropped: a session's partition (and part manifest)
    # depends only on its key and the partition count.
    parts = [(k, p) for k, p in enumerate(partition(todo, partitions)) if p]
    share = 1 / min(slots, max(1, len(parts)))
    by_key = {item.key: item for item in todo}
    futures = {
        client.submit(run_partition, k, part, out, settings, share, pure=False, retries=2): part
        for k, part in parts
    }
    try:
        for future in as_completed(list(futures)):  # type: ignore[no-untyped-call]
            part = futures[future]
            try:
                records = future.result()
            except Exception as exc:  # a lost partition fails its sessions, not the batch
                error = f"partition failed: {type(exc).__name__}: {exc}"
                report.outcomes.extend(Outcome(i, "failed", error) for i in part)
                continue
            for record in records:
                if (
                    manifest.latest.get(record["key"], {}).get("finished_at")
                    != record["finished_at"]
                ):
                    manifest.append(record)
                report.outcomes.append(
                    Outcome(
                        by_key[record["key"]],
                        record["status"],
                        record["error"],
                        UsageReport(**record["usage"]),
                        record["duration_s"],
                    )
                )
    finally:
        manifest.close()
    report.wall = time.perf_counter() - start
    return report


@contextmanager
def dask_client(address: str) -> Iterator[Any]:
    """A client for ``address``; ``local`` or ``local:N`` runs N worker processes here
    (closed with the client)."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:
        from ..errors import UsageError

        raise UsageError(
            "--dask needs the dask extra: pip install 'opencode-restore[dask]'"
        ) from exc
    if not (address == "local" or address.startswith("local:")):
        with Client(address) as client:  # type: ignore[no-untyped-call]
            yield client
        return
    workers = int(address.partition(":")[2] or 2)
    with (
        LocalCluster(  # type: ignore[no-untyped-call]
            n_workers=workers, threads_per_worker=1, dashboard_address=None, host="127.0.0.1"
        ) as cluster,
        Client(cluster) as client,  # type: ignore[no-untyped-call]
    ):
        yield client
