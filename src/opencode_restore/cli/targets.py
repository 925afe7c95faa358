"""The session arguments of ``restore``, ``messages``, ``turns`` and ``report``.

``LOG...`` may be log files (one session's chain, oldest first) or one session id (or a
unique prefix of one); ``--latest`` picks the most recently active session, narrowed by
``--cwd`` (default: the current directory when it has sessions) and ``--agent``;
``--demo`` reads the sample session shipped in the package. `input_options` adds
``--agent`` and ``--session`` (``options``): the decorator those commands use.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import wraps
from importlib.resources import as_file
from pathlib import Path
from typing import Any, TypeVar

import click

from ..errors import UsageError
from ..resources import demo_sample
from .exits import friendly_errors
from .options import agent_option, merge_option, session_option

F = TypeVar("F", bound=Callable[..., Any])


def _is_reference(ref: str) -> bool:
    """A lone argument that names no existing file and does not look like a path."""
    return not os.path.lexists(ref) and os.sep not in ref and "/" not in ref


def resolve_inputs(
    refs: tuple[str, ...],
    agent: str | None,
    latest: bool,
    cwd: Path | None,
    data_dir: Path | None = None,
    merge: bool = False,
) -> tuple[list[Path], str | None, str | None]:
    """The files, format and (inside a container such as opencode.db) session id of the
    session the command line names; ``data_dir``'s store (default: the configured one).

    Several files are one session's chain: files of different sessions that do not
    continue each other are refused unless ``merge`` (``sources.chain``).
    """
    if cwd is not None and not latest:
        raise UsageError("--cwd narrows --latest; give --latest too")
    if latest or (len(refs) == 1 and _is_reference(refs[0])):
        from ..command_sink import command_sink
        from ..config import load_config
        from ..store import open_store
        from ..store.lookup import find_session, latest_session

        if latest and refs:
            raise UsageError("give either LOG/SESSION-ID arguments or --latest, not both")
        store = open_store(data_dir if data_dir is not None else load_config().data_dir)
        try:
            if latest:
                here = None if cwd is not None else os.getcwd()
                target = latest_session(
                    store,
                    cwd=str(cwd) if cwd is not None else None,
                    agent=agent,
                    here=here,
                    sink=command_sink(),
                )
            else:
                target = find_session(store, refs[0], agent=agent, sink=command_sink())
        finally:
            store.close()
        return target.paths, agent or target.agent, target.id if target.container else None
    if not refs:
        raise UsageError("give a log file, a session id (or a prefix of one), or --latest")
    paths = [Path(r) for r in refs]
    if len(paths) > 1 and not merge:
        from ..sources import resolve
        from ..sources.chain import check_chain

        check_chain(paths, resolve(paths, agent))
    return paths, agent, None


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
            sample = click.get_current_context().with_resource(as_file(demo_sample()))
            return fn(*args, paths=(sample,), **kw)
        paths, kw["agent"], inner = friendly_errors(resolve_inputs)(
            refs, kw.get("agent"), latest, cwd, merge=merge
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
