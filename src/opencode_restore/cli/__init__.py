"""The ``opencode-restore`` command line: the group, assembled from one module per command group.

The command modules take their shared pieces from ``options``, ``targets`` and ``exits``
and never import this package, so the wiring points one way.
"""

from __future__ import annotations

import click

from .. import __version__
from .batch_cmds import batch, nightly
from .check_cmd import check
from .config_cmds import config_group
from .eval_cmd import eval_command
from .install_cmds import install_cmd, uninstall_cmd
from .mcp_cmd import mcp_command
from .read_cmds import formats, messages, turns
from .restore_cmd import restore
from .store_cmds import hook, serve, sessions
from .tree_cmds import export_branch, migrate, report, tree


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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


for _command in (
    messages,
    turns,
    formats,
    restore,
    check,
    migrate,
    export_branch,
    report,
    tree,
    hook,
    sessions,
    serve,
    install_cmd,
    uninstall_cmd,
    batch,
    nightly,
    eval_command,
    mcp_command,
    config_group,
):
    cli.add_command(_command)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="opencode-restore")
