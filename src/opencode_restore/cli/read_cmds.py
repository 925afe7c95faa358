"""The reading commands: ``messages``, ``turns`` and ``formats``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..command_sink import command_sink
from ..since import Since
from ..sources import filter_messages, iter_messages, open_session, readers
from .exits import friendly_errors
from .options import SINCE
from .targets import input_options


@click.command()
@input_options
@click.option(
    "--since",
    type=SINCE,
    default=None,
    help="Only messages after this time (ISO 8601, or a span back from now: 90m, 24h, 7d).",
)
@click.option("--include-tools", is_flag=True, help="Include tool calls and results.")
@click.option("--include-thinking", is_flag=True, help="Include thinking/reasoning blocks.")
@click.option("--format", "fmt", type=click.Choice(["json", "jsonl", "markdown"]), default="jsonl")
@friendly_errors
def messages(
    paths: tuple[Path, ...],
    agent: str | None,
    session_id: str | None,
    since: Since | None,
    include_tools: bool,
    include_thinking: bool,
    fmt: str,
) -> None:
    """Print a session's messages (LOG...: one session's files, oldest first, or its id)."""
    from ..report.messages import iter_json, iter_jsonl, write_markdown
    from ..sources import resolve

    sink = command_sink()
    reader = resolve(list(paths), agent)
    stream = filter_messages(
        iter_messages(list(paths), sink, agent, session_id),
        since=since.cutoff() if since is not None else None,
        include_tools=include_tools,
        include_thinking=include_thinking,
    )
    if fmt == "markdown":
        write_markdown(sys.stdout, stream)
        return
    out = sys.stdout.buffer
    chunks = (
        iter_jsonl(stream)
        if fmt == "jsonl"
        else iter_json({"files": [str(p) for p in paths], "agent": reader.name}, stream)
    )
    for chunk in chunks:
        out.write(chunk)
    out.flush()


@click.command()
@input_options
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown")
@friendly_errors
def turns(paths: tuple[Path, ...], agent: str | None, session_id: str | None, fmt: str) -> None:
    """Print the turns of a session with the files they touched and commands they ran."""
    from ..pipeline.stages.turn_parser import parse_turns
    from ..report.turns import turns_json, turns_markdown

    session = open_session(list(paths), command_sink(), agent, session_id)
    parsed = parse_turns(session)
    click.echo(turns_json(parsed) if fmt == "json" else turns_markdown(parsed), nl=False)


@click.command()
def formats() -> None:
    """List the log formats this build can read."""
    for r in readers():
        click.echo(f"{r.name:<16} {r.description}")
