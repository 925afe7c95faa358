"""The ``batch`` and ``nightly`` commands behind their click wiring: setup, run, report."""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import anyio
import click

from .. import event_loop
from ..command_sink import command_sink
from ..consoles import console as make_console
from ..errors import UsageError
from ..fields import counted, flatten
from ..llm.registry import close_provider
from ..since import Since, parse_since
from ..store.paths import db_path
from ..store.store import Store
from .discover import Leftovers, discover
from .display import print_report, progress_for
from .items import BatchItem
from .manifest import MANIFEST_NAME, Manifest
from .nightly import RUN_KIND, nightly_lock, plan, state_manifest, store_hook
from .runner import BatchJob, BatchReport
from .settings import RunSettings, journal_store, provider_for


def clock() -> datetime:
    """Now, in UTC: the one place ``nightly`` reads the time (tests replace it)."""
    return datetime.now(UTC)


def _execute(job: BatchJob, settings: RunSettings, title: str = "batch") -> BatchReport:
    """Run ``job`` with a progress bar on stderr; the provider closes inside the loop."""
    console = make_console(stderr=True)
    show = not settings.quiet and sys.stderr.isatty()

    async def main() -> BatchReport:
        try:
            return await job.run()
        finally:
            # SDK connection pools must close inside the event loop that opened them.
            await close_provider(job.provider)

    with progress_for(job, console, show):
        report = event_loop.run(main)
    if not settings.quiet:
        print_report(report, make_console(), job.out_dir, title)
    return report


def run_batch(
    args: list[str],
    out: Path,
    settings: RunSettings,
    *,
    agent: str | None = None,
    force: bool = False,
    dask: str | None = None,
    since: Since | None = None,
    verbose: bool = False,
) -> int:
    """``opencode-restore batch``: the exit code is 0 when every session succeeded.

    ``force`` redoes sessions the manifest says are done, from their first turn;
    ``since`` keeps only the sessions active after it (none is no failure). Inputs that
    hold no session at all are a usage error; ``verbose`` lists the files ignored.
    """
    if force:
        settings = replace(settings, fresh=True)
    config = settings.config()
    sink = command_sink(settings.quiet)
    cutoff = since.cutoff(clock()) if since is not None else None
    left = Leftovers()
    items = discover(args, sink, agent, since=cutoff, leftovers=left)
    if not items and (cutoff is None or len(left.empty) == len(args)):
        raise UsageError(_nothing_to_restore(args, left))
    for named, why in left.empty:
        sink.warn(named, 0, why)
    if left.not_logs and not settings.quiet:
        for line in _ignored_lines(left.not_logs, verbose):
            click.echo(line, err=True)
    if not items:
        if not settings.quiet:
            click.echo(
                f"nothing to restore: no session was active after {cutoff:%Y-%m-%d %H:%M:%S} UTC",
                err=True,
            )
        return 0
    if dask is not None:
        from .dask_runner import dask_client, run_on_dask

        with dask_client(dask) as client:
            report = run_on_dask(items, out, settings, client)
        if not settings.quiet:
            print_report(report, make_console(), out)
        return report.exit_code
    job = BatchJob(
        items,
        out,
        config,
        provider_for(config),
        Manifest(out / MANIFEST_NAME, sink),
        concurrency=settings.concurrency,
        options=settings.options(),
        force=force,
        journals=journal_store(config),
    )
    return _execute(job, settings).exit_code


def _ignored(files: list[Path]) -> str:
    return f"ignored {counted(len(files), 'file')} with no session log"


def _nothing_to_restore(args: list[str], left: Leftovers) -> str:
    """One line: which inputs hold no session, and how many files were ignored."""
    why = "; ".join(f"{named}: {why}" for named, why in left.empty)
    why = why or f"no sessions found in {' '.join(args)}"
    return f"nothing to restore: {why}" + (f" ({_ignored(left.not_logs)})" if left.not_logs else "")


def _ignored_lines(files: list[Path], verbose: bool) -> list[str]:
    """How many files were ignored; with ``verbose``, which (warnings name only some)."""
    if not verbose:
        return [f"{_ignored(files)} (--verbose lists them)"]
    # A file's name is the folder owner's choice: one line each, whatever it holds.
    return [f"{_ignored(files)}:", *(f"  {flatten(p)}" for p in files)]


def _plan_lines(items: list[BatchItem], reasons: dict[str, str], unchanged: int) -> list[str]:
    """One line per session (why, agent, key, files): easy to read and to grep."""
    lines = [f"would restore {counted(len(items), 'session')} ({unchanged} unchanged)"]
    for item in items:
        files = " ".join(str(p) for p in item.files)
        lines.append(f"  {reasons.get(item.key, ''):<8} {item.agent:<12} {item.key}  {files}")
    return lines


def _index(store: Store, data_dir: Path) -> None:
    """Bring the search index up to date with what the scan found and the run restored;
    a failure is said on stderr and leaves the night's restorations as they are."""
    from ..search.index import index_path, update

    try:
        update(store, index_path(data_dir))
    except (sqlite3.Error, OSError) as exc:
        click.echo(f"warning: the search index was not updated: {exc}", err=True)


def run_nightly(
    settings: RunSettings,
    *,
    since: Since | None = None,
    out: Path | None = None,
    root: Path | None = None,
    dry_run: bool = False,
) -> int:
    """``opencode-restore nightly``: 0 when every changed session was restored.

    ``since`` (default 24 h back) bounds the sessions taken, or the last good run does.
    """
    now = clock()
    window = (since if since is not None else parse_since("24h")).window(now)
    config = settings.config()
    data_dir = config.data_dir
    out = out if out is not None else data_dir / "nightly"
    sink = command_sink(settings.quiet)
    provider = provider_for(config)
    spec = f"{provider.name}:{provider.model}"
    if dry_run:
        # Writes nothing: no lock, no scan into the store, not even a new store file.
        with tempfile.TemporaryDirectory() as empty:
            path = db_path(data_dir)
            store = Store(path if path.is_file() else Path(empty) / "store.sqlite3")
            manifest = Manifest(state_manifest(data_dir), sink)
            p = plan(
                store,
                manifest,
                spec,
                window=window,
                out=out,
                now=now,
                root=root,
                dry_run=True,
                sink=sink,
            )
            store.close()
        anyio.run(close_provider, provider)
        click.echo(f"dry run: sessions updated since {p.cutoff.isoformat(timespec='seconds')}")
        click.echo(f"output folder: {p.out_dir}")
        for line in _plan_lines(p.todo, p.reasons, len(p.unchanged)):
            click.echo(line)
        return 0
    with nightly_lock(data_dir):
        store = Store(db_path(data_dir))
        manifest = Manifest(state_manifest(data_dir), sink)
        p = plan(store, manifest, spec, window=window, out=out, now=now, root=root, sink=sink)
        if not p.todo:
            _index(store, data_dir)
            anyio.run(close_provider, provider)
            if not settings.quiet:
                click.echo(
                    f"nothing changed since {p.cutoff.isoformat(timespec='seconds')}: "
                    f"{counted(len(p.unchanged), 'session')} up to date"
                )
            return 0
        run_id = store.create_run(None, RUN_KIND)
        store.update_run(run_id, "running")
        job = BatchJob(
            p.todo,
            p.out_dir,
            config,
            provider,
            manifest,
            concurrency=settings.concurrency,
            options=settings.options(),
            on_result=store_hook(store, redacted=config.restore.redact),
            mirror=Manifest(p.out_dir / MANIFEST_NAME, sink),
            journals=journal_store(config),
        )
        report = _execute(job, settings, RUN_KIND)
        _index(store, data_dir)
        failed = len(report.failed)
        store.update_run(
            run_id,
            "failed" if failed else "done",
            error=f"{failed} of {len(p.todo)} sessions not restored" if failed else None,
        )
        return report.exit_code
