"""How a command ends when something goes wrong: one line on stderr and an exit code."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import click

from ..errors import RestoreError

F = TypeVar("F", bound=Callable[..., Any])


def friendly_errors(fn: F) -> F:
    """Turn our errors into one line on stderr and the error's exit code."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RestoreError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except BrokenPipeError:
            raise  # the reader went away: the entry point ends every command the same way
        except OSError as exc:  # a full disk, a vanished folder: one line, not a traceback
            where = exc.filename if exc.filename is not None else "output"
            line = _data_dir_error(exc) or f"{where}: {exc.strerror or exc}"
            click.echo(f"error: {line}", err=True)
            sys.exit(2)
        except Exception as exc:
            store_line = _store_error(exc)
            if store_line is None:
                raise
            click.echo(f"error: {store_line}", err=True)
            sys.exit(2)

    return wrapper  # type: ignore[return-value]


def _store_error(exc: Exception) -> str | None:
    """One line for a SQLite error of the session store (a read-only data directory
    lets the store open but not write), or None for any other error.

    Sources turn their own SQLite errors into ``SourceError``: a raw one is the store's.
    """
    sqlite3 = sys.modules.get("sqlite3")  # not imported: no SQLite error can be raised
    if sqlite3 is None or not isinstance(exc, sqlite3.Error):
        return None
    from pathlib import Path

    from ..store.paths import db_path
    from ..store.store import Store, unusable

    path = Path(Store.last_path) if Store.last_path is not None else db_path()
    return str(unusable(path, exc))


def _data_dir_error(exc: OSError) -> str | None:
    """One line for a failure to write inside the data directory (a file in its place,
    a read-only folder), naming what is in the way; None for any other path."""
    if not isinstance(exc.filename, str):
        return None
    import os
    from pathlib import Path

    from ..store.paths import FIX, data_dir_str

    data = os.path.abspath(data_dir_str())
    path = os.path.abspath(exc.filename)
    if path != data and not path.startswith(data.rstrip(os.sep) + os.sep):
        return None
    reason = exc.strerror or str(exc)
    if isinstance(exc, FileExistsError | NotADirectoryError):
        here = Path(path)
        blocker = next((p for p in (here, *here.parents) if p.exists()), None)
        if blocker is not None and not blocker.is_dir():
            path, reason = str(blocker), "not a directory"
    return f"{path}: cannot use the data directory: {reason} ({FIX})"
