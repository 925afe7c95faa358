"""Options shared by the commands that read one session (a module of its own: the
package's ``__init__`` imports the command modules, so they cannot import from it)."""

from __future__ import annotations

from pathlib import Path

import click

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
