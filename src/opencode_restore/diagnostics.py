"""Read warnings: what was skipped or misread, and where, collected and reported.

Every layer reports through a `WarningSink` (readers, the store, the pipeline, the
commands), so it lives here, below all of them, and imports nothing but the model.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .model import ReadWarning

#: Warnings printed one by one on stderr; the rest are counted in one summary line.
SHOWN_WARNINGS = 20


@dataclass(slots=True)
class WarningSink:
    """Collects read warnings, and optionally reports each one as it happens.

    ``shown`` caps how many are reported (a log with a million bad lines must not print a
    million lines); `summary` then counts the rest.
    """

    report: Callable[[ReadWarning], None] | None = None
    warnings: list[ReadWarning] = field(default_factory=list)
    limit: int = 1000
    shown: int | None = None
    count: int = 0

    def warn(self, path: str | Path, line: int, message: str) -> None:
        """Record (and report) that ``path:line`` was skipped or misread."""
        w = ReadWarning(str(path), line, message)
        self.count += 1
        if len(self.warnings) < self.limit:
            self.warnings.append(w)
        if self.report is not None and (self.shown is None or self.count <= self.shown):
            self.report(w)

    def summary(self) -> str | None:
        """One line counting the warnings that were not reported, or None."""
        if self.shown is None or self.count <= self.shown:
            return None
        hidden = self.count - self.shown
        return f"{hidden} more warnings not shown ({self.count} in all)"


def stderr_sink(shown: int = SHOWN_WARNINGS) -> WarningSink:
    """A sink that prints the first ``shown`` warnings as lines on stderr.

    The caller prints `WarningSink.summary` once reading is done.
    """
    return WarningSink(report=lambda w: print(f"warning: {w}", file=sys.stderr), shown=shown)
