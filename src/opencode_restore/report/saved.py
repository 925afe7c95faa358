"""A restoration saved in the store, where memory at start, the search index, the API and
MCP read a session's latest one.

``save_restoration`` is the one way a restoration is stored (``nightly``, the API's jobs,
MCP, ``restore``). ``keep_restoration`` is ``restore``'s: it registers a session the store
does not know, as ``sessions scan`` would, then saves.
"""

from __future__ import annotations

import os
from datetime import datetime

from ..pipeline.restoration import Restoration
from ..sources import is_container
from ..store.db import iso_utc
from ..store.store import Store
from .json_pieces import model_python_json
from .summary import summary_markdown

#: Says which chain file a restore registered (``transcript_files.source``).
SOURCE = "restore"


def save_restoration(
    store: Store, session_id: str, restoration: Restoration, redacted: bool
) -> int:
    """Store ``restoration`` as session ``session_id``'s latest; returns its id.
    ``redacted``: it was made with ``[restore] redact`` on."""
    return store.add_restoration(
        session_id,
        provider=restoration.provider,
        summary_markdown=summary_markdown(restoration),
        # As text a field at a time: the whole dump as dicts was the peak of a long
        # session's restore (bench/scale.py).
        summary=model_python_json(restoration),
        usage=restoration.usage.model_dump(mode="json"),
        errors={
            "failed_turns": [f.model_dump() for f in restoration.failed_turns],
            "warnings": restoration.warnings,
        },
        redacted=redacted,
    )


def _stored_id(
    store: Store, agent: str, session_id: str, given: list[str], files: list[str]
) -> tuple[str, bool] | None:
    """The stored session the restored ``files`` are, and whether the store knows it: the
    one whose chain is these files (Claude Code files of one slug are stored under the
    oldest one's id), or the session itself when the store knows no file of it. None
    when they are not what the store knows as that session: a copy of its log, a part
    of its chain. ``files`` are the ``given`` paths resolved (a hook records them as the
    agent names them)."""
    names = sorted({*given, *files})
    owners = {
        str(r[0])
        for r in store.conn.execute(
            "SELECT DISTINCT session_id FROM transcript_files"
            f" WHERE path IN ({','.join('?' * len(names))})",
            names,
        )
    }
    if is_container(agent):
        owners &= {session_id}  # one file holds many sessions: the id says which
    if not owners:
        known = store.session(session_id)
        return (session_id, False) if known is None or not known.files else None
    if len(owners) > 1:
        return None
    (owner,) = owners
    chain = {os.path.realpath(f.path) for f in store.chain(owner) if os.path.exists(f.path)}
    return (owner, True) if chain == set(files) else None


def keep_restoration(
    store: Store, restoration: Restoration, *, redacted: bool, updated: datetime | None
) -> str | None:
    """Save ``restoration`` as its session's latest, registering the session first when
    the store does not know it (its files, cwd, title, start, and ``updated``: its last
    message's time); returns the id it is stored under, or None when the restored files
    are not what the store knows as that session (nothing is saved)."""
    info = restoration.session
    files = [os.path.realpath(f) for f in info.files]
    if not files:
        return None
    stored = _stored_id(store, info.agent, info.id, info.files, files)
    if stored is None:
        return None
    session_id, known = stored
    # A session the store knows keeps what it knows (the cwd a hook recorded, a scan's times).
    if not known:
        started = iso_utc(info.started_at) if info.started_at is not None else None
        for path in files:
            store.register(
                session_id,
                info.agent,
                path,
                cwd=info.cwd,
                title=info.title,
                source=SOURCE,
                created_at=started,
                updated_at=iso_utc(updated) if updated is not None else started,
            )
    save_restoration(store, session_id, restoration, redacted)
    return session_id
