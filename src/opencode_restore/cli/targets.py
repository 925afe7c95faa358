"""The session arguments of ``restore``, ``messages``, ``turns`` and ``report``.

``LOG...`` may be log files (one session's chain, oldest first) or one session id (or a
unique prefix of one); ``--latest`` picks the most recently active session, narrowed by
``--cwd`` (default: the current directory when it has sessions) and ``--agent``;
``--demo`` reads the sample session shipped in the package. `input_options` adds
``--agent`` and ``--session`` (``options``): the decorator those commands use.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from ..command_sink import command_sink
from ..resources import demo_sample
from ..store.inputs import resolve_inputs
from .exits import friendly_errors
from .options import agent_option, merge_option, session_option

F = TypeVar("F", bound=Callable[..., Any])


def session_inputs(fn: F) -> F:
    """Turn ``REFS... [--latest] [--cwd DIR]`` into the ``paths`` (and ``agent``) of ``fn``."""

    @click.argument("refs", nargs=-1, metavar="LOG...|SESSION-ID")
    @click.option(
        "--latest",
        is_flag=True,
        help="The most recently active session (of --cwd, default the current directory"
        " when it has sessions; of --agent).",
    )
    @click.option(
        "--cwd",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="With --latest: the session's working directory.",
    )
    @merge_option
    @click.option(
        "--demo",
        is_flag=True,
        help="Read the sample session shipped with the package (a real opencode session).",
    )
    @wraps(fn)
    def wrapper(
        *args: Any,
        refs: tuple[str, ...],
        latest: bool,
        cwd: Path | None,
        demo: bool,
        merge: bool,
        **kw: Any,
    ) -> Any:
        if demo:
            if refs or latest or cwd is not None:
                raise click.UsageError(
                    "--demo reads the packaged sample; give no LOG, --latest or --cwd"
                )
            from importlib.resources import as_file  # only --demo: tempfile and shutil

            sample = click.get_current_context().with_resource(as_file(demo_sample()))
            return fn(*args, paths=(sample,), **kw)
        paths, kw["agent"], inner = friendly_errors(resolve_inputs)(
            refs, kw.get("agent"), latest, cwd, command_sink(), merge=merge
        )
        # A session found inside a container (opencode.db, an Inspect log) is read there,
        # as `--session ID` would (an explicit --session still wins).
        kw["session_id"] = kw.get("session_id") or inner
        return fn(*args, paths=tuple(paths), **kw)

    return wrapper  # type: ignore[return-value]


def input_options(fn: F) -> F:
    """The session a command reads: ``LOG...|SESSION-ID``, ``--latest``, ``--cwd``,
    ``--merge``, ``--demo``, ``--agent`` and ``--session``; ``fn`` gets ``paths``,
    ``agent`` and ``session_id``."""
    return session_inputs(agent_option(session_option(fn)))
