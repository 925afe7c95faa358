"""The SQLite session store: sessions, transcript chains, restorations, runs.

Kept import-light (``opencode-restore hook`` loads ``store.db`` on every agent
event); ``Store`` and ``open_store`` are loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from .store import Store

__all__ = ["Store", "open_store"]


def open_store(data_dir: Path | None = None) -> Store:
    """The store in ``data_dir`` (default: the configured data directory)."""
    from .paths import db_path
    from .store import Store

    return Store(db_path(data_dir))


def __getattr__(name: str) -> Any:
    if name == "Store":
        from .store import Store

        return Store
    raise AttributeError(name)
