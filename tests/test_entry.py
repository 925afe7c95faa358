from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from opencode_restore import entry


def test_hook_is_routed_before_the_cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENCODE_RESTORE_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["opencode-restore", "hook"])
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"session_id": "s", "hook_event_name": "Stop"}'))
    with pytest.raises(SystemExit) as exc:
        entry.main()
    assert exc.value.code == 0
    assert (tmp_path / "store.sqlite3").exists()


def test_other_commands_go_to_the_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["opencode-restore", "formats"])
    with pytest.raises(SystemExit) as exc:
        entry.main()
    assert exc.value.code == 0
    assert "claude-code" in capsys.readouterr().out
