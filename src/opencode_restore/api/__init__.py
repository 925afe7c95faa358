"""HTTP API (FastAPI) over the session store: ``create_app(store, token=None)``."""

from __future__ import annotations

from .app import create_app

__all__ = ["create_app"]
