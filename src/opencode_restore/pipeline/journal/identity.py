"""Which journal a session's restore continues: named by its id and its file's identity.

A journal named by the session id alone was overwritten by a backup copy of the log, a
truncated copy or the same log read as another agent's (each then paid the whole restore
again), and terminal captures named after their file (``tui.typescript``) shared one.
The name adds a digest of the agent and the real path of the chain's first file: the
chain may grow (a resumed session appends files), its first file stays. A log moved
elsewhere is another file: it starts a journal of its own.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from ...model import Session
from .store import JournalStore


def journal_key(session: Session, branch: str | None = None) -> str:
    """The journal name of ``session``: ``<id>-<10 hex digits of agent and first file>``,
    then ``@<branch>`` for a branch restore (apart from the main line's)."""
    first = os.path.realpath(session.files[0]) if session.files else ""
    digest = hashlib.sha256(f"{session.agent}\0{first}".encode()).hexdigest()[:10]
    key = f"{session.id}-{digest}"
    return key if branch is None else f"{key}@{branch}"


def saved_journal(
    store: JournalStore, session: Session, branch: str | None = None, *, adopt: bool = False
) -> dict[str, Any] | None:
    """The saved journal of ``session`` (or of its ``branch``): under `journal_key`, else
    the one saved under the session id alone before, when this agent made it from this
    very file (a journal saved before the upgrade is continued, not paid for again).

    ``adopt`` (the caller holds the journal's lock) saves such an older journal under
    its new name too, so that the path a restore reports is the file it continues.
    """
    key = journal_key(session, branch)
    data = store.load(key)
    if data is not None:
        return data
    data = store.load(session.id if branch is None else f"{session.id}@{branch}")
    if data is None or not _made_from(data, session):
        return None
    if adopt:
        data = {**data, "key": key}
        store.save(key, data)
    return data


def _made_from(data: dict[str, Any], session: Session) -> bool:
    """Whether the saved ``data`` was made by ``session``'s agent from its first file."""
    files = data.get("source_files")
    if data.get("agent") != session.agent or not session.files or not files:
        return False
    saved = files[0].get("path") if isinstance(files[0], dict) else None
    return isinstance(saved, str) and os.path.realpath(saved) == os.path.realpath(session.files[0])
