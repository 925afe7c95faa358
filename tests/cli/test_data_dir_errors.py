"""A data directory the store cannot use: every command says so on one line and exits
non-zero, never a traceback (issue 26, item 8).

Tests run as any user, root included (who may write anywhere), so "unwritable" is made
with things no user can get past: a file where the folder should be, a folder where the
store's file should be, a store file that is not a database, and a connection SQLite
holds read-only (what a read-only folder gives, once the store is open).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from opencode_restore.cli import cli
from opencode_restore.store import db
from opencode_restore.store import store as store_module

FIX = "(set OPENCODE_RESTORE_DATA_DIR or [paths] data_dir to a writable directory)"
GEMINI_LOG = Path(__file__).resolve().parents[2] / "fixtures/gemini/own/compression.jsonl"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _file_in_the_way(tmp_path: Path) -> tuple[Path, str]:
    blocker = tmp_path / "data"
    blocker.write_text("not a folder\n")
    return blocker, f"{blocker}: cannot use the {{what}}: not a directory {FIX}"


def _below_a_file(tmp_path: Path) -> tuple[Path, str]:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder\n")
    return blocker / "data", f"{blocker}: cannot use the {{what}}: not a directory {FIX}"


def _folder_as_store_file(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "data" / "store.sqlite3").mkdir(parents=True)
    store = tmp_path / "data" / "store.sqlite3"
    return tmp_path / "data", (
        f"{store}: cannot use the session store: a directory where the store's file should be {FIX}"
    )


def _not_a_database(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "data").mkdir()
    store = tmp_path / "data" / "store.sqlite3"
    store.write_text("garbage, not SQLite\n" * 100)
    return tmp_path / "data", f"{store}: cannot use the session store: file is not a database {FIX}"


BROKEN: dict[str, Callable[[Path], tuple[Path, str]]] = {
    "file-in-the-way": _file_in_the_way,
    "below-a-file": _below_a_file,
    "folder-as-store-file": _folder_as_store_file,
    "not-a-database": _not_a_database,
}

# Commands that open the store first.
STORE_COMMANDS = [
    ["sessions", "list"],
    ["sessions", "scan"],
    ["restore", "--latest"],
    ["messages", "--latest"],
    ["turns", "--latest"],
    ["report", "--latest"],
    ["restore", "gem-compress"],
]


def _one_error_line(code: int, out: str, err: str) -> str:
    assert code != 0
    assert "Traceback" not in out + err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    return lines[0].removeprefix("error: ")


@pytest.mark.parametrize("broken", BROKEN, ids=str)
@pytest.mark.parametrize("command", STORE_COMMANDS, ids=" ".join)
def test_a_store_command_says_which_path_and_why(
    command: list[str], broken: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, expected = BROKEN[broken](tmp_path)
    monkeypatch.setenv("OPENCODE_RESTORE_DATA_DIR", str(data))
    line = _one_error_line(*_run(*command))
    assert line == expected.format(what="session store")


@pytest.mark.parametrize("broken", ["file-in-the-way", "below-a-file"])
@pytest.mark.parametrize(
    "command",
    [["restore", str(GEMINI_LOG)], ["nightly"], ["serve", "--port", "1"]],
    ids=lambda c: c[0],
)
def test_a_command_writing_into_the_data_dir_says_which_path_and_why(
    command: list[str], broken: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, expected = BROKEN[broken](tmp_path)
    monkeypatch.setenv("OPENCODE_RESTORE_DATA_DIR", str(data))
    line = _one_error_line(*_run(*command))
    assert line == expected.format(what="data directory")


def test_a_store_that_opens_but_cannot_be_written_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A read-only folder lets SQLite open an existing store and fail on the first write.
    home = tmp_path / "home"
    chats = home / ".gemini/tmp/proj/chats"
    chats.mkdir(parents=True)
    (chats / "session-2026-02-02T10-00-compress.jsonl").write_bytes(GEMINI_LOG.read_bytes())
    monkeypatch.setenv("HOME", str(home))
    data = tmp_path / "data"
    monkeypatch.setenv("OPENCODE_RESTORE_DATA_DIR", str(data))
    assert _run("sessions", "list")[0] == 0  # the store exists, and knows nothing new

    def read_only(path: str) -> sqlite3.Connection:
        conn = db.connect(path)
        conn.execute("PRAGMA query_only = ON")
        return conn

    monkeypatch.setattr(store_module, "connect", read_only)
    (chats / "session-2026-02-03T10-00-later.jsonl").write_bytes(GEMINI_LOG.read_bytes())
    for command in (["sessions", "scan"], ["sessions", "list"], ["restore", "--latest"]):
        line = _one_error_line(*_run(*command))
        assert line == (
            f"{data / 'store.sqlite3'}: cannot use the session store:"
            f" attempt to write a readonly database {FIX}"
        )
