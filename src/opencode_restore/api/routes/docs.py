"""The OpenAPI schema and its Swagger UI (out of the schema, behind the read guard).

The Swagger UI page loads its script, stylesheet and icon from this server, not from a
CDN (FastAPI's default), so ``/docs`` works on a machine without internet. The files
come from the ``fastapi-offline`` package (MIT, Swagger UI 5, a default dependency):
only its static files are used; its app factory would put ``/docs`` outside the guard.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response

router = APIRouter(include_in_schema=False)

ASSETS_URL = "/docs/assets"
#: The files the page references, with their media types: nothing else is served.
_ASSETS = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon.png": "image/png",
}


@router.get("/openapi.json")
def openapi(request: Request) -> dict[str, Any]:
    """The app's OpenAPI schema."""
    schema: dict[str, Any] = request.app.openapi()
    return schema


@router.get("/docs")
def docs(request: Request) -> HTMLResponse:
    """Swagger UI over ``/openapi.json``, its assets served by `docs_asset`."""
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title=f"{request.app.title} - docs",
        swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
        swagger_favicon_url=f"{ASSETS_URL}/favicon.png",
        # Swagger UI's default sends the schema's URL to validator.swagger.io for a badge.
        swagger_ui_parameters={"validatorUrl": None},
    )


#: Resolved on import: without the package ``serve`` stops at once with the install hint.
_STATIC = resources.files("fastapi_offline") / "static"


@cache
def _asset(name: str) -> bytes:
    return (_STATIC / name).read_bytes()


@router.get(f"{ASSETS_URL}/{{name}}")
def docs_asset(name: str) -> Response:
    """One of the Swagger UI page's files (immutable for an installed version: cached)."""
    media_type = _ASSETS.get(name)
    if media_type is None:
        raise HTTPException(status_code=404, detail="Not Found")
    return Response(_asset(name), media_type=media_type, headers={"Cache-Control": "max-age=86400"})
