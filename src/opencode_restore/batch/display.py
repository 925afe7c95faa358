"""What a batch shows: a progress bar with ETA on stderr while it runs, a table at the end."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from ..llm.usage import OFFLINE_NOTE, is_offline
from .items import BatchItem
from .runner import BatchJob, BatchReport, Outcome

_MAX_ERROR = 120


class BatchProgress:
    """Sessions done out of the total, failures, tokens and the time left.

    ``offline``: the offline rules restore, no model is called: that is shown instead of
    a token count.
    """

    def __init__(self, bar: Progress, total: int, offline: bool = False) -> None:
        self.bar = bar
        self.offline = offline
        self.failed = self.running = self.tokens = 0
        self.task = bar.add_task("batch", total=total, failed=0, running=0, usage=self._usage())

    def _usage(self) -> str:
        return OFFLINE_NOTE if self.offline else f"{self.tokens} tokens"

    def start(self, item: BatchItem) -> None:
        """A session's restore started."""
        self.running += 1
        self.bar.update(self.task, running=self.running)

    def restored(self, item: BatchItem) -> None:
        """A session's restore ended: its worker is free while the outputs are written, so
        it no longer counts as running (counted until written, "running" exceeded the
        concurrency)."""
        self.running -= 1
        self.bar.update(self.task, running=self.running)

    def finish(self, outcome: Outcome) -> None:
        """A session was written and recorded."""
        self.failed += 0 if outcome.ok else 1
        u = outcome.usage
        self.tokens += u.input_tokens + u.output_tokens
        self.bar.update(self.task, advance=1, failed=self.failed, usage=self._usage())


@contextmanager
def progress_for(job: BatchJob, console: Console, enabled: bool) -> Iterator[None]:
    """Show a progress bar on ``console`` while the ``with`` block runs ``job``."""
    todo, _ = job.plan()
    with Progress(
        TextColumn("[bold]batch[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[running]} running, {task.fields[failed]} failed,"),
        TextColumn("{task.fields[usage]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        disable=not enabled,
        transient=True,
    ) as bar:
        shown = BatchProgress(bar, len(todo), offline=is_offline(job.provider.name))
        job.on_start, job.on_restored, job.on_finish = shown.start, shown.restored, shown.finish
        yield


def _short(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= _MAX_ERROR else text[: _MAX_ERROR - 1] + "…"


def report_table(report: BatchReport, title: str = "batch") -> Table:
    """Counts, usage and time, then one row per session that did not succeed.

    With the offline provider the caption says "offline rules: no model called" where
    the LLM calls and tokens would be: no model made any.
    """
    offline = is_offline(report.provider)
    table = Table(
        title=title,
        caption=OFFLINE_NOTE if offline else None,
        show_header=True,
        header_style="bold",
    )
    usage = () if offline else ("LLM calls", "tokens")
    for column in ("sessions", "done", "skipped", "incomplete", "failed", *usage):
        table.add_column(column, justify="right")
    table.add_column("time", justify="right")
    calls = sum(o.usage.calls for o in report.outcomes)
    tokens = sum(o.usage.input_tokens + o.usage.output_tokens for o in report.outcomes)
    table.add_row(
        str(len(report.outcomes)),
        str(report.count("done")),
        str(report.count("skipped")),
        str(report.count("incomplete")),
        str(report.count("failed")),
        *(() if offline else (str(calls), str(tokens))),
        f"{report.wall:.1f}s",
    )
    return table


def failures_table(report: BatchReport) -> Table | None:
    """The sessions that failed or are incomplete, with their first error; None if none."""
    if not report.failed:
        return None
    table = Table(title="not restored completely", header_style="bold")
    table.add_column("session")
    table.add_column("status")
    table.add_column("error")
    for o in sorted(report.failed, key=lambda o: o.item.key):
        # Text, not markup: an error may quote "[/path]", which rich takes for a tag.
        table.add_row(Text(o.item.key), o.status, Text(_short(o.error)))
    return table


def print_report(report: BatchReport, console: Console, out: Path, title: str = "batch") -> None:
    """The final tables, titled by the command, and where the outputs are."""
    console.print(report_table(report, title))
    failures = failures_table(report)
    if failures is not None:
        console.print(failures)
    console.print(f"outputs: {out}", highlight=False, markup=False, soft_wrap=True)
