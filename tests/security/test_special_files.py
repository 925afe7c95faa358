"""Issue 14.7: special files given as input, floods of warnings and a full disk.

Every case runs the real CLI in a subprocess with a deadline: a hang fails the test
instead of the suite."""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from opencode_restore.atomic import write_output
from opencode_restore.cli import cli as cli_group
from opencode_restore.diagnostics import SHOWN_WARNINGS, WarningSink
from opencode_restore.errors import SourceError
from opencode_restore.sources import open_session

ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 60
AGENTS = ["claude-code", "codex", "gemini", "pi", "opencode", "inspect", "terminal"]
GOOD_LINE = (
    '{"type":"user","message":{"role":"user","content":"hello there"},"uuid":"u1",'
    '"sessionId":"s1","timestamp":"2025-01-01T00:00:00Z"}\n'
)


def cli(*args: str, limit_file_bytes: int | None = None, cwd: Path = ROOT) -> tuple[int, str]:
    """Run ``opencode-restore args`` with a deadline: (exit code, stderr)."""

    def limit() -> None:  # pragma: no cover - runs in the child
        # A file-size limit stands in for a full disk: writes past it fail with EFBIG.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        assert limit_file_bytes is not None
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file_bytes, limit_file_bytes))

    proc = subprocess.run(
        [sys.executable, "-m", "opencode_restore", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        preexec_fn=limit if limit_file_bytes is not None else None,
        env={**os.environ, "OPENCODE_RESTORE_DATA_DIR": str(cwd / "data")},
    )
    return proc.returncode, proc.stderr


@pytest.mark.parametrize("command", [["messages"], ["turns"], ["restore"]])
def test_a_fifo_as_input_is_refused_without_hanging(tmp_path: Path, command: list[str]) -> None:
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    code, err = cli(*command, str(fifo), cwd=tmp_path)
    assert code == 2
    assert f"{fifo}" in err
    assert "FIFO" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("agent", AGENTS)
def test_dev_zero_with_a_forced_agent_is_refused(tmp_path: Path, agent: str) -> None:
    code, err = cli("messages", "/dev/zero", "--agent", agent, cwd=tmp_path)
    assert code == 2
    assert "/dev/zero" in err
    assert "not a regular file" in err
    assert "MemoryError" not in err
    assert "Traceback" not in err


def test_a_flood_of_bad_lines_prints_a_bounded_number_of_warnings(tmp_path: Path) -> None:
    log = tmp_path / "flood.jsonl"
    bad = 100_000
    log.write_text(GOOD_LINE + "{bad\n" * bad)
    code, err = cli("messages", str(log), "--agent", "claude-code", cwd=tmp_path)
    assert code == 0
    lines = err.splitlines()
    assert len(lines) == SHOWN_WARNINGS + 1
    assert lines[-1] == f"warning: {bad - SHOWN_WARNINGS} more warnings not shown ({bad} in all)"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "name"),
    [
        (["restore", "--skip-evidence-search"], "summary.md"),
        (["restore", "--format", "html", "--skip-evidence-search"], "report.html"),
        (["report"], "tree.html"),
    ],
)
def test_a_full_disk_keeps_the_previous_output_and_names_it(
    tmp_path: Path, command: list[str], name: str
) -> None:
    log = tmp_path / "session.jsonl"
    reply = GOOD_LINE.replace('"user"', '"assistant"').replace("u1", "a1")
    log.write_text(GOOD_LINE + reply.replace('"content":"hello there"', '"content":"hi"'))
    config = tmp_path / "config.toml"
    config.write_text("[restore]\nresume = false\n")
    out = tmp_path / name
    out.write_text("previous output\n")
    args = [*command, str(log), "-o", str(out)]
    if command[0] == "restore":
        args += ["--config", str(config)]
    code, err = cli(*args, limit_file_bytes=100, cwd=tmp_path)
    assert code == 2, err
    assert str(out) in err
    assert "Traceback" not in err
    # The old file is whole, and no temporary file is left behind.
    assert out.read_text() == "previous output\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


# --- the same guarantees in process (the subprocess runs above are not measured) -------


def test_sources_refuse_special_files_before_opening(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "FIFO"), (Path("/dev/zero"), "device")):
        with pytest.raises(SourceError, match=kind):
            open_session([path], WarningSink(), "claude-code")


def test_command_sink_summarizes_when_the_command_ends(tmp_path: Path) -> None:
    log = tmp_path / "flood.jsonl"
    log.write_text(GOOD_LINE + "{bad\n" * (SHOWN_WARNINGS + 5))
    result = CliRunner().invoke(cli_group, ["messages", str(log), "--agent", "claude-code"])
    assert result.exit_code == 0
    assert result.stderr.splitlines()[-1] == (
        f"warning: 5 more warnings not shown ({SHOWN_WARNINGS + 5} in all)"
    )
    quiet = WarningSink(shown=None)
    quiet.warn("f", 1, "x")
    assert quiet.summary() is None


def test_atomic_write_names_the_file_when_the_disk_is_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out.md"
    out.write_text("previous\n")

    def full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError, match="No space left") as caught:
        write_output(out, "new text\n")
    assert caught.value.filename == str(out)
    monkeypatch.undo()
    assert out.read_text() == "previous\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.md"]


def test_output_to_a_device_is_written_directly() -> None:
    write_output(Path("/dev/null"), "discarded\n")
