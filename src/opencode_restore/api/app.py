"""The HTTP API over the session store (FastAPI).

Only files registered in a session's chain are ever read: no endpoint takes a path.
Messages are streamed: the JSON body is built message by message, never as a list.
Every error, down to an unexpected exception, is a JSON body ``{"detail": ...}``.
Who may call what is decided in ``security.py`` (Host check, bearer token).
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request, Response
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse, StreamingResponse
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
from .jobs import JobQueue, TooManyJobs
from .schemas import (
    Health,
    JobOut,
    MessagesOut,
    RestoreRequest,
    SessionList,
    SessionOut,
    SummaryOut,
)
from .security import HostGuard, HostPolicy, load_or_create_token

#: Bytes gathered before a chunk of the messages body is sent.
CHUNK_BYTES = 64 * 1024
_NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"description": "Unknown session"}}
_BEARER = HTTPBearer(
    auto_error=False,
    description="The API token: serve --token, OPENCODE_RESTORE_TOKEN, or DATA_DIR/api-token.",
)
_JSON_MEDIA = "application/json"
#: Time parameters: declared as RFC 3339 date-times (any ISO 8601 time is accepted).
_DATE_TIME: dict[str, Any] = {"json_schema_extra": {"format": "date-time"}}


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


def _json_content(request: Request) -> None:
    """A POST must say it carries JSON: no cross-site form or "simple" request can."""
    media = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media != _JSON_MEDIA and not (media.startswith("application/") and media.endswith("+json")):
        raise HTTPException(
            415, detail="send Content-Type: application/json and a JSON object ({} or options)"
        )


async def _internal_error(request: Request, exc: Exception) -> JSONResponse:
    """An unexpected exception: JSON like every other error (uvicorn still logs the trace)."""
    return JSONResponse({"detail": f"internal error ({type(exc).__name__})"}, status_code=500)


def create_app(
    store: Store,
    token: str | None = None,
    config: Config | None = None,
    *,
    reads_need_token: bool = True,
    allowed_hosts: Iterable[str] = (),
) -> FastAPI:
    """The API over ``store``.

    Every POST needs the bearer ``token`` (None: the one kept in the store's data
    directory, made on first use); with ``reads_need_token`` every other request does
    too. Only loopback names and ``allowed_hosts`` are served as ``Host`` (``*``: any).
    """
    if token is None:
        token, _ = load_or_create_token(store.path.parent)
    config = config if config is not None else load_config()
    jobs = JobQueue(store, config.api.max_jobs, config.api.max_queued_jobs)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await jobs.close()

    app = FastAPI(
        title="opencode-restore",
        version=__version__,
        description="Sessions, stitched transcript messages and restorations of coding agents.",
        lifespan=lifespan,
        # The Host guard answers before any route, so every operation can say 400.
        responses={400: {"description": "The Host header names no allowed host"}},
        # Served below, behind the token when reads need it.
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
    )
    app.state.store = store
    app.state.config = config
    app.state.jobs = jobs
    app.add_middleware(HostGuard, policy=HostPolicy(allowed_hosts))
    app.add_exception_handler(Exception, _internal_error)

    def authorize(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)],
    ) -> None:
        given = credentials.credentials if credentials is not None else ""
        if not secrets.compare_digest(given.encode(), token.encode()):
            raise HTTPException(
                401, detail="missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"}
            )

    unauthorized: dict[int | str, dict[str, Any]] = {
        401: {"description": "Missing or wrong bearer token"}
    }
    read_guard: list[Any] = [Depends(authorize)] if reads_need_token else []
    read_errors = unauthorized if reads_need_token else {}
    router = APIRouter(dependencies=read_guard, responses=read_errors)

    def session_or_404(session_id: str) -> SessionRow:
        row = store.session(session_id)
        if row is None:
            raise HTTPException(404, detail=f"unknown session {session_id!r}")
        return row

    @app.get("/openapi.json", include_in_schema=False, dependencies=read_guard)
    def openapi() -> dict[str, Any]:
        return app.openapi()

    @app.get("/docs", include_in_schema=False, dependencies=read_guard)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title=f"{app.title} - docs")

    @router.get("/healthz", tags=["meta"])
    def healthz() -> Health:
        """Liveness check."""
        return Health(status="ok", version=__version__)

    @router.get("/sessions", tags=["sessions"])
    def list_sessions(
        agent: Annotated[str | None, Query(description="Only this agent's sessions")] = None,
        since: Annotated[str | None, Query(description="Updated after", **_DATE_TIME)] = None,
        until: Annotated[
            str | None, Query(description="Updated at or before", **_DATE_TIME)
        ] = None,
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
            str | None, Query(description="Only messages after this time", **_DATE_TIME)
        ] = None,
        include_tools: bool = False,
        include_thinking: bool = False,
        raw: Annotated[
            bool, Query(description="Serve secrets unredacted (redacted unless asked)")
        ] = False,
    ) -> StreamingResponse:
        """The session's messages stitched across its chain, oldest first (streamed JSON).

        Secrets in every string are redacted unless ``raw=true`` is asked for.
        """
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
                raw=raw,
            )
        except SourceError as exc:
            raise HTTPException(410, detail=exc.reason) from exc
        body = _chunks(iter_json({"session_id": row.id, "agent": row.agent}, fetch.messages))
        try:
            # Read the first chunk before answering: a file that fails as it is opened
            # gets a JSON error, not a cut stream (past the first chunk, nothing can).
            first = next(body)
        except (SourceError, OSError) as exc:
            reason = exc.reason if isinstance(exc, SourceError) else str(exc)
            raise HTTPException(410, detail=reason) from exc
        headers = {"X-Fetch-Mode": fetch.mode, "X-Missing-Files": str(len(fetch.missing))}
        return StreamingResponse(
            itertools.chain((first,), body), media_type="application/json", headers=headers
        )

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
        # The token is checked first (the router's guard when reads need it too).
        dependencies=[*([] if reads_need_token else [Depends(authorize)]), Depends(_json_content)],
        responses={
            **_NOT_FOUND,
            **unauthorized,
            200: {"model": JobOut, "description": "The session's job already queued or running"},
            202: {"model": JobOut, "description": "A new job, queued"},
            400: {"description": "The body is not valid JSON, or the Host is not allowed"},
            415: {"description": "The request does not say it carries JSON"},
            429: {"description": "Too many jobs queued; try again later"},
        },
    )
    async def start_restore(
        session_id: str,
        response: Response,
        options: RestoreRequest,
    ) -> JobOut:
        """Start a restore with the configured provider; poll ``GET /jobs/{job_id}``.

        One job per session: while one is queued or running, this returns it (200).
        """
        row = await run_in_threadpool(session_or_404, session_id)
        max_turns = options.max_turns
        try:
            run, created = await jobs.submit(config, row, max_turns)
        except TooManyJobs:
            raise HTTPException(
                429, detail=f"{jobs.max_queued} jobs are queued or running; try again later"
            ) from None
        response.status_code = 202 if created else 200
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
