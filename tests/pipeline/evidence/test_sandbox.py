"""Adversarial cases for the evidence tools' sandbox: nothing outside the workspace is
read, nothing hangs, and every refusal says why."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from opencode_restore.pipeline.evidence.credentials import is_credential_path
from opencode_restore.pipeline.evidence.log_search import Limits
from opencode_restore.pipeline.evidence.sandbox import (
    Matcher,
    Refused,
    Workspace,
    _kind_refusal,
    clip_line,
    grep,
    open_regular,
    root_refusal,
)
from opencode_restore.pipeline.evidence.tools import EvidenceTools, ToolResult
from opencode_restore.pipeline.state import RestoreState
from opencode_restore.redact import Redactor
from opencode_restore.timeline.numbering import Numbering

from ..helpers import make_session

SECRET = "TOP-SECRET-OUTSIDE-THE-WORKSPACE"


def no_hang(fn: Callable[[], Any], seconds: float = 10.0) -> Any:
    """Run ``fn`` in a thread; fail (instead of hanging the suite) if it does not return."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # pragma: no cover - re-raised below
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"hung for more than {seconds} s"
    if "error" in box:  # pragma: no cover - only when the code under test is broken
        raise box["error"]
    return box["value"]


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace with a few files and, next to it, a secret it must never reveal."""
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("import os\n\ndef main():\n    return 42\n")
    (ws / "README.md").write_text("# app\n")
    outside = tmp_path / "outside.txt"
    outside.write_text(SECRET + "\n")
    return ws, outside


def tools_for(ws: Workspace, **limits: Any) -> EvidenceTools:
    session = make_session([], cwd=str(ws.root) if ws.root else None)
    return EvidenceTools(
        session, [], RestoreState(), Numbering(), ws, Redactor().redact, Limits(**limits)
    )


def run_all_file_tools(ws: Workspace, path: str) -> list[ToolResult]:
    tools = tools_for(ws)
    return [
        no_hang(lambda: tools.run("READ_FILE", {"path": path})),
        no_hang(lambda: tools.run("SEARCH_FILE", {"path": path, "pattern": "."})),
    ]


def assert_refused(ws: Workspace, path: str, reason: str) -> None:
    for result in run_all_file_tools(ws, path):
        assert not result.ok, result.text
        assert reason in result.text
        assert SECRET not in result.text


# --- choosing the workspace ---------------------------------------------------------


def test_explicit_workspace_wins_over_the_recorded_cwd(tmp_path: Path) -> None:
    # Issue 14.1: a log claiming cwd /etc (which exists) must not move the sandbox there.
    ws = tmp_path / "ws"
    ws.mkdir()
    chosen = Workspace.choose("/etc", str(ws), here=str(tmp_path))
    assert chosen.root == ws.resolve()
    result = tools_for(chosen).run("READ_FILE", {"path": "passwd"})
    assert not result.ok
    assert "root:" not in result.text


def test_recorded_cwd_needs_auto_unless_the_command_runs_there(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    refused = Workspace.choose(str(ws), None, here=str(elsewhere))
    assert refused.root is None
    assert "--workspace auto" in refused.why_none
    assert Workspace.choose(str(ws), "auto", here=str(elsewhere)).root == ws.resolve()
    # The command runs in the recorded cwd, or above it: the log's cwd is the user's choice.
    assert Workspace.choose(str(ws), None, here=str(ws)).root == ws.resolve()
    assert Workspace.choose(str(ws / "sub"), None, here=str(ws)).root == (ws / "sub").resolve()
    # Below it is not enough: the log would widen the sandbox beyond where the user stands.
    assert Workspace.choose(str(ws), None, here=str(ws / "sub")).root is None


@pytest.mark.parametrize(
    "cwd", ["/", "/etc", "/etc/ssl", "/usr/lib", "/var/log", "/root", "/home", "/tmp", "/opt"]
)
@pytest.mark.parametrize("how", ["auto", "flag"])
def test_system_folders_are_never_workspaces(cwd: str, how: str) -> None:
    if not os.path.isdir(cwd):
        pytest.skip(f"{cwd} does not exist here")
    chosen = Workspace.choose(cwd, "auto") if how == "auto" else Workspace.choose(None, cwd)
    assert chosen.root is None
    assert "refusing" in chosen.why_none


def test_home_folders_are_never_workspaces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "me"
    (home / "project").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    refused = Workspace.choose(str(home), "auto")
    assert refused.root is None
    assert "home folder" in refused.why_none
    assert Workspace.choose(None, "~").root is None
    assert Workspace.choose(str(home / "project"), "auto").root == (home / "project").resolve()
    assert root_refusal(Path("/home/alice")) is not None
    assert root_refusal(Path("/Users/alice")) is not None
    assert root_refusal(Path("/home/alice/src/app")) is None


@pytest.mark.parametrize(
    "path",
    [
        ".config/gh/hosts.yml",
        ".config/gcloud/credentials.db",
        ".git-credentials",
        ".netrc",
        ".npmrc",
        ".pypirc",
        ".docker/config.json",
        ".bash_history",
        ".zsh_history",
        ".local/share/fish/fish_history",
        "Library/Keychains/login.keychain-db",
        ".local/share/keyrings/login.keyring",
        ".kube/config",
        ".cargo/credentials.toml",
    ],
)
def test_credential_stores_beyond_ssh_and_aws_are_refused(tmp_path: Path, path: str) -> None:
    ws = tmp_path / "ws"
    target = ws / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(SECRET + "\n")
    assert_refused(Workspace.choose(str(ws), "auto"), path, "credentials")
    # Nor can a credential store be the workspace itself.
    assert Workspace.choose(None, str(target.parent)).root is None or not is_credential_path(
        target.parent.relative_to(ws).parts
    )


def test_workspace_flag_stands_in_for_a_missing_cwd(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    chosen = Workspace.choose("/home/dev/src/greet-cli-not-here", str(ws))
    assert chosen.root == ws.resolve()
    # Absolute paths from the log, under the recorded cwd, are rebased onto the workspace.
    result = tools_for(chosen).run(
        "READ_FILE", {"path": "/home/dev/src/greet-cli-not-here/README.md"}
    )
    assert result.ok
    assert "# app" in result.text


def test_no_workspace_answers_every_file_tool() -> None:
    chosen = Workspace.choose("/nonexistent/cwd", None)
    assert chosen.root is None
    for result in run_all_file_tools(chosen, "README.md"):
        assert not result.ok
        assert "no workspace" in result.text
        assert "/nonexistent/cwd" in result.text


def test_workspace_flag_that_is_not_a_directory(layout: tuple[Path, Path]) -> None:
    _, outside = layout
    chosen = Workspace.choose(None, str(outside))
    assert chosen.root is None
    assert "is not a directory" in chosen.why_none


@pytest.mark.parametrize("root", ["/", "/proc", "/proc/self", "/sys", "/dev"])
def test_filesystem_root_and_pseudo_filesystems_are_never_workspaces(root: str) -> None:
    chosen = Workspace.choose(root, "auto")
    assert chosen.root is None
    assert "refusing" in chosen.why_none


# --- paths that escape ---------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["../outside.txt", "src/../../outside.txt", "./../outside.txt", "src/../../ws/../outside.txt"],
)
def test_dot_dot_escapes_are_refused(layout: tuple[Path, Path], path: str) -> None:
    ws, _ = layout
    assert_refused(Workspace.choose(str(ws), "auto"), path, "outside the workspace")


def test_absolute_path_outside_is_refused(layout: tuple[Path, Path]) -> None:
    ws, outside = layout
    assert_refused(Workspace.choose(str(ws), "auto"), str(outside), "outside the workspace")


def test_etc_passwd_is_refused(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    results = run_all_file_tools(Workspace.choose(str(ws), "auto"), "/etc/passwd")
    assert all(not r.ok and "root:" not in r.text for r in results)
    assert all("outside the workspace" in r.text for r in results)


def test_proc_self_environ_is_refused(
    layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, _ = layout
    monkeypatch.setenv("SANDBOX_CANARY", "canary-value-123")
    results = run_all_file_tools(Workspace.choose(str(ws), "auto"), "/proc/self/environ")
    assert all(not r.ok and "canary-value-123" not in r.text for r in results)


def test_symlink_to_a_file_outside_is_refused(layout: tuple[Path, Path]) -> None:
    ws, outside = layout
    (ws / "innocent.txt").symlink_to(outside)
    assert_refused(Workspace.choose(str(ws), "auto"), "innocent.txt", "symlink")


def test_symlinked_directory_pointing_outside_is_refused(layout: tuple[Path, Path]) -> None:
    ws, outside = layout
    (ws / "vendor").symlink_to(outside.parent)
    assert_refused(Workspace.choose(str(ws), "auto"), "vendor/outside.txt", "symlink")


def test_symlink_to_proc_is_refused(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    (ws / "env").symlink_to("/proc/self/environ")
    assert_refused(Workspace.choose(str(ws), "auto"), "env", "outside the workspace")


def test_symlink_loop_is_refused_without_hanging(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    (ws / "a").symlink_to(ws / "b")
    (ws / "b").symlink_to(ws / "a")
    for result in run_all_file_tools(Workspace.choose(str(ws), "auto"), "a"):
        assert not result.ok


def test_symlink_inside_the_workspace_is_followed(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    (ws / "main.py").symlink_to(ws / "src" / "app.py")
    result = tools_for(Workspace.choose(str(ws), "auto")).run("READ_FILE", {"path": "main.py"})
    assert result.ok
    assert "src/app.py, lines 1-4 of 4" in result.text


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("", "path is required"),
        ("src/\x00app.py", "NUL byte"),
        ("a/" * 600, "too long"),
        ("~/.bashrc", "home-relative"),
        (".ssh/id_rsa", "credentials"),
        ("deploy/.aws/credentials", "credentials"),
    ],
)
def test_unusable_and_credential_paths(layout: tuple[Path, Path], path: str, reason: str) -> None:
    ws, _ = layout
    (ws / ".ssh").mkdir()
    (ws / ".ssh" / "id_rsa").write_text("not a real key")
    assert_refused(Workspace.choose(str(ws), "auto"), path, reason)


# --- files that must not be opened or read -----------------------------------------


def test_fifo_is_never_opened(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    os.mkfifo(ws / "pipe")
    # Opening a FIFO for reading with no writer blocks forever: no_hang proves we never do.
    assert_refused(Workspace.choose(str(ws), "auto"), "pipe", "FIFO")


def test_sparse_two_gigabyte_file_is_refused_by_size(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    with (ws / "huge.bin").open("wb") as fh:
        fh.truncate(2 * 1024**3)
    started = time.monotonic()
    assert_refused(Workspace.choose(str(ws), "auto"), "huge.bin", "over the 1000000-byte limit")
    assert time.monotonic() - started < 30  # would not end (or run out of memory)


def test_plain_file_just_over_the_cap_is_refused(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    (ws / "big.log").write_text("x" * 1_000_001)
    assert_refused(Workspace.choose(str(ws), "auto"), "big.log", "1000001 bytes")


def test_binary_file_is_refused(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    (ws / "app.pyc").write_bytes(b"\x42\x0d\x0d\x0a\x00\x00\x00\x00" + bytes(range(256)))
    assert_refused(Workspace.choose(str(ws), "auto"), "app.pyc", "binary")


def test_directory_is_refused(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    assert_refused(Workspace.choose(str(ws), "auto"), "src", "is a directory")


def test_missing_file_is_reported(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    assert_refused(Workspace.choose(str(ws), "auto"), "src/nope.py", "no such file")


def test_unix_socket_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "w"
    ws.mkdir()
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(ws / "sock"))
        assert_refused(Workspace.choose(str(ws), "auto"), "sock", "socket")
    finally:
        server.close()


def test_devices_are_refused_before_open() -> None:
    for device in ("/dev/null", "/dev/zero"):
        with pytest.raises(Refused, match="device"):
            no_hang(partial(open_regular, Path(device), None))


def test_secrets_in_workspace_files_are_redacted(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    key = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"
    (ws / ".env").write_text(f"OPENAI_API_KEY={key}\nDEBUG=1\n")
    tools = tools_for(Workspace.choose(str(ws), "auto"))
    for result in (
        tools.run("READ_FILE", {"path": ".env"}),
        tools.run("SEARCH_FILE", {"path": ".env", "pattern": "sk-proj"}),
        tools.run("SEARCH_FILE", {"path": ".env", "pattern": "API_KEY"}),
    ):
        assert result.ok
        assert key not in result.text
    assert "[REDACTED" in tools.run("READ_FILE", {"path": ".env"}).text


# --- patterns that would run away ----------------------------------------------------


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(a|aa)+$", r"(\w+\s?)+$", r"((a+)+)+c"])
def test_catastrophic_regex_stops_at_the_time_limit(tmp_path: Path, pattern: str) -> None:
    ws = tmp_path / "w"
    ws.mkdir()
    (ws / "long.txt").write_text("a" * 50_000 + "!\n")
    tools = tools_for(Workspace.choose(str(ws), "auto"), search_seconds=0.5)
    started = time.monotonic()
    result = no_hang(lambda: tools.run("SEARCH_FILE", {"path": "long.txt", "pattern": pattern}))
    assert time.monotonic() - started < 30  # would not end (or run out of memory)
    if pattern != r"(a|aa)+$":  # nested unbounded repeats are refused on their parse
        assert not result.ok
        assert "an unbounded repeat inside another" in result.text
        return
    # The `regex` engine really backtracks on this one: the deadline stops it and says so.
    assert result.ok
    assert "file search stopped after 0.5 s" in result.text
    assert result.incomplete


def test_time_limit_is_reported_as_partial() -> None:
    ticks = iter([0.0, 0.0, 10.0, 10.0])
    matcher = Matcher("x", seconds=1.0, clock=lambda: next(ticks))
    found = grep(enumerate(["x", "x", "x"], start=1), matcher, 0, 10)
    assert found.timed_out
    assert found.hits == 1


def test_hundred_thousand_hits_stop_at_the_cap(tmp_path: Path) -> None:
    ws = tmp_path / "w"
    ws.mkdir()
    (ws / "hits.txt").write_text("hit\n" * 100_000)
    tools = tools_for(Workspace.choose(str(ws), "auto"))
    started = time.monotonic()
    result = tools.run("SEARCH_FILE", {"path": "hits.txt", "pattern": "hit", "context_lines": 0})
    assert time.monotonic() - started < 30  # would not end (or run out of memory)
    assert result.text.startswith("50 hit(s)")
    assert "stopped after 50 hits" in result.text
    assert len(result.text) <= Limits().max_result_chars + 60


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("a" * 201, "the limit is 200"),
        (r"(?:x{60000}){60000}", "repetition counts"),
        (r"(?:(?:a{100}){100}){100}", "repetition counts"),
    ],
)
def test_oversized_patterns_are_refused_before_compiling(pattern: str, reason: str) -> None:
    started = time.monotonic()
    with pytest.raises(Refused, match=reason):
        Matcher(pattern)
    assert time.monotonic() - started < 30  # would not end (or run out of memory)


def test_invalid_regex_falls_back_to_a_literal_search() -> None:
    matcher = Matcher("foo(")
    assert matcher.literal
    assert "invalid regex" in matcher.note
    assert matcher.search("call foo(1)") is not None


def test_clip_line_centres_on_the_match() -> None:
    line = "x" * 500 + "NEEDLE" + "y" * 500
    clipped = clip_line(line, (500, 506), 60)
    assert "NEEDLE" in clipped
    assert clipped.startswith("…")
    assert clipped.endswith("…")
    assert clip_line("short", None, 60) == "short"
    assert clip_line("z" * 100, None, 10) == "z" * 9 + "…"


def test_odd_inputs_to_the_primitives(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    chosen = Workspace.choose(str(ws), "auto")
    with pytest.raises(Refused, match="empty path"):
        chosen.resolve("   ")
    # A file used as a directory: lstat fails with ENOTDIR, reported as the reason.
    with pytest.raises(Refused, match="Not a directory"):
        chosen.read_text("README.md/child")
    with pytest.raises(Refused, match="empty pattern"):
        Matcher("")
    assert _kind_refusal(0) == "is not a regular file"
    # No recorded cwd: an absolute path is taken as it is (and refused when outside).
    with pytest.raises(Refused, match="outside the workspace"):
        Workspace(chosen.root).resolve("/etc/hostname")


def test_context_after_the_last_allowed_hit_is_kept() -> None:
    lines = enumerate(["hit", "a", "hit", "b", "hit"], start=1)
    found = grep(lines, Matcher("hit"), 1, 1)
    assert [(g.number, g.is_match) for g in found.lines] == [(1, True), (2, False)]
    assert found.hit_cap
    assert found.hits == 1
