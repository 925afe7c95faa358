"""Where the store lives, resolved cheaply (the hook imports this on every agent event).

Same precedence as ``config.load_config`` for ``paths.data_dir``:
``OPENCODE_RESTORE_DATA_DIR`` / ``OPENCODE_RESTORE_PATHS_DATA_DIR`` > the user file > the
platform default (`dirs.default_data_dir`; the packaged ``config.toml`` sets none, a test
checks it). ``tomllib``, ``pathlib`` and ``platformdirs`` are imported only when needed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..dirs import default_data_dir, user_config_path
from .db import DB_NAME

if TYPE_CHECKING:
    from pathlib import Path


#: What to do when the data directory cannot be used, said with each such error.
FIX = "set OPENCODE_RESTORE_DATA_DIR or [paths] data_dir to a writable directory"


def _from_toml(path: str) -> str | None:
    if not os.path.isfile(path):
        return None
    import tomllib

    try:
        with open(path, "rb") as fh:
            paths = tomllib.load(fh).get("paths")
    except (OSError, tomllib.TOMLDecodeError):
        return None
    value = paths.get("data_dir") if isinstance(paths, dict) else None
    return value if isinstance(value, str) else None


def data_dir_str(env: Mapping[str, str] | None = None) -> str:
    """The configured data directory, as a string (no ``pathlib`` import when set by env)."""
    env = os.environ if env is None else env
    value = env.get("OPENCODE_RESTORE_DATA_DIR") or env.get("OPENCODE_RESTORE_PATHS_DATA_DIR")
    if not value:
        value = _from_toml(user_config_path()) or default_data_dir()
    return os.path.expanduser(value)


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """The configured data directory."""
    from pathlib import Path

    return Path(data_dir_str(env))


def db_path(directory: Path | None = None) -> Path:
    """The store's SQLite file inside ``directory`` (default: the configured data dir)."""
    return (directory if directory is not None else data_dir()) / DB_NAME


def cwd_variants(cwd: str | os.PathLike[str]) -> list[str]:
    """The spellings a recorded cwd may have: as given (absolute) and with symlinks resolved."""
    given = os.path.abspath(os.path.expanduser(os.fspath(cwd)))
    return sorted({given, os.path.realpath(given)})
