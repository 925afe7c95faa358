"""The journals of a batch: written once per session instead of after every step.

A restore saves its journal after each turn and each stage, so that ``restore``
killed mid-session resumes at its next turn. In a batch those saves (six for a
three-turn session, each a file written, fsynced and renamed) cost more CPU than the
restore's own work per LLM call (measured by ``bench/batch.py``). `BatchJournals`
keeps them in memory (a turn's change is applied to the snapshot waiting there)
and `flush` writes the latest one when the session ends, done or failed, before the
next restore of that session may start (under its lock).

What a kill costs: the sessions in flight at that moment lose the turns summarized in
this run and redo them; finished sessions are in the manifest and are never redone.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from .store import JournalStore, apply_change


class BatchJournals(JournalStore):
    """A `JournalStore` whose saves wait in memory until `flush`."""

    in_memory = True

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self._pending: dict[str, dict[str, Any]] = {}
        # Saves run in worker threads (`persist.persist`).
        self._guard = threading.Lock()

    def save(self, session_id: str, payload: dict[str, Any]) -> Path:
        """Keep ``payload`` as the journal to write for ``session_id``."""
        with self._guard:
            self._pending[session_id] = payload
        return self.path_for(session_id)

    def append(self, session_id: str, change: dict[str, Any]) -> None:
        """Apply ``change`` to the journal waiting in memory (or append it on disk)."""
        with self._guard:
            pending = self._pending.get(session_id)
            if pending is not None and pending.get("generation") == change.get("generation"):
                apply_change(pending, change)
                return
        super().append(session_id, change)

    def load(self, session_id: str) -> dict[str, Any] | None:
        """The unwritten journal of ``session_id`` if there is one, else the saved one."""
        with self._guard:
            pending = self._pending.get(session_id)
        return pending if pending is not None else super().load(session_id)

    def flush(self, session_id: str) -> None:
        """Write the last journal kept for ``session_id`` (nothing if none is waiting)."""
        with self._guard:
            payload = self._pending.pop(session_id, None)
        if payload is not None:
            super().save(session_id, payload)
