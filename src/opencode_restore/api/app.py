"""The HTTP API over the session store (FastAPI).

Only files registered in a session's chain are ever read: no endpoint takes a path.
Every error, down to an unexpected exception, is a JSON body ``{"detail": ...}``.
Who may call what is decided in ``security.py`` (Host check, bearer token); the routes
live in ``routes/``, one router per resource, and share ``deps.py``.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from .. import __version__
from ..config import Config, load_config
from ..store.store import Store
from .deps import UNAUTHORIZED, authorize
from .jobs import JobQueue
from .routes import docs, health, messages, restores, search, sessions, viewer
from .security import HostGuard, HostPolicy, load_or_create_token


async def _internal_error(request: Request, exc: Exception) -> JSONResponse:
    """An unexpected exception: JSON like every other error (uvicorn still logs the trace)."""
    return JSONResponse({"detail": f"internal error ({type(exc).__name__})"}, status_code=500)


#: Characters of a refused value quoted back in a 422 (the value may be megabytes).
ECHO_CHARS = 200


async def _invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
    """422 for a request that does not validate, as FastAPI answers it, with every quoted
    input made safe: ``{"max_turns": 1e400}`` parses to infinity, which no JSON response
    can hold (FastAPI's own handler then failed with a 500), and a long value is clipped.
    """
    return JSONResponse({"detail": _echoable(jsonable_encoder(exc.errors()))}, status_code=422)


def _echoable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, str) and len(value) > ECHO_CHARS:
        return value[:ECHO_CHARS] + "…"
    if isinstance(value, list):
        return [_echoable(v) for v in value]
    if isinstance(value, dict):
        return {k: _echoable(v) for k, v in value.items()}
    return value


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    try:
        yield
    finally:
        await app.state.jobs.close()


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
    app = FastAPI(
        title="opencode-restore",
        version=__version__,
        description="Sessions, stitched transcript messages and restorations of coding agents.",
        lifespan=_lifespan,
        # The Host guard answers before any route, so every operation can say 400.
        responses={400: {"description": "The Host header names no allowed host"}},
        # Served by routes/docs.py, behind the token when reads need it.
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
    )
    app.state.store = store
    app.state.config = config
    app.state.token = token
    app.state.jobs = JobQueue(store, config.api.max_jobs, config.api.max_queued_jobs)
    app.add_middleware(HostGuard, policy=HostPolicy(allowed_hosts))
    app.add_exception_handler(Exception, _internal_error)
    app.add_exception_handler(RequestValidationError, _invalid_request)  # type: ignore[arg-type]

    read_guard: list[Any] = [Depends(authorize)] if reads_need_token else []
    read_errors = UNAUTHORIZED if reads_need_token else {}
    app.include_router(docs.router, dependencies=read_guard)
    # The viewer's files hold no data: served unguarded, so the page can ask for the token.
    app.include_router(viewer.router)
    for routes in (health, sessions, messages, restores, search):
        app.include_router(routes.router, dependencies=read_guard, responses=read_errors)
    return app
