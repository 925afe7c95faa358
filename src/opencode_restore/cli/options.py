"""Options and arguments several commands share, as decorators."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..atomic import output_refusal
from ..since import Since, SinceError, parse_since
from ..sources import reader_names

F = TypeVar("F", bound=Callable[..., Any])

paths_argument = click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
agent_option = click.option(
    "--agent",
    type=click.Choice(reader_names()),
    default=None,
    help="Force a log format (see `opencode-restore formats`).",
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
    if (why := output_refusal(value)) is not None:
        raise click.BadParameter(f"{value} {why}")
    parent = value.parent
    if not parent.is_dir():
        raise click.BadParameter(f"{parent} does not exist; create it first")
    return value


def refuse_input_as_output(output: Path | None, *inputs: str | os.PathLike[str]) -> None:
    """Raise `OSError` (one line from ``friendly_errors``) when ``output`` is refused."""
    if output is not None and (why := output_refusal(output, inputs)) is not None:
        raise OSError(errno.EINVAL, why, str(output))


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


class SinceType(click.ParamType[Since, Any]):
    """``--since``: an ISO 8601 time or a span back from now (see `opencode_restore.since`)."""

    name = "time|span"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> Since:
        if isinstance(value, Since):
            return value
        try:
            return parse_since(str(value))
        except SinceError as exc:
            self.fail(exc.reason, param, ctx)


SINCE = SinceType()


def provider_options(fn: F) -> F:
    """``-m/--model``, ``--base-url`` and ``--config``: which model, where, and which config."""
    options = [
        click.option(
            "-m",
            "--model",
            default=None,
            metavar="PROVIDER:MODEL",
            help="The model, e.g. openai:gpt-4o or anthropic:claude-sonnet-4-5 "
            "(default: the configured one, offline unless set).",
        ),
        click.option(
            "--base-url", default=None, help="OpenAI-compatible server URL (Ollama, vLLM, ...)."
        ),
        click.option(
            "--config",
            "config_path",
            type=click.Path(dir_okay=False, path_type=Path),
            default=None,
            help="Read this config file instead of the user's config.toml.",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn
