"""One error hierarchy. Every message says what went wrong and what to do about it."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence


class RestoreError(Exception):
    """Base of every error this package raises on purpose."""

    exit_code = 1


class UsageError(RestoreError):
    """Bad flags or configuration: fix the command line or config file."""

    exit_code = 2


class ConfigError(UsageError):
    """The configuration is invalid or incomplete (e.g. a missing API key)."""


class SourceError(RestoreError):
    """A log could not be read: unknown format, unreadable or empty file.

    Exit code 2, like a usage error: the command was given something it cannot use
    (1 is kept for "some turns failed").
    """

    exit_code = 2

    def __init__(self, path: str, reason: str, line: int | None = None) -> None:
        self.path = path
        self.line = line
        self.reason = reason
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {reason}")


class ProviderError(RestoreError):
    """An LLM call failed for good (after retries)."""

    def __init__(
        self,
        provider: str,
        model: str,
        message: str,
        status: int | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self.status = status
        status_part = f" (HTTP {status})" if status is not None else ""
        super().__init__(f"{provider}:{model}{status_part}: {message}")


class OutputValidationError(RestoreError):
    """The model's reply did not match the expected structure, even after repair."""


def missing_packages_hint(what: str, requirements: Sequence[str]) -> str:
    """One line saying ``what`` needs ``requirements`` (part of the default install) and the
    command that adds them to this very installation: its interpreter's pip, which works in
    a venv, in ``install.sh``'s and in pipx's (a wrong package name or ``pipx install``
    over an existing install did nothing)."""
    names = ", ".join(r.split(">")[0].split("<")[0] for r in requirements)
    command = shlex.join([sys.executable, "-m", "pip", "install", *requirements])
    return f"{what} needs {names}, missing from this installation; add them with: {command}"
