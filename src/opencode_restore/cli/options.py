"""Options and arguments several commands share, as decorators."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from ..sources.base import parse_timestamp

F = TypeVar("F", bound=Callable[..., Any])

paths_argument = click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
agent_option = click.option(
    "--agent", default=None, help="Force a log format (see `opencode-restore formats`)."
)
session_option = click.option(
    "--session",
    "session_id",
    default=None,
    metavar="ID",
    help="The session to read from an input that holds several (opencode.db or storage, "
    "an Inspect log of several samples): its id or a unique prefix.",
)
merge_option = click.option(
    "--merge",
    is_flag=True,
    help="Read LOG files of different sessions as one (refused otherwise, unless a file"
    " continues the one before it: a resumed or forked session).",
)


def _check_output(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """Refuse an output path that cannot be written before any work (or LLM call) is done."""
    if value is None or str(value) == "-":
        return value
    if value.is_dir():
        raise click.BadParameter(f"{value} is a directory; give a file name")
    parent = value.parent
    if not parent.is_dir():
        raise click.BadParameter(f"{parent} does not exist; create it first")
    return value


def output_option(help_text: str = "Write here.", *, required: bool = False) -> Callable[[F], F]:
    """``-o/--output FILE``, checked before the command runs."""
    return click.option(
        "-o",
        "--output",
        type=click.Path(path_type=Path),
        default=None,
        required=required,
        callback=_check_output,
        help=help_text,
    )


def parse_since(value: str | None) -> datetime | None:
    """Parse ``--since`` or fail with a usage error naming the expected format."""
    if value is None:
        return None
    ts = parse_timestamp(value)
    if ts is None:
        raise click.BadParameter(f"{value!r} is not an ISO 8601 time (e.g. 2026-02-11T10:30:00Z)")
    return ts
