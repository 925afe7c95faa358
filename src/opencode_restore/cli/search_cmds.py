"""The search commands: ``index`` builds or updates the search index, ``search`` queries it."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING

import click

from ..fields import counted
from ..since import Since
from .exits import friendly_errors
from .options import SINCE

if TYPE_CHECKING:
    from ..search.index import Progress
    from ..search.query import Hit

#: The row kinds ``--kind`` takes (``search.rows.KINDS``, listed here so that ``--help``
#: does not import the index).
KIND_CHOICES = ("command", "decision", "error", "file", "message", "summary", "thinking", "tool")
# Control characters of a log's text (a terminal escape) never reach the terminal; the
# snippet's own markers (\x02, \x03) are kept until they are styled.
_CONTROL = re.compile(r"[\x00\x01\x04-\x1f\x7f-\x9f]+")
_SPACE = re.compile(r"\s+")


@contextmanager
def progress_bar(what: str, announce: bool) -> Iterator[Progress]:
    """A progress bar of sessions on stderr (a terminal), else one line when ``announce``."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from ..consoles import console

    on_tty = sys.stderr.isatty()
    if announce and not on_tty:
        click.echo(f"{what}…", err=True)
    with Progress(
        TextColumn(f"[bold]{what}[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("sessions"),
        console=console(stderr=True),
        disable=not on_tty,
        transient=True,
    ) as bar:
        task = bar.add_task(what, total=None)

        def step(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield step


def _where() -> tuple[object, Path]:
    from ..config import load_config
    from ..search.index import index_path
    from ..store import open_store

    data_dir = load_config().data_dir
    return open_store(data_dir), index_path(data_dir)


@click.command("index")
@click.option("--rebuild", is_flag=True, help="Build the index anew instead of updating it.")
@friendly_errors
def index_cmd(rebuild: bool) -> None:
    """Build or update the search index of every registered session (only what changed)."""
    from ..search.index import rebuild as rebuild_index
    from ..search.index import update
    from ..store.store import Store

    store, path = _where()
    assert isinstance(store, Store)
    with progress_bar("indexing", announce=False) as step:
        done = (rebuild_index if rebuild else update)(store, path, progress=step)
    what = "rebuilt" if done.rebuilt else "updated"
    click.echo(
        f"{what} {path}: {counted(done.sessions, 'session')} indexed,"
        f" {counted(done.rows, 'row')} added"
    )


def _project(cwd: str | None) -> str:
    if not cwd:
        return "-"
    pure = PureWindowsPath(cwd) if "\\" in cwd else PurePosixPath(cwd)
    return pure.name or cwd


def _styled(snippet: str) -> str:
    """The snippet on one line, its matches bold (click drops the style off a terminal)."""
    text = _SPACE.sub(" ", _CONTROL.sub(" ", snippet)).strip()
    return (
        re.sub("\x02(.*?)\x03", lambda m: click.style(m.group(1), bold=True), text, flags=re.DOTALL)
        .replace("\x02", "")
        .replace("\x03", "")
    )


def hit_line(hit: Hit) -> str:
    """One line of ``search``: session id prefix, agent, project, time, label, snippet."""
    when = (hit.time or "")[:16].replace("T", " ") or "-"
    label = f"[{hit.label}]" if hit.label else f"({hit.kind})"
    project = _project(hit.cwd)[:20]
    return (
        f"{hit.session_id[:8]:<8}  {hit.agent:<11} {project:<20} {when:<16}  {label:<7}"
        f" {_styled(hit.snippet)}"
    )


def _cwd(value: str | None) -> str | None:
    """``--cwd``: an existing directory as its absolute path (``.`` is here), else as given
    (a project's name, or a directory that is gone)."""
    if value is None:
        return None
    p = Path(value).expanduser()
    return str(p.resolve()) if p.is_dir() else value


@click.command("search")
@click.argument("query")
@click.option("--agent", default=None, help="Only this agent's sessions.")
@click.option(
    "--cwd",
    default=None,
    help="Only the sessions of this directory, one under it, or a project of this name.",
)
@click.option(
    "--since",
    type=SINCE,
    default=None,
    help="Only rows after this time (ISO 8601, or a span back from now: 24h, 7d).",
)
@click.option(
    "--kind",
    "kinds",
    type=click.Choice(KIND_CHOICES),
    multiple=True,
    help="Only rows of this kind (repeatable).",
)
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@friendly_errors
def search_cmd(
    query: str,
    agent: str | None,
    cwd: str | None,
    since: Since | None,
    kinds: tuple[str, ...],
    limit: int,
    fmt: str,
) -> None:
    """Search every registered session: words, "a phrase", prefix*, agent:X cwd:X file:X
    kind:error|decision|command since:7d; one line per hit (--format json for scripts)."""
    from ..consoles import use_color
    from ..search.index import catch_up
    from ..search.query import parse, search
    from ..store.store import Store

    parse(query)  # a bad query is said before any indexing
    store, path = _where()
    assert isinstance(store, Store)
    with progress_bar("building the search index", announce=not path.exists()) as step:
        catch_up(store, path, progress=step)
    hits = search(
        path,
        query,
        agent=agent,
        cwd=_cwd(cwd),
        since=since.cutoff() if since is not None else None,
        kinds=frozenset(kinds) if kinds else None,
        limit=limit,
    )
    if fmt == "json":
        import orjson

        click.echo(orjson.dumps({"hits": [h.to_dict() for h in hits]}).decode())
        return
    color = use_color()
    for hit in hits:
        click.echo(hit_line(hit), color=color)
    if not hits:
        known = store.conn.execute("SELECT EXISTS (SELECT 1 FROM sessions)").fetchone()[0]
        # A new user's first search: the store knows no session until something registers one.
        click.echo(
            "no hits"
            if known
            else "no hits: no session is registered yet; run `opencode-restore sessions scan`"
            " (or restore one)",
            err=True,
        )
