"""Liveness."""

from __future__ import annotations

from fastapi import APIRouter

from ... import __version__
from ..schemas import Health

router = APIRouter(tags=["meta"])


@router.get("/healthz")
def healthz() -> Health:
    """Liveness check."""
    return Health(status="ok", version=__version__)
