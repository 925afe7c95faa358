"""The ``batch`` and ``nightly`` commands (wiring only; the work is in ``batch/``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ..since import Since
from .exits import friendly_errors
from .options import SINCE, agent_option, provider_options


def _run_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The options `batch` and `nightly` share (the provider's first)."""
    options = [
        click.option(
            "--concurrency",
            type=click.IntRange(min=1),
            default=4,
            show_default=True,
            help="Sessions restored at once.",
        ),
        click.option(
            "--max-turns", type=click.IntRange(min=1), default=None, help="At most N turns each."
        ),
        click.option(
            "--skip-evidence-search", is_flag=True, default=None, help="No evidence search."
        ),
        click.option(
            "--max-searches",
            type=click.IntRange(min=1),
            default=None,
            help="Evidence calls at most.",
        ),
        click.option("-q", "--quiet", is_flag=True, help="No progress bar, warnings or table."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return provider_options(fn)


def _settings(kwargs: dict[str, Any]) -> Any:
    from ..batch.settings import RunSettings

    return RunSettings(
        model=kwargs["model"],
        base_url=kwargs["base_url"],
        config_path=kwargs["config_path"],
        concurrency=kwargs["concurrency"],
        max_turns=kwargs["max_turns"],
        skip_evidence_search=kwargs["skip_evidence_search"],
        max_searches=kwargs["max_searches"],
        quiet=kwargs["quiet"],
    )


@click.command()
@click.argument("inputs", nargs=-1, required=True)
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Output folder: <session>.md, <session>.json and manifest.jsonl.",
)
@agent_option
@click.option(
    "--since",
    type=SINCE,
    default=None,
    help="Only sessions active after this time (ISO 8601, or a span back from now: 24h, 7d).",
)
@click.option("--force", is_flag=True, help="Restore sessions the manifest says are done, too.")
@click.option("-v", "--verbose", is_flag=True, help="List the files ignored as no session log.")
@click.option(
    "--dask",
    default=None,
    metavar="ADDRESS",
    help="Run on a Dask cluster (scheduler address, or local[:N]); needs the dask extra.",
)
@_run_options
@friendly_errors
def batch(
    inputs: tuple[str, ...],
    out: Path,
    agent: str | None,
    since: Since | None,
    force: bool,
    verbose: bool,
    dask: str | None,
    **kwargs: Any,
) -> None:
    """Restore many sessions (INPUTS: files, directories or quoted globs) into --out.

    Resumable: a session the manifest records as done with the same content is
    skipped. Exit code 0 when every session was restored, 1 when some failed, 2 when
    the inputs hold no session.
    """
    from ..batch.app import run_batch

    code = run_batch(
        list(inputs),
        out,
        _settings(kwargs),
        agent=agent,
        force=force,
        dask=dask,
        since=since,
        verbose=verbose,
    )
    sys.exit(code)


@click.command()
@click.option(
    "--since",
    type=SINCE,
    default="24h",
    show_default=True,
    help="Sessions updated after this time (ISO 8601, or a span back from now: 90m, 24h, 7d),"
    " or since the last good run.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the dated folders go (default: DATA_DIR/nightly).",
)
@click.option(
    "--root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Scan this folder instead of each agent's default location.",
)
@click.option("--dry-run", is_flag=True, help="Say what would be restored; write nothing.")
@_run_options
@friendly_errors
def nightly(
    since: Since, out: Path | None, root: Path | None, dry_run: bool, **kwargs: Any
) -> None:
    """Restore the sessions that changed since the last run into OUT/YYYY-MM-DD/ (for cron).

    A second run while one is going exits with code 75 and does nothing.
    """
    from ..batch.app import run_nightly

    sys.exit(run_nightly(_settings(kwargs), since=since, out=out, root=root, dry_run=dry_run))
