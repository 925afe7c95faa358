"""The OpenAPI schema and its Swagger UI (out of the schema, behind the read guard)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse

router = APIRouter(include_in_schema=False)


@router.get("/openapi.json")
def openapi(request: Request) -> dict[str, Any]:
    """The app's OpenAPI schema."""
    schema: dict[str, Any] = request.app.openapi()
    return schema


@router.get("/docs")
def docs(request: Request) -> HTMLResponse:
    """Swagger UI over ``/openapi.json``."""
    return get_swagger_ui_html(openapi_url="/openapi.json", title=f"{request.app.title} - docs")
