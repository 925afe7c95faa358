from __future__ import annotations

import io
import json
import os
import subprocess
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


# --- start-up: what the fast paths import -------------------------------------------------

#: Runs the console script's entry with the given arguments and, at exit, writes the
#: names of every module it imported to the file named by $MODULES_OUT.
_PROBE = """
import atexit, json, os, sys
out = os.environ["MODULES_OUT"]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
sys.argv = ["opencode-restore", *sys.argv[1:]]
from opencode_restore.entry import main
main()
"""
SDKS = ("openai", "anthropic")
#: Never needed to print the version, the help, a completion or to record a hook event.
HEAVY = (*SDKS, "httpx", "httpx2", "tenacity", "fastapi", "mcp", "pydantic", "rich", "aiohttp")
COMPLETE_NAMES = {
    "_OPENCODE_RESTORE_COMPLETE": "bash_complete",
    "COMP_WORDS": "opencode-restore ",
    "COMP_CWORD": "1",
}
COMPLETE_OPTION = {
    "_OPENCODE_RESTORE_COMPLETE": "bash_complete",
    "COMP_WORDS": "opencode-restore restore --lat",
    "COMP_CWORD": "2",
}


def _imported(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[set[str], str]:
    """The modules ``opencode-restore ARGS`` imported, and its stdout."""
    out = tmp_path / "modules.json"
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        env={**os.environ, "MODULES_OUT": str(out), **(env or {})},
        input="",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(out.read_text())), proc.stdout


def _top(modules: set[str]) -> set[str]:
    return {name.partition(".")[0] for name in modules}


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (("--version",), None),
        (("--help",), None),
        ((), COMPLETE_NAMES),
        (("hook",), None),  # an empty payload: logged to hook.log, exit 0
        (("hook", "--help"), None),
        (("mcp", "--help"), None),
    ],
    ids=["version", "help", "complete-command", "hook", "hook-help", "mcp-help"],
)
def test_fast_paths_import_no_sdk_and_no_command_module(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str] | None
) -> None:
    modules, out = _imported(tmp_path, *args, env=env)
    assert out.strip() or args == ("hook",)  # the hook prints nothing for an empty event
    assert not _top(modules) & set(HEAVY)
    if args[:1] != ("mcp",):  # `mcp --help` imports the one module it describes
        assert not [m for m in modules if m.startswith("opencode_restore.cli.")]


def test_completing_command_names_lists_every_command(tmp_path: Path) -> None:
    from opencode_restore.cli import COMMANDS

    _, out = _imported(tmp_path, env=COMPLETE_NAMES)
    assert out.splitlines() == [f"plain,{name}" for name in sorted(COMMANDS)]


def test_completing_an_option_imports_only_its_command(tmp_path: Path) -> None:
    modules, out = _imported(tmp_path, env=COMPLETE_OPTION)
    assert out.splitlines() == ["plain,--latest"]
    assert not _top(modules) & set(SDKS)
    assert "opencode_restore.cli.batch_cmds" not in modules


def _command_names() -> list[str]:
    from opencode_restore.cli import COMMANDS

    return sorted(COMMANDS)


@pytest.mark.parametrize("name", _command_names())
def test_a_commands_help_imports_no_sdk(tmp_path: Path, name: str) -> None:
    modules, out = _imported(tmp_path, name, "--help")
    assert f"opencode-restore {name}" in out
    assert not _top(modules) & set(SDKS)


# --- a reader that stops early --------------------------------------------------------------

SPOTTER = Path(__file__).parent.parent / (
    "fixtures/claude-code/spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
)


def test_messages_imports_only_what_reading_a_log_needs(tmp_path: Path) -> None:
    """``messages`` on a log imports no SDK, no server and not the packaged-data
    machinery that only ``--demo`` needs (importlib.resources brings tempfile and shutil)."""
    modules, out = _imported(tmp_path, "messages", str(SPOTTER), "--agent", "claude-code")
    assert out.count("\n") > 10
    assert not _top(modules) & set(HEAVY)
    assert not {"importlib.resources", "tempfile", "shutil"} & modules


def test_an_offline_restore_imports_no_http_client(tmp_path: Path) -> None:
    """The offline provider sends nothing: its restore (and the store save after it) never
    loads httpx2 or an SDK, whose modules were a few MB of every restore's memory."""
    out = tmp_path / "summary.json"
    args = ["restore", str(SPOTTER), "--agent", "claude-code", "--model", "offline"]
    modules, _ = _imported(tmp_path, *args, "--format", "json", "-o", str(out), "--quiet")
    assert json.loads(out.read_text())["turn_count"] > 1
    assert not _top(modules) & {*SDKS, "httpx", "httpx2"}


def _buffered_env() -> dict[str, str]:
    """The environment without PYTHONUNBUFFERED, so stdout is buffered as for a user."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def test_head_one_ends_messages_quietly_with_141() -> None:
    # `messages ... | head -1`: 0.7 MB of JSON lines into a pipe whose reader takes one line
    # and closes it, so the writer is still writing when the pipe breaks.
    args = ["messages", "--include-tools", "--format", "jsonl", str(SPOTTER)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "opencode_restore", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_buffered_env(),
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == entry.EXIT_PIPE_CLOSED
    assert json.loads(first)["role"] == "user"
    assert err == b""


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("messages", str(SPOTTER)), entry.EXIT_PIPE_CLOSED),  # friendly_errors' command
        (("tree", str(SPOTTER)), entry.EXIT_PIPE_CLOSED),  # flushed only at exit before
        (("--help",), entry.EXIT_PIPE_CLOSED),  # written by click while parsing
        (("--version",), entry.EXIT_PIPE_CLOSED),
        (("hook", "--help"), 0),  # the hook's status is its contract with the agent
    ],
    ids=["messages", "tree", "help", "version", "hook"],
)
def test_a_closed_stdout_is_one_exit_code_and_no_noise(args: tuple[str, ...], code: int) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first byte
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "opencode_restore", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            env=_buffered_env(),
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr) == (code, b"")


def test_no_stdout_at_all_is_no_traceback() -> None:
    # `opencode-restore --version >&-`: Python starts with sys.stdout None.
    proc = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m", "opencode_restore", "--version"],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert (proc.returncode, proc.stderr) == (0, b"")
