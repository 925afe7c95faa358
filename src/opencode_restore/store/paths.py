"""Where the store lives, resolved without pydantic (the hook must start fast).

Same precedence as ``config.load_config`` for ``paths.data_dir``: the packaged
``config.toml`` < the user file < ``OPENCODE_RESTORE_DATA_DIR`` /
``OPENCODE_RESTORE_PATHS_DATA_DIR``.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path

from ..resources import data_path
from .db import DB_NAME

_USER_CONFIG = "~/.config/opencode-restore/config.toml"
_FALLBACK = "~/.local/share/opencode-restore"


def _from_toml(path: Path) -> str | None:
    try:
        with path.open("rb") as fh:
            paths = tomllib.load(fh).get("paths")
    except (OSError, tomllib.TOMLDecodeError):
        return None
    value = paths.get("data_dir") if isinstance(paths, dict) else None
    return value if isinstance(value, str) else None


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """The data directory the configuration names."""
    env = os.environ if env is None else env
    value = env.get("OPENCODE_RESTORE_DATA_DIR") or env.get("OPENCODE_RESTORE_PATHS_DATA_DIR")
    if not value:
        value = _from_toml(Path(os.path.expanduser(_USER_CONFIG)))
    if not value:
        value = _from_toml(data_path("config.toml")) or _FALLBACK
    return Path(os.path.expanduser(value))


def db_path(directory: Path | None = None) -> Path:
    """The store's SQLite file inside ``directory`` (default: the configured data dir)."""
    return (directory if directory is not None else data_dir()) / DB_NAME
