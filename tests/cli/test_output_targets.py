"""``-o`` and ``batch --out`` onto targets that are no plain new file (issue 31).

The campaign found ``-o`` onto a FIFO hanging, ``-o`` onto the input log overwriting it,
and ``batch --out`` on a full disk ending in an ExceptionGroup traceback. Each case is one
line on stderr, the input intact; the ones that could hang run under a deadline.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from opencode_restore.atomic import output_refusal, write_output
from opencode_restore.cli import cli
from tests.batch.helpers import cli_env, make_sessions, read_manifest

EXPORT = "opencode/recorded/tui-compact/export.json"
#: Seconds a case may take: a FIFO opened for writing with no reader waits forever.
DEADLINE = 60


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner(env=env).invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stderr


@pytest.mark.timeout(DEADLINE)
@pytest.mark.parametrize("command", ["restore", "report"])
def test_output_onto_a_fifo_is_refused_before_any_work(
    fixtures: Path, tmp_path: Path, command: str
) -> None:
    fifo = tmp_path / "out.md"
    os.mkfifo(fifo)
    code, err = invoke(command, str(fixtures / EXPORT), "-o", str(fifo))
    assert code == 2
    assert "FIFO" in err
    assert str(fifo) in err
    assert "Traceback" not in err


@pytest.mark.timeout(DEADLINE)
def test_write_output_refuses_a_fifo_that_appears_later(tmp_path: Path) -> None:
    fifo = tmp_path / "late.md"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="FIFO") as caught:
        write_output(fifo, "text\n")
    assert caught.value.filename == str(fifo)


def test_devices_but_dev_null_are_refused() -> None:
    assert output_refusal(Path("/dev/zero")) is not None
    assert output_refusal(Path(os.devnull)) is None


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink"])
@pytest.mark.parametrize("command", ["restore", "report"])
def test_output_onto_an_input_file_is_refused(
    fixtures: Path, tmp_path: Path, command: str, how: str
) -> None:
    log = tmp_path / "export.json"
    shutil.copyfile(fixtures / EXPORT, log)
    before = log.read_bytes()
    out = log
    if how == "symlink":
        out = tmp_path / "out.md"
        out.symlink_to(log)
    elif how == "hardlink":
        out = tmp_path / "out.md"
        os.link(log, out)
    code, err = invoke(command, str(log), "-o", str(out), "-q")
    assert code == 2, err
    assert "one of the input files" in err
    assert str(out) in err
    assert len(err.strip().splitlines()) == 1
    assert log.read_bytes() == before


def test_migrate_and_export_refuse_their_input_as_output(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    log.write_text('{"type":"session","version":3,"id":"x"}\n')
    before = log.read_bytes()
    for args in (
        ["migrate", str(log), "-o", str(log), "--force"],
        ["export-branch", str(log), "--leaf", "a", "-o", str(log), "--force"],
    ):
        code, err = invoke(*args)
        assert code == 2, err
        assert "one of the input files" in err
    assert log.read_bytes() == before


def test_other_outputs_are_still_written(fixtures: Path, tmp_path: Path) -> None:
    out = tmp_path / "summary.md"
    code, err = invoke("report", str(fixtures / EXPORT), "-o", str(out), "-q")
    assert code == 0, err
    assert out.read_text().startswith("<!")
    code, err = invoke("report", str(fixtures / EXPORT), "-o", os.devnull, "-q")
    assert code == 0, err


@pytest.mark.timeout(DEADLINE)
def test_batch_out_on_a_full_disk_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_sessions(tmp_path / "in", 2)
    out = tmp_path / "out"

    def full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    result = CliRunner(env=cli_env(tmp_path / "data")).invoke(
        cli, ["batch", str(tmp_path / "in"), "--out", str(out), "-q"]
    )
    monkeypatch.undo()
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert lines == [f"error: {out / 'manifest.jsonl'}: No space left on device"]


def test_batch_out_in_the_input_folder_never_replaces_a_log(tmp_path: Path) -> None:
    # The synthetic logs are named <session id>.json: the very name of their outputs.
    logs = make_sessions(tmp_path / "in", 2)
    before = {p: p.read_bytes() for p in logs}
    result = CliRunner(env=cli_env(tmp_path / "data")).invoke(
        cli, ["batch", str(tmp_path / "in"), "--out", str(tmp_path / "in"), "-q"]
    )
    assert result.exit_code == 1, result.output
    assert {p: p.read_bytes() for p in logs} == before
    records = read_manifest(tmp_path / "in" / "manifest.jsonl")
    assert len(records) == 2
    assert all("one of the input files" in r["error"] for r in records)


def test_output_onto_own_stdout_pipe_is_written(fixtures: Path, tmp_path: Path) -> None:
    """`-o /dev/stdout | less`: a pipe with its reader already there, written directly."""
    env = {**os.environ, "OPENCODE_RESTORE_DATA_DIR": str(tmp_path / "data")}
    args = ["report", str(fixtures / EXPORT), "-o", "/dev/stdout", "-q"]
    done = subprocess.run(
        [sys.executable, "-m", "opencode_restore", *args],
        capture_output=True,
        env=env,
        timeout=DEADLINE,  # a runaway guard only
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(b"<!")
