"""Shared pieces of the search tests: a store with sessions copied from the fixtures."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from opencode_restore.store.store import Store
from tests.store.builders import CLAUDE_COMPACT, CODEX_RESUME, copy_to

CLAUDE_ID = "e57fea98-e10e-4cce-a470-5de2e7413154"
CODEX_ID = "01a1fde9-539c-77f2-9e0a-d405fab49546"

#: Every form the CLI's --since takes (since.py): the viewer sends the spans.
SINCE_FORMS = [
    ("24h", timedelta(hours=24)),
    ("7d", timedelta(days=7)),
    ("30d", timedelta(days=30)),
    ("90m", timedelta(minutes=90)),
    ("1.5d", timedelta(hours=36)),
    ("2w", timedelta(days=14)),
    ("3600s", timedelta(hours=1)),
    ("2026-02-11T10:30:00Z", datetime(2026, 2, 11, 10, 30, tzinfo=UTC)),
    ("2026-02-11T10:30:00", datetime(2026, 2, 11, 10, 30, tzinfo=UTC)),
    ("2026-02-11", datetime(2026, 2, 11, tzinfo=UTC)),
]


@contextmanager
def since_given(
    monkeypatch: pytest.MonkeyPatch, module: ModuleType, means: timedelta | datetime
) -> Iterator[None]:
    """Within the block, ``module.search`` is a spy finding nothing; after it, the ``since``
    it was given must be ``means``: that time, or that span back from the block's time."""
    seen: dict[str, Any] = {}

    def spy(*args: Any, **kwargs: Any) -> list[Any]:
        seen.update(kwargs)
        return []

    monkeypatch.setattr(module, "search", spy)
    before = datetime.now(UTC)
    yield
    after = datetime.now(UTC)
    if isinstance(means, timedelta):
        assert before - means <= seen["since"] <= after - means
    else:
        assert seen["since"] == means


def claude_session(store: Store, directory: Path, lines: int | None = None) -> Path:
    """Register the Claude Code fixture (its first ``lines`` lines only, when given)."""
    path = copy_to(CLAUDE_COMPACT, directory)
    if lines is not None:
        head = CLAUDE_COMPACT.read_text(encoding="utf-8").splitlines(keepends=True)[:lines]
        path.write_text("".join(head), encoding="utf-8")
    store.register(CLAUDE_ID, "claude-code", str(path), cwd="/home/dev/src/greet-cli")
    return path


def codex_session(store: Store, directory: Path) -> Path:
    """Register the Codex fixture."""
    path = copy_to(CODEX_RESUME, directory)
    store.register(CODEX_ID, "codex", str(path), cwd="/work/other-project")
    return path


def append_lines(path: Path, source: Path, start: int) -> None:
    """Append ``source``'s lines from ``start`` (0-based) to ``path``, as an agent would."""
    rest = source.read_text(encoding="utf-8").splitlines(keepends=True)[start:]
    with path.open("a", encoding="utf-8") as fh:
        fh.write("".join(rest))


def rows_of(index: Path) -> list[tuple[object, ...]]:
    """Every indexed row as (session, label, kind, role, time, text), sorted."""
    with sqlite3.connect(index) as conn:
        rows = conn.execute(
            "SELECT s.id, e.label, e.kind, e.role, e.time, d.text FROM entries e"
            " JOIN sessions s ON s.sid = e.sid JOIN docs d ON d.rowid = e.id"
        ).fetchall()
    return sorted(rows, key=json.dumps)
