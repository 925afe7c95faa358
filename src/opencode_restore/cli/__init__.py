"""Command wiring only: every command delegates to one public entry point."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from .. import __version__
from ..command_sink import command_sink
from ..errors import RestoreError
from ..sources import filter_messages, iter_messages, open_session, readers
from ..sources.base import parse_timestamp
from .options import agent_option, session_option
from .targets import session_inputs

F = TypeVar("F", bound=Callable[..., Any])


def friendly_errors(fn: F) -> F:
    """Turn our errors into one line on stderr and the error's exit code."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RestoreError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except BrokenPipeError:
            sys.exit(0)
        except OSError as exc:  # a full disk, a vanished folder: one line, not a traceback
            where = exc.filename if exc.filename is not None else "output"
            click.echo(f"error: {where}: {exc.strerror or exc}", err=True)
            sys.exit(2)

    return wrapper  # type: ignore[return-value]


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


@click.group()
@click.version_option(__version__, prog_name="opencode-restore")
def cli() -> None:
    """Restore coding-agent sessions into cited session summaries."""


@cli.command()
@session_inputs
@agent_option
@session_option
@click.option("--since", default=None, help="Only messages after this ISO 8601 time.")
@click.option("--include-tools", is_flag=True, help="Include tool calls and results.")
@click.option("--include-thinking", is_flag=True, help="Include thinking/reasoning blocks.")
@click.option("--format", "fmt", type=click.Choice(["json", "jsonl", "markdown"]), default="jsonl")
@friendly_errors
def messages(
    paths: tuple[Path, ...],
    agent: str | None,
    session_id: str | None,
    since: str | None,
    include_tools: bool,
    include_thinking: bool,
    fmt: str,
) -> None:
    """Print a session's messages (LOG...: one session's files, oldest first, or its id)."""
    from ..report.messages import iter_json, iter_jsonl, write_markdown
    from ..sources import resolve

    since_ts = parse_since(since)
    sink = command_sink()
    reader = resolve(list(paths), agent)
    stream = filter_messages(
        iter_messages(list(paths), sink, agent, session_id),
        since=since_ts,
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


@cli.command()
@session_inputs
@agent_option
@session_option
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown")
@friendly_errors
def turns(paths: tuple[Path, ...], agent: str | None, session_id: str | None, fmt: str) -> None:
    """Print the turns of a session with the files they touched and commands they ran."""
    from ..pipeline.stages.turn_parser import parse_turns
    from ..report.turns import turns_json, turns_markdown

    session = open_session(list(paths), command_sink(), agent, session_id)
    parsed = parse_turns(session)
    click.echo(turns_json(parsed) if fmt == "json" else turns_markdown(parsed), nl=False)


@cli.command()
def formats() -> None:
    """List the log formats this build can read."""
    for r in readers():
        click.echo(f"{r.name:<16} {r.description}")


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="opencode-restore")


@cli.command()
@session_inputs
@agent_option
@session_option
@click.option(
    "-m", "--model", default=None, help="provider:model, e.g. openai:gpt-4o (default offline)."
)
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
@click.option("--config", "config_path", type=click.Path(path_type=Path), default=None)
@click.option("--base-url", default=None, help="OpenAI-compatible server URL (Ollama, vLLM, ...).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar or warnings on stderr.")
@click.option(
    "--fresh", is_flag=True, help="Ignore the saved restore timeline; start from the first turn."
)
@click.option(
    "--debug-render",
    is_flag=True,
    help="Print every rendered LLM request to stderr, cache checkpoints marked =>[1] =>[2].",
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

    The restore timeline is saved per session in the data directory after every turn; a
    later run (after a crash, or on a grown log) continues it and only summarizes what is
    new or changed.
    """
    from .restore_cmd import run_restore

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
    )
    sys.exit(code)


@cli.command()
@click.option("-m", "--model", default=None, help="provider:model, e.g. openai:gpt-5.1.")
@click.option("--base-url", default=None, help="OpenAI-compatible server URL (Ollama, vLLM, ...).")
@click.option("--config", "config_path", type=click.Path(path_type=Path), default=None)
@friendly_errors
def check(model: str | None, base_url: str | None, config_path: Path | None) -> None:
    """Send one tiny request with the parameters a restore would use; say what the server
    accepted or refused, one line each (exit 1 when the call fails)."""
    from .check_cmd import run_check

    code, lines = run_check(model, base_url, config_path)
    for line in lines:
        click.echo(line)
    sys.exit(code)


from .tree_cmds import export_branch, migrate, report, tree  # noqa: E402  (needs the helpers above)

for _command in (migrate, export_branch, report, tree):
    cli.add_command(_command)

from .store_cmds import hook, serve, sessions  # noqa: E402  (needs the helpers above)

for _store_command in (hook, sessions, serve):
    cli.add_command(_store_command)

from .install_cmds import install_cmd, uninstall_cmd  # noqa: E402  (needs the helpers above)

for _install_command in (install_cmd, uninstall_cmd):
    cli.add_command(_install_command)

from .batch_cmds import batch, nightly  # noqa: E402  (needs the helpers above)

for _batch_command in (batch, nightly):
    cli.add_command(_batch_command)

from .eval_cmd import eval_command  # noqa: E402  (needs the helpers above)

cli.add_command(eval_command)

from .mcp_cmd import mcp_command  # noqa: E402  (needs the helpers above)

cli.add_command(mcp_command)
