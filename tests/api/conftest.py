"""Store tests run against a store in ``tmp_path`` (never the user's data directory)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from opencode_restore.store import open_store
from opencode_restore.store.store import Store


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh data directory, also named by OPENCODE_RESTORE_DATA_DIR for subprocesses."""
    d = tmp_path / "data"
    monkeypatch.setenv("OPENCODE_RESTORE_DATA_DIR", str(d))
    return d


@pytest.fixture
def store(data_dir: Path) -> Iterator[Store]:
    """An open store in the test's data directory."""
    s = open_store(data_dir)
    yield s
    s.close()
