"""`resolve_inputs`: what LOG...|SESSION-ID and --latest name, without the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.errors import UsageError
from opencode_restore.store.inputs import resolve_inputs


def test_files_are_taken_as_they_are_and_open_no_store(tmp_path: Path) -> None:
    log = tmp_path / "session.jsonl"
    log.write_text("")
    data = tmp_path / "data"
    got = resolve_inputs((str(log),), "pi", False, None, WarningSink(), data)
    assert got == ([log], "pi", None)
    assert not data.exists()


def test_an_unknown_id_is_looked_up_in_the_given_store(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no-such-session"):
        resolve_inputs(("no-such-session",), None, False, None, WarningSink(), tmp_path / "d")
    assert (tmp_path / "d").is_dir()


@pytest.mark.parametrize(
    ("refs", "latest", "cwd", "message"),
    [
        ((), False, Path("/x"), "--cwd narrows --latest"),
        (("a.jsonl",), True, None, "not both"),
        ((), False, None, "give a log file"),
    ],
)
def test_bad_combinations_are_usage_errors(
    tmp_path: Path, refs: tuple[str, ...], latest: bool, cwd: Path | None, message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        resolve_inputs(refs, None, latest, cwd, WarningSink(), tmp_path)
