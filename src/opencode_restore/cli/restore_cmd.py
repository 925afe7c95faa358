"""The `restore` command: config, provider, progress bar, output.

The restore itself is `pipeline.run.restore_locked`: with ``[restore] resume`` (the
default) a second ``restore`` of the session started meanwhile waits for the first, then
continues from what it saved instead of asking the model for the same turns again.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path

import click
from rich.markup import escape
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from .. import event_loop
from ..atomic import write_output
from ..command_sink import command_sink
from ..config import Config, load_config
from ..consoles import console as make_console
from ..fields import counted, one_line
from ..heap import hold_thresholds
from ..llm.registry import close_provider, get_provider
from ..llm.settings import ProviderSettings
from ..llm.speed import Speed, SpeedLog, format_rate, slow_answer_note
from ..llm.usage import OFFLINE_NOTE, CallRecord, UsageLedger, is_offline
from ..model import Session
from ..pipeline.restoration import Restoration
from ..pipeline.run import RestoreOptions, journal_store, restore_locked
from ..report.html import session_html
from ..report.summary import render_restoration, restoration_json
from ..report.usage_note import usage_note
from ..sources import open_session
from ..tree import select_branch
from .exits import friendly_errors
from .options import output_option, provider_options, refuse_input_as_output
from .targets import input_options


class TurnColumn(ProgressColumn):
    """The bar's count: "turn 3/10" once the session's turns are counted, before that
    what is going on (rich would print the unknown total as "None")."""

    def render(self, task: Task) -> Text:
        """The text of the column for ``task``."""
        if task.total is None:
            return Text.from_markup("[bold]restore[/] counting turns…")
        return Text.from_markup(f"[bold]restore[/] turn {task.completed:.0f}/{task.total:.0f}")


class TurnProgress:
    """What ``restore`` shows after each turn.

    The bar's usage column: tokens, cost and the speed of the last turn's answers. Off a
    terminal (no bar) a model's run writes one line per turn to ``line`` instead, e.g.
    ``turn 3/10 done: 412 tokens in 8.7 s (47 tok/s)``, or ``turn 3/10 failed: …`` with
    the error when every call of the turn failed: a slow local model's restore takes
    minutes per turn, and a log or CI job would otherwise show nothing until the end.
    The first answer's speed also tells whether ``llm.timeout`` is long enough
    (`slow_answer_note`), once, to ``note``.
    """

    def __init__(
        self,
        *,
        offline: bool,
        line: Callable[[str], None] | None,
        note: Callable[[str], None] | None,
        max_tokens: int,
        timeout: float,
    ) -> None:
        self.offline = offline
        self.line = line
        self.note = note
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.done = -1
        self.calls = 0
        self.mark = Speed()
        self.rate: float | None = None
        self.warned = False

    def update(self, done: int, total: int, ledger: UsageLedger, speed: SpeedLog) -> str:
        """Take in the progress after a turn; returns the bar's usage text."""
        if self.offline:
            return OFFLINE_NOTE
        turn = speed.total - self.mark
        self.mark = speed.total
        calls = ledger.calls[self.calls :]
        self.calls = len(ledger.calls)
        if self.done >= 0 and done > self.done:
            if turn.rate is not None:
                self.rate = turn.rate
            if self.line is not None:
                self.line(f"turn {done}/{total} {_turn_outcome(calls, turn)}")
        self.done = done
        if not self.warned and speed.first is not None and self.note is not None:
            note = slow_answer_note(speed.first, self.max_tokens, self.timeout)
            if note is not None:
                self.note(f"note: {note}")
            self.warned = True
        t = ledger.total()
        spent = f"{t.usage.total} tokens" + (f" ${t.cost:.4f}" if t.cost else "")
        return spent + (f" {format_rate(self.rate)}" if self.rate is not None else "")


def _turn_outcome(calls: list[CallRecord], speed: Speed) -> str:
    """The turn's "done" and its speed, or its "failed" and the error when none of its
    calls succeeded (an unreachable model's turn is not done in 0.0 s)."""
    if calls and not any(c.ok for c in calls):
        return f"failed: {one_line(calls[-1].error, 200)}"
    return f"done: {speed.describe()}"


def run_restore(
    paths: list[Path],
    *,
    agent: str | None,
    model: str | None,
    max_turns: int | None,
    dump_turns: bool,
    fmt: str,
    output: Path | None,
    config_path: Path | None,
    base_url: str | None,
    quiet: bool,
    session_id: str | None = None,
    leaf: str | None = None,
    label: str | None = None,
    skip_evidence_search: bool | None = None,
    max_searches: int | None = None,
    workspace: str | None = None,
    fresh: bool = False,
    debug_render: bool = False,
    references: bool = False,
    demo: bool = False,
) -> int:
    """Run one restore; the exit code is 0 when complete, 1 when some turns failed. The
    restoration is saved in the store as the session's latest (not ``demo``'s, nor
    another branch's)."""
    evidence = {
        "skip_evidence_search": skip_evidence_search,
        "max_searches": max_searches,
        "workspace": workspace,
    }
    config = load_config(
        config_path,
        overrides={"llm": {"model": model, "base_url": base_url}, "restore": evidence},
    )
    provider = get_provider(config.llm.model, ProviderSettings.from_config(config))
    sink = command_sink(quiet)
    # Only the HTML page shows the session's messages afterwards; otherwise the main
    # line's bodies stay in the log until their turn (a branch is read whole).
    lean = fmt != "html" and leaf is None and label is None
    hold_thresholds()
    session = select_branch(open_session(paths, sink, agent, session_id, hollow=lean), leaf, label)
    # Before any model call: -o naming the log itself (or a link to it) would replace it.
    refuse_input_as_output(output, *session.files)
    # Another branch is another restore: it must not overwrite the main line's journal.
    branch = label or leaf if leaf is not None or label is not None else None
    store = journal_store(config)
    show_progress = not quiet and sys.stderr.isatty()
    console = make_console(stderr=True)
    with Progress(
        TurnColumn(),
        BarColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[usage]}"),
        TimeRemainingColumn(),
        console=console,
        disable=not show_progress,
        transient=True,
    ) as bar:
        offline = is_offline(provider.name)
        task = bar.add_task("turns", total=None, usage=OFFLINE_NOTE if offline else "0 tokens")

        def stderr_line(text: str) -> None:
            console.print(text, highlight=False, markup=False, soft_wrap=True)

        shown = TurnProgress(
            offline=offline,
            # The bar shows the speed on a terminal; -q shows nothing.
            line=None if quiet or show_progress else stderr_line,
            note=None if quiet else stderr_line,
            max_tokens=config.llm.max_tokens,
            timeout=config.llm.timeout,
        )

        def progress(done: int, total: int, ledger: UsageLedger, speed: SpeedLog) -> None:
            usage = shown.update(done, total, ledger, speed)
            bar.update(task, completed=done, total=total, usage=usage)

        def waiting(_journal: str) -> None:
            # The session, not its journal's name (its id and a digest of its file); the
            # id is the log's text, never markup.
            console.print(
                f"[dim]another restore of {escape(session.id)} is running; "
                "waiting for it, then reusing its turns[/]",
                highlight=False,
            )

        async def job() -> Restoration:
            try:
                return await restore_locked(
                    session,
                    config,
                    provider,
                    store=store,
                    options=RestoreOptions(
                        max_turns,
                        fresh=fresh,
                        debug_render=sys.stderr if debug_render else None,
                        branch=branch,
                        keep_messages=fmt == "html",
                    ),
                    progress=progress,
                    on_wait=None if quiet else waiting,
                )
            finally:
                # SDK connection pools must close inside the event loop that opened them.
                await close_provider(provider)

        restoration = event_loop.run(job)
    text: str | Iterable[str]
    if fmt == "json":
        # In pieces: a long session's JSON is never held whole (bench/scale.py).
        text = restoration_json(restoration, dump_turns)
    elif fmt == "html":
        text = session_html(session, restoration)
    else:
        text = render_restoration(restoration, fmt, dump_turns, references)
    if output is not None:
        write_output(output, text, session.files)
    elif isinstance(text, str):
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        sys.stdout.writelines(text)
        sys.stdout.write("\n")
    sys.stdout.flush()  # the restoration is out before the store is written
    # Another branch is not the session's restoration; the demo is no session of the user's.
    problem = None if branch is not None or demo else _keep(config, session, restoration)
    if problem is not None and not quiet:
        console.print(f"warning: {problem}", highlight=False, markup=False, soft_wrap=True)
    if not quiet:
        # The reader's warnings were printed as it read; the restore's own (evidence
        # search, fallback, an unfinished last turn) are in no format but the JSON.
        read = {str(w) for w in session.warnings}
        for warning in restoration.warnings:
            if warning not in read:
                console.print(f"warning: {warning}", highlight=False, markup=False, soft_wrap=True)
        failed = len(restoration.failed_turns)
        note = (
            f"{counted(restoration.turn_count, 'turn')}, "
            f"{usage_note(restoration.usage, restoration.provider)}"
        )
        if restoration.evidence:
            note += f", {counted(len(restoration.evidence), 'evidence item')}"
        if restoration.redactions:
            note += f", {counted(restoration.redactions, 'secret')} redacted"
        if failed:
            note += f"; {counted(failed, 'turn')} FAILED"
        console.print(f"[dim]{note}[/]")
        if restoration.timeline is not None and restoration.timeline.path:
            console.print(
                f"[dim]journal: {restoration.timeline.note} ({restoration.timeline.path})[/]",
                highlight=False,
                soft_wrap=True,
            )
    return 1 if restoration.failed_turns else 0


def _last_time(session: Session) -> datetime | None:
    """When the session's last message with a time was written."""
    for m in reversed(session.messages()):
        if m.timestamp is not None:
            return m.timestamp
    return None


def _keep(config: Config, session: Session, restoration: Restoration) -> str | None:
    """Save the restoration in the store as the session's latest (memory at start, the
    search index and the API read it there) and index what changed of the session, when
    there is an index (the first ``search`` builds it whole); what went wrong, or None.
    Neither fails the restore: its output is out already."""
    import sqlite3

    from ..errors import RestoreError
    from ..report.saved import keep_restoration
    from ..search.index import index_path, update
    from ..store import open_store

    try:
        store = open_store(config.data_dir)
    except (RestoreError, sqlite3.Error, OSError) as exc:
        return f"the restoration was not saved in the session store: {one_line(str(exc), 300)}"
    try:
        try:
            session_id = keep_restoration(
                store, restoration, redacted=config.restore.redact, updated=_last_time(session)
            )
        except (RestoreError, sqlite3.Error, OSError) as exc:
            return f"the restoration was not saved in the session store: {one_line(str(exc), 300)}"
        index = index_path(config.data_dir)
        if session_id is not None and index.exists():
            try:
                update(store, index, [session_id])
            except (RestoreError, sqlite3.Error, OSError) as exc:
                return f"the search index was not updated: {one_line(str(exc), 300)}"
    finally:
        store.close()
    return None


def _check_workspace(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``auto`` or an existing directory; anything else is a usage error before any work."""
    if value is None or value == "auto":
        return value
    path = Path(value).expanduser()
    if not path.exists():
        raise click.BadParameter(f"directory {value!r} does not exist")
    if not path.is_dir():
        raise click.BadParameter(f"{value!r} is not a directory")
    return str(path)


@click.command()
@input_options
@provider_options
@click.option(
    "--max-turns", type=click.IntRange(min=1), default=None, help="Summarize at most N turns."
)
@click.option("--dump-turns", is_flag=True, help="Print the turn-by-turn summaries instead.")
@click.option(
    "--skip-evidence-search",
    is_flag=True,
    default=None,
    help="No evidence search before the summary.",
)
@click.option(
    "--max-searches",
    type=click.IntRange(min=1),
    default=None,
    help="Evidence-search tool calls at most (default 8).",
)
@click.option(
    "--workspace",
    metavar="DIR|auto",
    default=None,
    callback=_check_workspace,
    help="Directory the evidence search may read; 'auto' trusts the session's recorded cwd "
    "(default: the recorded cwd only when the command runs in it or above it).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "json", "html", "prompt"]),
    default="markdown",
    help="prompt: a compact summary to paste into (or inject into) the next agent's context.",
)
@click.option(
    "--references",
    is_flag=True,
    help="Markdown: add the appendix (every command run, every cited message's place in the log).",
)
@click.option("--leaf", default=None, help="Restore the branch ending at this entry id.")
@click.option("--label", default=None, help="Restore the branch through this labelled entry.")
@output_option()
@click.option("-q", "--quiet", is_flag=True, help="No progress bar or warnings on stderr.")
@click.option("--fresh", is_flag=True, help="Ignore the saved journal; start from the first turn.")
@click.option(
    "--debug-render",
    is_flag=True,
    help="Print every rendered LLM request to stderr, cache breakpoints marked =>[1] =>[2] =>[3].",
)
@friendly_errors
def restore(
    paths: tuple[Path, ...],
    agent: str | None,
    session_id: str | None,
    model: str | None,
    max_turns: int | None,
    dump_turns: bool,
    skip_evidence_search: bool | None,
    max_searches: int | None,
    workspace: str | None,
    fmt: str,
    references: bool,
    leaf: str | None,
    label: str | None,
    output: Path | None,
    config_path: Path | None,
    base_url: str | None,
    quiet: bool,
    fresh: bool,
    debug_render: bool,
) -> None:
    """Restore a session into a SESSION SUMMARY.

    LOG...: one session's files, oldest first; or a session id (or a unique prefix),
    looked up in the store and the agents' default locations; or --latest.

    The restore's saved state (its journal) is kept per session in the data directory
    after every turn; a later run (after a crash, or on a grown log) continues it and only
    summarizes what is new or changed.
    """
    code = run_restore(
        list(paths),
        agent=agent,
        session_id=session_id,
        model=model,
        max_turns=max_turns,
        dump_turns=dump_turns,
        fmt=fmt,
        skip_evidence_search=skip_evidence_search,
        max_searches=max_searches,
        workspace=workspace,
        leaf=leaf,
        label=label,
        output=output,
        config_path=config_path,
        base_url=base_url,
        quiet=quiet,
        fresh=fresh,
        debug_render=debug_render,
        references=references,
        demo=_is_demo(paths),
    )
    sys.exit(code)


def _is_demo(paths: tuple[Path, ...]) -> bool:
    """True when ``paths`` is the packaged sample ``--demo`` reads."""
    from ..resources import demo_sample

    return len(paths) == 1 and paths[0].resolve() == Path(str(demo_sample())).resolve()
