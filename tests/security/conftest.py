"""Every security case runs under a deadline: a hostile input must never hang the suite."""

from __future__ import annotations

from pathlib import Path

import pytest

#: Seconds a security case may take before it fails (a hang is a finding, not a wait).
DEADLINE_SECONDS = 120


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/security/" in item.nodeid and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(DEADLINE_SECONDS))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder with a Claude Code project folder, no agent folder overridden: the
    place a hook-registered transcript must be in (the hook tests)."""
    h = tmp_path / "home" / "me"
    (h / ".claude" / "projects" / "-w").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return h
