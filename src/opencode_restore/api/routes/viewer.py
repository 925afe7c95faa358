"""The web viewer at ``/``: one page and its scripts and stylesheet, shipped in the package.

The files hold no session data (the page reads the API from the browser), so they are
served without the token; ``/?token=...`` signs the browser in (see ``security.py``).
Every answer carries a Content-Security-Policy that lets the page load only this
server's scripts and styles and talk only to this server: log text the page shows can
never run, and nothing leaves the machine.
"""

from __future__ import annotations

import secrets
from functools import cache
from importlib import resources
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import RedirectResponse, Response

from ..deps import MAX_ID_CHARS
from ..security import VIEWER_COOKIE, viewer_cookie

router = APIRouter(include_in_schema=False)

ASSETS_URL = "/viewer"
#: The page's files with their media types: nothing else is served.
_ASSETS = {
    "viewer.css": "text/css; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "api.js": "text/javascript; charset=utf-8",
    "dom.js": "text/javascript; charset=utf-8",
    "list.js": "text/javascript; charset=utf-8",
    "session.js": "text/javascript; charset=utf-8",
    "markdown.js": "text/javascript; charset=utf-8",
}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # A new version's page must not run with an old version's cached scripts.
    "Cache-Control": "no-cache",
}
_FILES = resources.files("opencode_restore.api") / "viewer"


@cache
def _file(name: str) -> bytes:
    return (_FILES / name).read_bytes()


@router.get("/")
def page(
    request: Request,
    token: Annotated[str | None, Query(max_length=MAX_ID_CHARS)] = None,
) -> Response:
    """The viewer's page; with ``token`` (the API's), sign this browser in and come back
    to ``/`` (so the token leaves the address bar and the history)."""
    if token is None:
        return Response(_file("index.html"), media_type="text/html; charset=utf-8", headers=HEADERS)
    expected: str = request.app.state.token
    if not secrets.compare_digest(token.encode(), expected.encode()):
        raise HTTPException(401, detail="wrong token: give the API's token as /?token=TOKEN")
    back = RedirectResponse("/", status_code=303, headers=HEADERS)
    back.set_cookie(
        VIEWER_COOKIE, viewer_cookie(expected), httponly=True, samesite="strict", path="/"
    )
    return back


@router.get(f"{ASSETS_URL}/{{name}}")
def asset(name: str) -> Response:
    """One of the page's scripts or its stylesheet."""
    media_type = _ASSETS.get(name)
    if media_type is None:
        raise HTTPException(status_code=404, detail="Not Found")
    return Response(_file(name), media_type=media_type, headers=HEADERS)
