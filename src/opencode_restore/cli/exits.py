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
            sys.exit(0)
        except OSError as exc:  # a full disk, a vanished folder: one line, not a traceback
            where = exc.filename if exc.filename is not None else "output"
            click.echo(f"error: {where}: {exc.strerror or exc}", err=True)
            sys.exit(2)

    return wrapper  # type: ignore[return-value]
