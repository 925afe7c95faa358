"""Shared fixtures. The network guard lives in pyproject's addopts (pytest-socket):
every socket connection to a host other than loopback fails the test."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from opencode_restore.batch import app as batch_app
from opencode_restore.diagnostics import WarningSink
from opencode_restore.store import open_store
from opencode_restore.store.store import Store

# CI runs the property tests with fixed seeds (HYPOTHESIS_PROFILE=ci, set by .ci/run) so a
# landing never depends on luck; local runs explore new examples every time. Neither
# profile times an example: a deadline or the too-slow health check fails a correct test
# on a loaded machine (the ASCII redaction property did, at a load of 20).
_UNTIMED = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", _UNTIMED, derandomize=True, database=None, print_blob=True)
settings.register_profile("local", _UNTIMED)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "local"))

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


@pytest.fixture
def fixtures() -> Path:
    """The project's bundled sample logs."""
    return FIXTURES


@pytest.fixture
def sink() -> WarningSink:
    """A warning sink that only collects."""
    return WarningSink()


@pytest.fixture(autouse=True)
def _data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Restore timelines and stores go to a temporary directory, never the real home.

    HOME is an empty folder too: commands that discover sessions (`restore <id>`,
    `--latest`, `sessions list`) must never find the machine's own agent logs, and the
    XDG variables are unset so that the user's config file is looked for under it.
    """
    monkeypatch.setenv("OPENCODE_RESTORE_DATA_DIR", str(tmp_path_factory.mktemp("data")))
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    for name in ("CODEX_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def clock(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> list[datetime]:
    """A frozen clock for ``nightly``, set to the file system's now: ``clock[0]`` moves it.

    Nightly compares file times with its clock. Reading the time a new file is stamped
    with (not the process's own clock) keeps the two in agreement even when the test
    process runs with a shifted date, and freezing it keeps a run that crosses midnight
    in one dated folder.
    """
    probe = tmp_path_factory.mktemp("clock") / "now"
    probe.touch()
    now = [datetime.fromtimestamp(probe.stat().st_mtime, UTC)]
    monkeypatch.setattr(batch_app, "clock", lambda: now[0])
    return now


@pytest.fixture
def scripted_enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let `-m scripted` through: the test-only provider users are never offered."""
    from opencode_restore.llm.registry import SCRIPTED_VARIABLE

    monkeypatch.setenv(SCRIPTED_VARIABLE, "1")


@pytest.fixture
def no_gc() -> Iterator[None]:
    """Only reference counting frees objects during the test: what a reference cycle
    holds stays, as it did in a long restore until a full collection."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


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
