"""Restorations: the latest one of a session, starting one in the background, its job."""

from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException, Response
from starlette.concurrency import run_in_threadpool

from ..deps import (
    SESSION_LOOKUP,
    UNAUTHORIZED,
    ConfigDep,
    JobId,
    JobsDep,
    SessionId,
    StoreDep,
    authorize,
    json_content,
    session_or_404,
)
from ..jobs import TooManyJobs
from ..schemas import JobOut, RestoreRequest, SummaryOut

router = APIRouter(tags=["restorations"])


@router.get(
    "/sessions/{session_id}/summary",
    responses={**SESSION_LOOKUP, 404: {"description": "Unknown session, or never restored"}},
)
def get_summary(session_id: SessionId, store: StoreDep) -> SummaryOut:
    """The latest restoration of the session."""
    row = session_or_404(store, session_id)
    r = store.latest_restoration(row.id)
    if r is None:
        raise HTTPException(404, detail=f"session {row.id!r} has no restoration yet")
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
    status_code=202,
    # Writes always need the token, checked first; when the read guard also asks for it
    # FastAPI runs the (cached) check once.
    dependencies=[Depends(authorize), Depends(json_content)],
    responses={
        **SESSION_LOOKUP,
        **UNAUTHORIZED,
        200: {"model": JobOut, "description": "The session's job already queued or running"},
        202: {"model": JobOut, "description": "A new job, queued"},
        400: {"description": "The body is not valid JSON, or the Host is not allowed"},
        415: {"description": "The request does not say it carries JSON"},
        429: {"description": "Too many jobs queued; try again later"},
    },
)
async def start_restore(
    session_id: SessionId,
    response: Response,
    options: RestoreRequest,
    store: StoreDep,
    config: ConfigDep,
    jobs: JobsDep,
) -> JobOut:
    """Start a restore with the configured provider; poll ``GET /jobs/{job_id}``.

    One job per session: while one is queued or running, this returns it (200).
    """
    row = await run_in_threadpool(session_or_404, store, session_id)
    try:
        run, created = await jobs.submit(config, row, options.max_turns)
    except TooManyJobs:
        raise HTTPException(
            429, detail=f"{jobs.max_queued} jobs are queued or running; try again later"
        ) from None
    response.status_code = 202 if created else 200
    return JobOut.of(run)


@router.get("/jobs/{job_id}", responses={404: {"description": "Unknown job"}})
def get_job(job_id: JobId, store: StoreDep) -> JobOut:
    """Where a background job stands (``queued``, ``running``, ``done``, ``failed``)."""
    run = store.run(job_id)
    if run is None:
        raise HTTPException(404, detail=f"unknown job {job_id!r}")
    return JobOut.of(run)
