"""The store commands as a user runs them: ``hook``, ``sessions scan|list``, ``serve``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from opencode_restore.api.schemas import SessionOut
from opencode_restore.api.security import is_loopback
from opencode_restore.cli import cli
from opencode_restore.config import load_config
from opencode_restore.mcp.tools import HistoryTools
from opencode_restore.store import open_store
from opencode_restore.store.lookup import candidate_lines
from tests.store.builders import HOOKS, fake_home


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_hook_command_records_and_prints_nothing(runner: CliRunner, data_dir: Path) -> None:
    payload = (HOOKS / "tui-compact/hooks_stdin.jsonl").read_text().splitlines()[0]
    result = runner.invoke(cli, ["hook"], input=payload)
    assert (result.exit_code, result.output) == (0, "")
    s = open_store(data_dir).session("e57fea98-e10e-4cce-a470-5de2e7413154")
    assert s is not None
    assert s.last_event == "SessionStart"
    result = runner.invoke(cli, ["hook", "--agent", "codex", '{"type": "agent-turn-complete"}'])
    assert (result.exit_code, result.output) == (0, "")


def test_sessions_scan_and_list(
    runner: CliRunner, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    fake_home(home)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    result = runner.invoke(cli, ["sessions", "scan"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "claude-code  2 sessions" in lines
    assert "gemini       1 session" in lines
    assert lines[-1] == "7 sessions found, 8 new transcript files registered"
    result = runner.invoke(cli, ["sessions", "scan", "--agent", "pi"])
    assert result.output.splitlines()[-1] == "1 session found, 0 new transcript files registered"

    result = runner.invoke(cli, ["sessions", "list"])
    assert result.exit_code == 0
    assert result.output.splitlines()[-1] == "7 of 7 sessions"
    assert "Add --shout flag to greet CLI" in result.output  # the opencode title
    result = runner.invoke(cli, ["sessions", "list", "--agent", "codex", "--format", "json"])
    body = json.loads(result.output)
    assert body["total"] == 2
    assert {s["agent"] for s in body["sessions"]} == {"codex"}
    assert all(s["files"] == 1 for s in body["sessions"])

    every = json.loads(runner.invoke(cli, ["sessions", "list", "--format", "json"]).output)
    times = sorted(s["updated_at"] for s in every["sessions"])
    result = runner.invoke(cli, ["sessions", "list", "--since", times[2], "--format", "json"])
    later = json.loads(result.output)
    assert later["total"] == sum(t > times[2] for t in times) < 7
    assert all(s["updated_at"] > times[2] for s in later["sessions"])


def test_scan_root_and_bad_agent(runner: CliRunner, data_dir: Path, tmp_path: Path) -> None:
    fake_home(tmp_path / "backup")
    result = runner.invoke(
        cli, ["sessions", "scan", "--agent", "gemini", "--root", str(tmp_path / "backup")]
    )
    assert result.output.splitlines() == [
        "gemini       1 session",
        "1 session found, 2 new transcript files registered",
    ]
    result = runner.invoke(cli, ["sessions", "scan", "--agent", "emacs"])
    assert result.exit_code == 2
    assert "'emacs' is not one of 'claude-code', 'codex', 'gemini', 'opencode', 'pi'" in (
        result.output
    )


def test_serve_refuses_public_bind_without_token(runner: CliRunner, data_dir: Path) -> None:
    result = runner.invoke(cli, ["serve", "--host", "0.0.0.0"], env={"OPENCODE_RESTORE_TOKEN": ""})
    assert result.exit_code == 2
    assert "without --token" in result.output


@pytest.mark.parametrize(
    ("host", "args"),
    [("127.0.0.1", []), ("::1", []), ("localhost", []), ("0.0.0.0", ["--token", "x"])],
)
def test_serve_starts_uvicorn(
    runner: CliRunner,
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    host: str,
    args: list[str],
) -> None:
    import uvicorn

    calls: list[tuple[object, str, int]] = []
    monkeypatch.setattr(
        uvicorn, "run", lambda app, host, port, **_kw: calls.append((app, host, port))
    )
    result = runner.invoke(cli, ["serve", "--host", host, "--port", "9999", *args])
    assert result.exit_code == 0, result.output
    assert [(h, p) for _a, h, p in calls] == [(host, 9999)]


@pytest.mark.parametrize(
    ("host", "args", "line"),
    [
        ("127.0.0.1", [], "web viewer: http://127.0.0.1:9999/"),
        ("::1", [], "web viewer: http://[::1]:9999/"),
        (
            "127.0.0.1",
            ["--token", "s3cret-token"],
            "web viewer: http://127.0.0.1:9999/ (reads need the token: open /#token=TOKEN once)",
        ),
        (
            "0.0.0.0",
            ["--token", "s3cret-token"],
            "web viewer: http://0.0.0.0:9999/ (reads need the token: open /#token=TOKEN once)",
        ),
    ],
)
def test_serve_says_where_the_viewer_is(
    runner: CliRunner,
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    host: str,
    args: list[str],
    line: str,
) -> None:
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda *_a, **_kw: None)
    result = runner.invoke(cli, ["serve", "--host", host, "--port", "9999", *args])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert line in result.stderr.splitlines()
    # The line says how to sign in, never the token itself (terminals get logged).
    assert "s3cret-token" not in result.stderr


def test_loopback_detection() -> None:
    assert is_loopback("127.0.0.2")
    assert is_loopback("[::1]")
    assert not is_loopback("192.168.1.4")
    assert not is_loopback("example.com")


def test_a_hook_registered_cwd_and_title_are_redacted_wherever_served(
    runner: CliRunner, data_dir: Path, tmp_path: Path
) -> None:
    # A hook stores the cwd as the agent sent it (`--latest --cwd` matches on it); every
    # place that serves the store redacts it: CLI list (text and JSON), API, MCP.
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    cwd = tmp_path / f"work-{token}"
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    payload = {
        "session_id": "s-cwd",
        "transcript_path": str(transcript),
        "cwd": str(cwd),
        "hook_event_name": "SessionStart",
    }
    assert runner.invoke(cli, ["hook"], input=json.dumps(payload)).exit_code == 0
    store = open_store(data_dir)
    row = store.session("s-cwd")
    assert row is not None
    assert row.cwd == str(cwd)  # kept as registered
    served = [
        runner.invoke(cli, ["sessions", "list"]).output,
        runner.invoke(cli, ["sessions", "list", "--format", "json"]).output,
        SessionOut.of(row).model_dump_json(),
        "\n".join(candidate_lines([row])),
        HistoryTools(load_config()).list_sessions().model_dump_json(),
    ]
    for text in served:
        assert "s-cwd" in text
        assert token not in text
        assert "work-" in text  # the rest of the path is still there
