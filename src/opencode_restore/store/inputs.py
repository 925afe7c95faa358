"""What a command names as its session: log files, a session id (or a unique prefix of
one), or the latest session (of a directory, of an agent).

The command line (``LOG...|SESSION-ID``, ``--latest``, ``--cwd``) and the MCP server's
``restore_session`` resolve their arguments here. The store, the config and the readers
are imported only when a reference is looked up, so a command given files starts fast.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..diagnostics import WarningSink
from ..errors import UsageError


def _is_reference(ref: str) -> bool:
    """A lone argument that names no existing file and does not look like a path."""
    return not os.path.lexists(ref) and os.sep not in ref and "/" not in ref


def resolve_inputs(
    refs: tuple[str, ...],
    agent: str | None,
    latest: bool,
    cwd: Path | None,
    sink: WarningSink,
    data_dir: Path | None = None,
    merge: bool = False,
) -> tuple[list[Path], str | None, str | None]:
    """The files, format and (inside a container such as opencode.db) session id of the
    session ``refs`` / ``latest`` name; ``data_dir``'s store (default: the configured one).

    Several files are one session's chain: files of different sessions that do not
    continue each other are refused unless ``merge`` (``sources.chain``).
    """
    if cwd is not None and not latest:
        raise UsageError("--cwd narrows --latest; give --latest too")
    if latest or (len(refs) == 1 and _is_reference(refs[0])):
        from ..config import load_config
        from . import open_store
        from .lookup import find_session, latest_session

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
                    sink=sink,
                )
            else:
                target = find_session(store, refs[0], agent=agent, sink=sink)
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
