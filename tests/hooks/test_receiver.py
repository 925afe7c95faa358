"""``opencode-restore hook``: payloads of Claude Code, Codex and Gemini CLI; never failing."""

from __future__ import annotations

import io
import json
import os
import sqlite3
from pathlib import Path

import pytest

from opencode_restore.hooks import receiver
from opencode_restore.hooks.receiver import (
    HookEvent,
    codex_rollout,
    main,
    opencode_store,
    parse_payload,
    run,
)
from opencode_restore.store import open_store
from opencode_restore.store.discovery import default_roots

from ..store.builders import HOOKS


def _payloads(scenario: str) -> list[dict[str, object]]:
    text = (HOOKS / scenario / "hooks_stdin.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture(autouse=True)
def _recorded_home(monkeypatch: pytest.MonkeyPatch) -> None:
    """The recorded payloads name transcripts in the recording user's home."""
    monkeypatch.setenv("HOME", "/home/dev")


@pytest.fixture
def stdin(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    buf = io.StringIO()
    monkeypatch.setattr("sys.stdin", buf)
    return buf


def _chain(data_dir: Path, sid: str) -> list[str]:
    conn = sqlite3.connect(data_dir / "store.sqlite3")
    rows = conn.execute(
        "SELECT path FROM transcript_files WHERE session_id = ? ORDER BY position", (sid,)
    ).fetchall()
    conn.close()
    return [r[0] for r in rows]


def test_real_claude_code_payloads_parse() -> None:
    payloads = _payloads("tui-compact")
    events = {p["hook_event_name"] for p in payloads}
    assert {"SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "SessionEnd"} <= events
    for p in payloads:
        ev = parse_payload(p)
        assert ev is not None
        assert ev.session_id == "e57fea98-e10e-4cce-a470-5de2e7413154"
        assert ev.agent == "claude-code"
        assert ev.cwd == "/home/dev/src/greet-cli"
        assert ev.transcript_path == (
            "/home/dev/.claude/projects/-home-dev-src-greet-cli/"
            "e57fea98-e10e-4cce-a470-5de2e7413154.jsonl"
        )
        assert ev.event == p["hook_event_name"]
    prompt = next(p for p in payloads if p["hook_event_name"] == "UserPromptSubmit")
    ev = parse_payload(prompt)
    assert ev is not None
    assert (
        ev.title
        == "Add a --shout flag to the greet CLI that upper-cases the greeting, and add a te…"
    )
    assert len(ev.title) == 80


def test_every_recorded_payload_is_stored(data_dir: Path, stdin: io.StringIO) -> None:
    payloads = _payloads("print-continue") + _payloads("tui-compact")
    for p in payloads:
        assert run(None, json.dumps(p)) == 0
    store = open_store(data_dir)
    _rows, total = store.sessions()
    assert total == 2
    s = store.session("d703ad6a-fc57-46ca-94d6-a6af7cf0c933")
    assert s is not None
    assert len(s.files) == 1  # --continue appended to the same file
    assert s.last_event == "SessionEnd"
    assert s.title is not None
    assert s.title.startswith("Add a --shout flag")
    # The resume starts (their transcripts are not here, so not reloaded), PreCompact and
    # the compact start ask for a restoration of transcripts that were recorded on another
    # machine: one line each says so, nothing else went wrong.
    log = (data_dir / "hook.log").read_text().splitlines()
    assert len(log) == 4
    assert all("not readable: /home/dev/.claude/projects/" in line for line in log)


def test_new_transcript_path_is_appended_not_replacing(data_dir: Path) -> None:
    """Seed 004 FR1 through the hook receiver."""
    base = _payloads("tui-compact")[0]
    moved = dict(base, transcript_path="/home/dev/.claude/projects/-x/rotated.jsonl")
    run(None, json.dumps(base))
    run(None, json.dumps(moved))
    run(None, json.dumps(base))  # the old path again: no duplicate, no reordering
    sid = str(base["session_id"])
    assert _chain(data_dir, sid) == [str(base["transcript_path"]), moved["transcript_path"]]
    s = open_store(data_dir).session(sid)
    assert s is not None
    assert s.native_log_file == moved["transcript_path"]


def test_codex_notify_payload_finds_rollout(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    codex_home = tmp_path / "codex"
    thread = "01a1fde9-539c-77f2-9e0a-d405fab49546"
    day = codex_home / "sessions/2026/11/21"
    day.mkdir(parents=True)
    rollout = day / f"rollout-2026-11-21T11-41-29-{thread}.jsonl"
    rollout.write_text("{}\n")
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    payload = {
        "type": "agent-turn-complete",
        "thread-id": thread,
        "turn-id": "t1",
        "cwd": "/home/dev/src/greet-cli",
        "input-messages": ["Add a --shout flag"],
        "last-assistant-message": "Done.",
    }
    assert main(["--agent", "codex", json.dumps(payload)]) == 0
    s = open_store(data_dir).session(thread)
    assert s is not None
    assert (s.agent, s.native_log_file, s.title, s.last_event) == (
        "codex",
        str(rollout),
        "Add a --shout flag",
        "agent-turn-complete",
    )


def test_codex_rollout_lookup(tmp_path: Path) -> None:
    env = {"CODEX_HOME": str(tmp_path)}
    assert codex_rollout("abc", env) is None
    old = tmp_path / "archived_sessions/2025/01/01/rollout-2025-01-01T00-00-00-abc.jsonl"
    old.parent.mkdir(parents=True)
    old.write_text("")
    assert codex_rollout("abc", env) == str(old)


def test_codex_payload_without_thread_is_ignored() -> None:
    assert parse_payload({"type": "agent-turn-complete"}) is None
    assert parse_payload({"hook_event_name": "Stop"}) is None
    assert parse_payload(["not", "a", "dict"]) is None


def test_gemini_payloads() -> None:
    payload = {
        "session_id": "gem-1",
        "transcript_path": "/home/me/.gemini/tmp/proj/chats/session-2026-02-04T07-00-gem1.jsonl",
        "cwd": "/w",
        "hook_event_name": "SessionStart",
        "timestamp": "2026-02-04T07:00:00Z",
    }
    ev = parse_payload(payload)
    assert ev == HookEvent("gem-1", "gemini", payload["transcript_path"], "/w", "SessionStart")
    ev = parse_payload(
        dict(payload, transcript_path="/elsewhere/x.jsonl", hook_event_name="AfterAgent")
    )
    assert ev is not None
    assert ev.agent == "gemini"
    ev = parse_payload(dict(payload, transcript_path="/elsewhere/x.jsonl"), "gemini")
    assert ev is not None
    assert ev.agent == "gemini"
    ev = parse_payload(dict(payload, transcript_path="/home/me/.codex/sessions/r.jsonl"))
    assert ev is not None
    assert ev.agent == "codex"


def test_bad_input_exits_zero_and_logs(data_dir: Path, stdin: io.StringIO) -> None:
    assert run(None, "{not json") == 0
    assert run(None, "   ") == 0
    assert run(None, '{"hello": 1}') == 0
    assert main([]) == 0  # empty stdin
    stdin.write(json.dumps({"session_id": "S", "hook_event_name": "Stop"}))
    stdin.seek(0)
    assert main(["--agent=claude-code"]) == 0
    log = (data_dir / "hook.log").read_text()
    assert "the hook payload is not JSON (Expecting property name" in log
    assert "empty hook payload" in log
    assert "names no session" in log
    assert "no transcript path found" in log
    s = open_store(data_dir).session("S")
    assert s is not None
    assert s.files == []


def test_store_failure_is_logged_not_raised(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_a: object, **_k: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(receiver, "connect", broken)
    assert run(None, json.dumps(_payloads("tui-compact")[0])) == 0
    assert "OperationalError: disk I/O error" in (data_dir / "hook.log").read_text()


def test_unwritable_log_says_why_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("OPENCODE_RESTORE_DATA_DIR", str(blocker / "data"))
    assert run(None, "{not json") == 1
    err = capsys.readouterr().err
    assert err.startswith("opencode-restore hook: the hook payload is not JSON")
    assert err.count("\n") == 1
    assert f"{blocker / 'data' / 'hook.log'} cannot be written" in err


@pytest.mark.parametrize(
    "entry", [["-m", "opencode_restore", "hook"], ["-m", "opencode_restore.hooks"]]
)
@pytest.mark.parametrize("source", ["startup", "compact"])
def test_an_unwritable_data_dir_is_one_line_on_stderr_never_a_traceback(
    tmp_path: Path, entry: list[str], source: str
) -> None:
    import subprocess
    import sys

    blocker = tmp_path / "file"
    blocker.write_text("")
    payload = dict(_payloads("tui-compact")[0], source=source)
    env = dict(os.environ, OPENCODE_RESTORE_DATA_DIR=str(blocker / "data"), HOME="/home/dev")
    result = subprocess.run(
        [sys.executable, *entry],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert (result.returncode, result.stdout) == (1, "")
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"opencode-restore hook: cannot write the store in {blocker / 'data'}")


def test_hook_imports_stay_light() -> None:
    """The hook path must not pull in pydantic, the LLM SDKs or the web stack."""
    import subprocess
    import sys

    code = (
        "import sys, opencode_restore.hooks.receiver\n"
        "heavy = [m for m in ('pydantic', 'openai', 'anthropic', 'fastapi', 'httpx', 'click',"
        " 'orjson', 'msgspec', 'pathlib', 'dataclasses', 'tomllib', 'random')"
        " if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_help_prints_usage_and_records_nothing(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--help"]) == 0
    assert "Usage: opencode-restore hook" in capsys.readouterr().out
    assert not (data_dir / "hook.log").exists()


def test_the_opencode_plugin_payload_names_opencodes_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    payload = {"session_id": "ses_1", "cwd": "/w", "hook_event_name": "session.compacted"}
    ev = parse_payload(payload, "opencode")
    assert ev is not None
    assert (ev.agent, ev.transcript_path, ev.event) == ("opencode", None, "session.compacted")
    (tmp_path / "opencode/storage").mkdir(parents=True)
    assert opencode_store() == str(tmp_path / "opencode/storage")
    (tmp_path / "opencode/opencode.db").write_bytes(b"SQLite format 3\x00")
    ev = parse_payload(payload, "opencode")
    assert ev is not None
    assert ev.transcript_path == str(tmp_path / "opencode/opencode.db")
    assert default_roots("opencode") == [tmp_path / "opencode"]
