"""The stored sessions: a filtered, paginated list and one session with its chain."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from ...store.db import iso_utc
from ..deps import (
    MAX_NAME_CHARS,
    MAX_PATH_CHARS,
    SESSION_LOOKUP,
    SessionId,
    StoreDep,
    query_time,
    session_or_404,
    time_query,
)
from ..schemas import SessionList, SessionOut

router = APIRouter(tags=["sessions"])


@router.get("/sessions")
def list_sessions(
    store: StoreDep,
    agent: Annotated[
        str | None, Query(description="Only this agent's sessions", max_length=MAX_NAME_CHARS)
    ] = None,
    cwd: Annotated[
        str | None,
        Query(
            description="Only sessions of this project: its directory, one under it, or "
            "one whose last part it is (as search's cwd filter)",
            max_length=MAX_PATH_CHARS,
        ),
    ] = None,
    since: Annotated[str | None, time_query("Updated after this time, or in this span")] = None,
    until: Annotated[str | None, time_query("Updated at or before this time, or span ago")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=2**62)] = 0,
) -> SessionList:
    """Sessions, most recently updated first, filtered and paginated."""
    lo, hi = query_time("since", since), query_time("until", until)
    rows, total = store.sessions(
        agent=agent,
        project=cwd or None,
        since=iso_utc(lo) if lo else None,
        until=iso_utc(hi) if hi else None,
        limit=limit,
        offset=offset,
    )
    return SessionList(
        sessions=[SessionOut.of(r) for r in rows], total=total, limit=limit, offset=offset
    )


@router.get("/sessions/{session_id}", responses=SESSION_LOOKUP)
def get_session(session_id: SessionId, store: StoreDep) -> SessionOut:
    """One session with its transcript chain, oldest file first, and when it was last
    restored (a viewer asks for the restoration only when there is one)."""
    row = session_or_404(store, session_id)
    latest = store.latest_restoration(row.id)
    restored_at = latest.created_at if latest is not None else None
    return SessionOut.of(row, with_files=True, restored_at=restored_at)
