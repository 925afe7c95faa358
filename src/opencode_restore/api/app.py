"""The HTTP API over the session store (FastAPI).

Only files registered in a session's chain are ever read: no endpoint takes a path.
Messages are streamed: the JSON body is built message by message, never as a list.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query
from fastapi.responses import StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from .. import __version__
from ..config import Config, load_config
from ..errors import SourceError
from ..report.messages import iter_json
from ..sources.base import WarningSink, parse_timestamp
from ..store.db import iso_utc
from ..store.fetch import session_messages
from ..store.store import SessionRow, Store
from .jobs import run_restore
from .schemas import (
    Health,
    JobOut,
    MessagesOut,
    RestoreRequest,
    SessionList,
    SessionOut,
    SummaryOut,
)

#: Bytes gathered before a chunk of the messages body is sent.
CHUNK_BYTES = 64 * 1024
_NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"description": "Unknown session"}}
_BEARER = HTTPBearer(auto_error=False)


def _time(name: str, value: str | None) -> datetime | None:
    """Parse an ISO 8601 query value, or answer 422 naming the parameter and the reason."""
    if value is None:
        return None
    ts = parse_timestamp(value)
    if ts is None:
        raise HTTPException(
            422,
            detail=[
                {
                    "loc": ["query", name],
                    "msg": f"{value!r} is not an ISO 8601 time (e.g. 2026-02-11T10:30:00Z)",
                    "type": "value_error",
                }
            ],
        )
    return ts


def _chunks(parts: Iterator[bytes]) -> Iterator[bytes]:
    """Gather small pieces into chunks of about ``CHUNK_BYTES`` (fewer thread hops)."""
    buf: list[bytes] = []
    size = 0
    for part in parts:
        buf.append(part)
        size += len(part)
        if size >= CHUNK_BYTES:
            yield b"".join(buf)
            buf, size = [], 0
    if buf:
        yield b"".join(buf)


def create_app(store: Store, token: str | None = None, config: Config | None = None) -> FastAPI:
    """The API over ``store``; with ``token``, every session and job call needs that bearer."""
    app = FastAPI(
        title="opencode-restore",
        version=__version__,
        description="Sessions, stitched transcript messages and restorations of coding agents.",
    )
    app.state.store = store
    app.state.config = config
    app.state.tasks = set()

    def authorize(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)],
    ) -> None:
        if token is None:
            return
        given = credentials.credentials if credentials is not None else ""
        if not secrets.compare_digest(given.encode(), token.encode()):
            raise HTTPException(
                401, detail="missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"}
            )

    unauthorized: dict[int | str, dict[str, Any]] = (
        {401: {"description": "Missing or wrong bearer token"}} if token is not None else {}
    )
    router = APIRouter(dependencies=[Depends(authorize)], responses=unauthorized)

    def session_or_404(session_id: str) -> SessionRow:
        row = store.session(session_id)
        if row is None:
            raise HTTPException(404, detail=f"unknown session {session_id!r}")
        return row

    @app.get("/healthz", tags=["meta"])
    def healthz() -> Health:
        """Liveness check (no token needed)."""
        return Health(status="ok", version=__version__)

    @router.get("/sessions", tags=["sessions"])
    def list_sessions(
        agent: Annotated[str | None, Query(description="Only this agent's sessions")] = None,
        since: Annotated[str | None, Query(description="Updated after (ISO 8601)")] = None,
        until: Annotated[str | None, Query(description="Updated at or before (ISO 8601)")] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        offset: Annotated[int, Query(ge=0, le=2**62)] = 0,
    ) -> SessionList:
        """Sessions, most recently updated first, filtered and paginated."""
        lo, hi = _time("since", since), _time("until", until)
        rows, total = store.sessions(
            agent=agent,
            since=iso_utc(lo) if lo else None,
            until=iso_utc(hi) if hi else None,
            limit=limit,
            offset=offset,
        )
        return SessionList(
            sessions=[SessionOut.of(r) for r in rows], total=total, limit=limit, offset=offset
        )

    @router.get("/sessions/{session_id}", tags=["sessions"], responses=_NOT_FOUND)
    def get_session(session_id: str) -> SessionOut:
        """One session with its transcript chain, oldest file first."""
        return SessionOut.of(session_or_404(session_id), with_files=True)

    @router.get(
        "/sessions/{session_id}/messages",
        tags=["sessions"],
        response_class=StreamingResponse,
        responses={
            200: {"model": MessagesOut, "content": {"application/json": {}}},
            404: {"description": "Unknown session"},
            410: {"description": "No file of the session's chain exists any more"},
        },
    )
    def get_messages(
        session_id: str,
        since: Annotated[
            str | None, Query(description="Only messages after this ISO 8601 time")
        ] = None,
        include_tools: bool = False,
        include_thinking: bool = False,
    ) -> StreamingResponse:
        """The session's messages stitched across its chain, oldest first (streamed JSON)."""
        row = session_or_404(session_id)
        since_ts = _time("since", since)
        try:
            fetch = session_messages(
                store,
                row,
                WarningSink(),
                since=since_ts,
                include_tools=include_tools,
                include_thinking=include_thinking,
            )
        except SourceError as exc:
            raise HTTPException(410, detail=exc.reason) from exc
        body = _chunks(iter_json({"session_id": row.id, "agent": row.agent}, fetch.messages))
        headers = {"X-Fetch-Mode": fetch.mode, "X-Missing-Files": str(len(fetch.missing))}
        return StreamingResponse(body, media_type="application/json", headers=headers)

    @router.get(
        "/sessions/{session_id}/summary",
        tags=["restorations"],
        responses={404: {"description": "Unknown session, or never restored"}},
    )
    def get_summary(session_id: str) -> SummaryOut:
        """The latest restoration of the session."""
        session_or_404(session_id)
        r = store.latest_restoration(session_id)
        if r is None:
            raise HTTPException(404, detail=f"session {session_id!r} has no restoration yet")
        return SummaryOut(
            id=r.id,
            session_id=r.session_id,
            created_at=r.created_at,
            provider=r.provider,
            markdown=r.summary_markdown,
            summary=r.summary,
            usage=r.usage,
            errors=r.errors,
        )

    @router.post(
        "/sessions/{session_id}/restore",
        tags=["restorations"],
        status_code=202,
        responses={**_NOT_FOUND, 400: {"description": "The body is not valid JSON"}},
    )
    async def start_restore(session_id: str, options: RestoreRequest | None = None) -> JobOut:
        """Start a restore with the configured provider; poll ``GET /jobs/{job_id}``."""
        row = await run_in_threadpool(session_or_404, session_id)
        if app.state.config is None:
            app.state.config = await run_in_threadpool(load_config)
        run_id = await run_in_threadpool(store.create_run, session_id, "restore")
        max_turns = options.max_turns if options is not None else None
        task = asyncio.create_task(run_restore(store, app.state.config, row, run_id, max_turns))
        app.state.tasks.add(task)
        task.add_done_callback(app.state.tasks.discard)
        run = await run_in_threadpool(store.run, run_id)
        assert run is not None
        return JobOut.of(run)

    @router.get(
        "/jobs/{job_id}",
        tags=["restorations"],
        responses={404: {"description": "Unknown job"}},
    )
    def get_job(job_id: str) -> JobOut:
        """Where a background job stands (``queued``, ``running``, ``done``, ``failed``)."""
        run = store.run(job_id)
        if run is None:
            raise HTTPException(404, detail=f"unknown job {job_id!r}")
        return JobOut.of(run)

    app.include_router(router)
    return app
