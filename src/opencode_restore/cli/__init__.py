"""The ``opencode-restore`` command line: the group, assembled from one module per command group.

The command modules take their shared pieces from ``options``, ``targets`` and ``exits``
and never import this package, so the wiring points one way.

The group imports a command's module only when that command is run, or its help or its
options are asked for: some bring in the pipeline, the HTTP stack and pydantic,
which ``--version``, ``--help`` and completing a command name have no use for (they cost
about half a second of CPU). `COMMANDS` lists each command with its short help for that.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple

import click

from .. import __version__

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem


class LazyCommand(NamedTuple):
    """Where a command is defined, and the short help ``--help`` lists for it."""

    module: str
    attr: str
    #: The first sentence of the command's help (a test keeps the two equal).
    help: str


COMMANDS: dict[str, LazyCommand] = {
    "batch": LazyCommand(
        "batch_cmds",
        "batch",
        "Restore many sessions (INPUTS: files, directories or quoted globs) into --out.",
    ),
    "check": LazyCommand(
        "check_cmd",
        "check",
        "Send tiny requests with the parameters a restore would use; say what the server"
        " accepted or refused, one line each, and how structured output and tools will be"
        " asked for (exit 1 when no call worked).",
    ),
    "config": LazyCommand(
        "config_cmds",
        "config_group",
        "The configuration: packaged defaults < user file < OPENCODE_RESTORE_* env < flags.",
    ),
    "eval": LazyCommand(
        "eval_cmd",
        "eval_command",
        "Restore the recordings of each FACTS_FILE and score each summary against its facts.",
    ),
    "export-branch": LazyCommand(
        "tree_cmds",
        "export_branch",
        "Write the path from the root to entry --leaf of FILE as a new session file.",
    ),
    "formats": LazyCommand("read_cmds", "formats", "List the log formats this build can read."),
    "hook": LazyCommand(
        "store_cmds",
        "hook",
        "Record a session from an agent hook (JSON on stdin, or as the last argument).",
    ),
    "index": LazyCommand(
        "search_cmds",
        "index_cmd",
        "Build or update the search index of every registered session (only what changed).",
    ),
    "install": LazyCommand(
        "install_cmds", "install_cmd", "Make AGENT hand its sessions to opencode-restore."
    ),
    "mcp": LazyCommand(
        "mcp_cmd",
        "mcp_command",
        "Serve the session history to an agent over MCP (stdio): list_sessions,"
        " restore_session, get_messages, search_log.",
    ),
    "messages": LazyCommand(
        "read_cmds",
        "messages",
        "Print a session's messages, each with the [M#] label a restoration cites"
        " (LOG...: one session's files, oldest first, or its id).",
    ),
    "migrate": LazyCommand(
        "tree_cmds",
        "migrate",
        "Migrate a pi session FILE (v1/v2) to the current format version.",
    ),
    "nightly": LazyCommand(
        "batch_cmds",
        "nightly",
        "Restore the sessions that changed since the last run into OUT/YYYY-MM-DD/ (for cron).",
    ),
    "report": LazyCommand(
        "tree_cmds",
        "report",
        "Write a session (its files, its id, or --latest) as a self-contained HTML page.",
    ),
    "restore": LazyCommand("restore_cmd", "restore", "Restore a session into a SESSION SUMMARY."),
    "search": LazyCommand(
        "search_cmds",
        "search_cmd",
        'Search every registered session: words, "a phrase", prefix*, agent:X cwd:X file:X'
        " kind:error|decision|command since:7d; one line per hit (--format json for scripts).",
    ),
    "serve": LazyCommand(
        "store_cmds",
        "serve",
        "Serve the HTTP API over the session store (docs at /docs, the web viewer at /).",
    ),
    "sessions": LazyCommand(
        "store_cmds", "sessions", "The session store: find sessions on disk and list them."
    ),
    "tree": LazyCommand(
        "tree_cmds",
        "tree",
        "Print a session's tree: entries by depth, labels, branch points, the leaf.",
    ),
    "turns": LazyCommand(
        "read_cmds",
        "turns",
        "Print the turns of a session: the [M#] labels a restoration cites for their messages,"
        " the files they touched and the commands they ran.",
    ),
    "uninstall": LazyCommand(
        "install_cmds",
        "uninstall_cmd",
        "Take out exactly what `install AGENT` added (the file's earlier bytes when unchanged),"
        " its backup and the folders it made.",
    ),
}


class _PipeClosed(Exception):
    """A `BrokenPipeError` carried past click's ``main``, which would end the run with
    status 1 itself; `main` raises it again for the entry point, which ends every closed
    pipe the same way."""

    def __init__(self, error: BrokenPipeError) -> None:
        super().__init__(str(error))
        self.error = error


@contextmanager
def _past_click() -> Iterator[None]:
    """Re-raise a `BrokenPipeError` as `_PipeClosed`, which click lets through."""
    try:
        yield
    except BrokenPipeError as exc:
        raise _PipeClosed(exc) from exc


class LazyGroup(click.Group):
    """A group whose commands are imported on first use (click's documented lazy-loading
    pattern); listing them, in ``--help`` and in completion, reads `COMMANDS` instead."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        # Parsing prints --help and --version: their reader may be gone too.
        with _past_click():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        with _past_click():
            return super().invoke(ctx)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = COMMANDS.get(cmd_name)
        if where is None:
            return None
        command = getattr(importlib.import_module(f"{__name__}.{where.module}"), where.attr)
        if not isinstance(command, click.Command):
            raise TypeError(f"{where.module}.{where.attr} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        listed = _listed()
        # click's own spacing: the short help gets what the widest name leaves.
        limit = formatter.width - 6 - max(map(len, listed))
        rows = [(name, command.get_short_help_str(limit)) for name, command in listed.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        from click.shell_completion import CompletionItem

        items = [
            CompletionItem(name, help=command.get_short_help_str())
            for name, command in _listed().items()
            if name.startswith(incomplete)
        ]
        # The group's own options (--version, --color...), skipping Group's command listing.
        items.extend(click.Command.shell_complete(self, ctx, incomplete))
        return items


def _listed() -> dict[str, click.Command]:
    """A stand-in per command holding only its name and short help, so click shortens
    the help to the room it has exactly as it would the real command's."""
    return {name: click.Command(name, help=COMMANDS[name].help) for name in sorted(COMMANDS)}


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="opencode-restore")
@click.option(
    "--color/--no-color",
    default=None,
    help="Colour the output or not (default: on a terminal, unless NO_COLOR is set).",
)
@click.pass_context
def cli(ctx: click.Context, color: bool | None) -> None:
    """Restore coding-agent sessions into cited session summaries.

    \b
    Shell completion (bash; zsh_source or fish_source for the others):
      eval "$(_OPENCODE_RESTORE_COMPLETE=bash_source opencode-restore)"
    """
    ctx.color = color


def main() -> None:
    """Run the CLI; a closed stdout reaches the caller as the `BrokenPipeError` it was."""
    try:
        cli(prog_name="opencode-restore")
    except _PipeClosed as closed:
        raise closed.error from None
