"""The web viewer at ``/``: one page and its scripts and stylesheet, shipped in the package.

The files hold no session data (the page reads the API from the browser), so they are
served without the token; ``/#token=...`` signs the browser in (see ``security.py``).
Every answer carries a Content-Security-Policy that lets the page load only this
server's scripts and styles and talk only to this server: log text the page shows can
never run, and nothing leaves the machine.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import Response

from ...report.html import markdown_script
from ..deps import authorize, json_content
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
    if name == "markdown.js":
        # The report's renderer, the one copy of it, made a module for this page's imports.
        return (markdown_script() + "\nexport { renderMarkdown };\n").encode()
    return (_FILES / name).read_bytes()


@router.get("/")
def page() -> Response:
    """The viewer's page."""
    return Response(_file("index.html"), media_type="text/html; charset=utf-8", headers=HEADERS)


@router.post(
    f"{ASSETS_URL}/sign-in",
    status_code=204,
    dependencies=[Depends(authorize), Depends(json_content)],
)
def sign_in(request: Request) -> Response:
    """Sign this browser in: the bearer token checked, a cookie that stands for it on
    reads (``security.py``). The page posts the token it was given in its address's
    fragment (``/#token=...``, which no request carries, so no access log shows it) or
    in its form."""
    token: str = request.app.state.token
    done = Response(status_code=204, headers=HEADERS)
    done.set_cookie(VIEWER_COOKIE, viewer_cookie(token), httponly=True, samesite="strict", path="/")
    return done


@router.get(f"{ASSETS_URL}/{{name}}")
def asset(name: str) -> Response:
    """One of the page's scripts or its stylesheet."""
    media_type = _ASSETS.get(name)
    if media_type is None:
        raise HTTPException(status_code=404, detail="Not Found")
    return Response(_file(name), media_type=media_type, headers=HEADERS)
