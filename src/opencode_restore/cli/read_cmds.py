"""The reading commands: ``messages``, ``turns`` and ``formats``.

``messages`` and ``turns`` show each message's ``[M#]`` label, the one a restoration
of the session cites (`timeline.numbering.Labeler`): ``messages --label M22`` follows a
citation to its message.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import click

from ..command_sink import command_sink
from ..errors import UsageError
from ..model import Labelled, Message
from ..since import Since
from ..sources import iter_messages, message_filter, open_session, readers
from ..timeline.numbering import Labeler, parse_label
from .exits import friendly_errors
from .options import SINCE, output_option, refuse_input_as_output
from .targets import input_options

#: The messages shown on each side of ``--around``'s message when ``--context`` is not given.
AROUND = 2


def _label_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    label = parse_label(value)
    if label is None:
        raise click.BadParameter(f"{value!r} is not a label; give one like M22")
    return label


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
@click.option(
    "--label",
    default=None,
    metavar="M#",
    callback=_label_option,
    help="Only the message a restoration cites as this label (e.g. M22), whatever its type.",
)
@click.option(
    "--around",
    default=None,
    metavar="M#",
    callback=_label_option,
    help="The message cited as this label with --context messages on each side.",
)
@click.option(
    "--context",
    "-C",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help=f"With --around: the messages shown on each side (default {AROUND}).",
)
@click.option("--format", "fmt", type=click.Choice(["json", "jsonl", "markdown"]), default="jsonl")
@output_option("Write here instead of standard output.")
@friendly_errors
def messages(
    paths: tuple[Path, ...],
    agent: str | None,
    session_id: str | None,
    since: Since | None,
    include_tools: bool,
    include_thinking: bool,
    label: str | None,
    around: str | None,
    context: int | None,
    fmt: str,
    output: Path | None,
) -> None:
    """Print a session's messages, each with the [M#] label a restoration cites
    (LOG...: one session's files, oldest first, or its id)."""
    from ..report.messages import iter_json, iter_jsonl, iter_markdown, unzip
    from ..sources import resolve

    if label is not None and around is not None:
        raise click.UsageError("give --label or --around, not both")
    if context is not None and around is None:
        raise click.UsageError("--context goes with --around")
    refuse_input_as_output(output, *paths)
    reader = resolve(list(paths), agent)
    labeler = Labeler()
    stream = (
        (m, labeler.label(m)) for m in iter_messages(list(paths), command_sink(), agent, session_id)
    )
    keep = message_filter(
        since.cutoff() if since is not None else None, include_tools, include_thinking
    )
    chosen: Iterable[Labelled]
    if label is not None or around is not None:
        target, side = (label, 0) if label is not None else (around, context)
        assert target is not None
        chosen = _around(stream, keep, target, AROUND if side is None else side)
        if not chosen:
            raise UsageError(f"{target} is not a label of this session ({_issued(labeler)})")
    else:
        chosen = ((m, lab) for m, lab in stream if keep(m))
    shown, labels = unzip(chosen)
    pieces: Iterator[bytes] | Iterator[str]
    if fmt == "markdown":
        pieces = iter_markdown(shown, labels)
    elif fmt == "jsonl":
        pieces = iter_jsonl(shown, labels)
    else:
        header = {"files": [str(p) for p in paths], "agent": reader.name}
        pieces = iter_json(header, shown, labels)
    _write(pieces, output, paths)


def _around(
    stream: Iterator[Labelled], keep: Callable[[Message], bool], target: str, context: int
) -> list[Labelled]:
    """The message labelled ``target`` with up to ``context`` kept messages on each side;
    empty when no message has that label. The cited message is shown whatever the
    filters say: following a citation must not need them."""
    before: deque[Labelled] = deque(maxlen=context)
    for m, lab in stream:
        if lab == target:
            after = islice((pair for pair in stream if keep(pair[0])), context)
            return [*before, (m, lab), *after]
        if keep(m):
            before.append((m, lab))
    return []


def _issued(labeler: Labeler) -> str:
    """What labels the session has, for the error naming one it has not."""
    return f"its labels run M1-M{labeler.issued}" if labeler.issued else "it has no labels"


def _write(pieces: Iterator[bytes] | Iterator[str], output: Path | None, inputs: Any) -> None:
    """``pieces`` to ``output`` (written whole or not at all), or to standard output."""
    from ..atomic import write_output

    if output is not None and str(output) != "-":
        write_output(output, (p if isinstance(p, str) else p.decode() for p in pieces), inputs)
        return
    out = sys.stdout.buffer
    for piece in pieces:
        out.write(piece if isinstance(piece, bytes) else piece.encode())
    out.flush()


@click.command()
@input_options
@click.option(
    "--since",
    type=SINCE,
    default=None,
    help="Only turns active after this time (ISO 8601, or a span back from now: 90m, 24h, 7d).",
)
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown")
@friendly_errors
def turns(
    paths: tuple[Path, ...],
    agent: str | None,
    session_id: str | None,
    since: Since | None,
    fmt: str,
) -> None:
    """Print the turns of a session: the [M#] labels a restoration cites for their
    messages, the files they touched and the commands they ran."""
    from ..pipeline.stages.turn_parser import parse_turns
    from ..report.turns import turns_json, turns_markdown

    session = open_session(list(paths), command_sink(), agent, session_id)
    parsed = parse_turns(session)
    # Numbered over every turn, in order, as a restore does, before any is left out.
    labeler = Labeler()
    labels = {
        m.id: lab for t in parsed for m in t.messages if (lab := labeler.label(m)) is not None
    }
    if since is not None:
        active = message_filter(since.cutoff(), include_tools=True, include_thinking=True)
        parsed = [t for t in parsed if any(map(active, t.messages))]
    text = turns_json(parsed, labels) if fmt == "json" else turns_markdown(parsed, labels)
    click.echo(text, nl=False)


@click.command()
def formats() -> None:
    """List the log formats this build can read."""
    for r in readers():
        click.echo(f"{r.name:<16} {r.description}")
