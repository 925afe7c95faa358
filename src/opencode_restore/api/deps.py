"""What the API's routes share: the bearer check, the app's store, config and jobs, lookups.

The store, config, job queue and token live on ``app.state`` (set by ``create_app``), so
the routers are plain module-level ``APIRouter``s and one process can serve several apps.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Path, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ..config import Config
from ..since import SinceError, parse_since
from ..store.lookup import AmbiguousSession, SessionNotFound, match_session
from ..store.store import SessionRow, Store
from .jobs import JobQueue
from .security import VIEWER_COOKIE, viewer_cookie

BEARER = HTTPBearer(
    auto_error=False,
    description="The API token: serve --token, OPENCODE_RESTORE_TOKEN, or DATA_DIR/api-token.",
)
UNAUTHORIZED: dict[int | str, dict[str, Any]] = {
    401: {"description": "Missing or wrong bearer token"}
}
#: The answers of a session id (or prefix) that names no one session.
SESSION_LOOKUP: dict[int | str, dict[str, Any]] = {
    404: {"description": "Unknown session"},
    409: {"description": "The id prefix matches several sessions (the detail lists them)"},
}
#: Time parameters: an ISO 8601 time or a span back from now, as ``--since`` takes.
TIME_OR_SPAN: dict[str, Any] = {"examples": ["2026-02-11T10:30:00Z", "24h"]}
_JSON_MEDIA = "application/json"
#: The methods the viewer's cookie may stand for the token on: reads only.
READ_METHODS = frozenset({"GET", "HEAD"})
#: Bounds of every identifier and text parameter: far above any real value (a UUID, an
#: opencode or Inspect sample id, an agent name, an ISO time), so anything longer is a 422
#: before a lookup, not a 404 quoting kilobytes back.
MAX_ID_CHARS = 512
MAX_NAME_CHARS = 64
#: A cwd filter is a path.
MAX_PATH_CHARS = 4096
MAX_TIME_CHARS = 64
#: A session id in the path.
SessionId = Annotated[
    str,
    Path(
        min_length=1,
        max_length=MAX_ID_CHARS,
        description="A stored session's id, or a prefix of one id",
    ),
]
#: A job id in the path.
JobId = Annotated[str, Path(min_length=1, max_length=MAX_ID_CHARS, description="A job's id")]


def time_query(description: str) -> Any:
    """A time query parameter: an ISO 8601 time or a span back from now, bounded."""
    return Query(description=description, max_length=MAX_TIME_CHARS, **TIME_OR_SPAN)


def authorize(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)],
) -> None:
    """Answer 401 unless the request carries the app's bearer token (or, to read, the web
    viewer's cookie: see ``security.py``)."""
    token: str = request.app.state.token
    given = credentials.credentials if credentials is not None else ""
    if secrets.compare_digest(given.encode(), token.encode()):
        return
    cookie = request.cookies.get(VIEWER_COOKIE, "")
    if request.method not in READ_METHODS or not secrets.compare_digest(
        cookie.encode(), viewer_cookie(token).encode()
    ):
        raise HTTPException(
            401, detail="missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"}
        )


def json_content(request: Request) -> None:
    """A POST must say it carries JSON: no cross-site form or "simple" request can."""
    media = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media != _JSON_MEDIA and not (media.startswith("application/") and media.endswith("+json")):
        raise HTTPException(
            415, detail="send Content-Type: application/json and a JSON object ({} or options)"
        )


async def _store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


async def _config(request: Request) -> Config:
    config: Config = request.app.state.config
    return config


async def _jobs(request: Request) -> JobQueue:
    jobs: JobQueue = request.app.state.jobs
    return jobs


# Coroutines, so that FastAPI does not send these lookups to a worker thread.
StoreDep = Annotated[Store, Depends(_store)]
ConfigDep = Annotated[Config, Depends(_config)]
JobsDep = Annotated[JobQueue, Depends(_jobs)]


def session_or_404(store: Store, session_id: str) -> SessionRow:
    """The stored session whose id is ``session_id`` or the one starting with it, as the
    command line finds one (the store only: no discovery); 404, or 409 for a prefix of
    several ids (the detail lists them).

    Called inside the handlers, not as a dependency: a dependency would answer 404
    before the query and body are validated, and an invalid request must stay a 422.
    """
    try:
        return match_session(store, session_id, discover=False)
    except AmbiguousSession as exc:
        raise HTTPException(409, detail=exc.one_line()) from None
    except SessionNotFound:
        raise HTTPException(
            404, detail=f"unknown session {session_id!r}: no stored session id starts with it"
        ) from None


def query_time(name: str, value: str | None) -> datetime | None:
    """Parse a time query value as ``--since`` is parsed everywhere (an ISO 8601 time or a
    span back from now such as ``24h``), or answer 422 naming the parameter and the reason."""
    if value is None:
        return None
    try:
        return parse_since(value, name).cutoff()
    except SinceError as exc:
        raise HTTPException(
            422, detail=[{"loc": ["query", name], "msg": exc.reason, "type": "value_error"}]
        ) from None
