"""SessionStart answered with the restoration: the hook as the agents run it (a process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from opencode_restore.diagnostics import WarningSink
from opencode_restore.hooks.restore import conversation_in
from opencode_restore.pipeline.journal.identity import journal_key
from opencode_restore.pipeline.journal.store import JournalStore
from opencode_restore.sources import open_session
from tests.waits import RUNAWAY_S

from ..store.builders import CLAUDE_COMPACT, GEMINI_COMPRESSION, HOOKS

CLAUDE_ID = "e57fea98-e10e-4cce-a470-5de2e7413154"
CWD = "/home/dev/src/greet-cli"
DEADLINE = RUNAWAY_S  # a runaway guard: a loaded machine is slow, not wrong


@pytest.fixture
def home(tmp_path: Path, data_dir: Path) -> Path:
    h = tmp_path / "home"
    project = h / ".claude/projects/-home-dev-src-greet-cli"
    project.mkdir(parents=True)
    (project / CLAUDE_COMPACT.name).write_bytes(CLAUDE_COMPACT.read_bytes())
    return h


def _journal(home: Path, data_dir: Path) -> Path:
    """Where the journal of the session at ``home`` is saved."""
    log = home / ".claude/projects/-home-dev-src-greet-cli" / CLAUDE_COMPACT.name
    key = journal_key(open_session([log], WarningSink(), "claude-code"))
    return JournalStore(data_dir / "timelines").path_for(key)


def _recorded(source: str) -> dict[str, Any]:
    """The real SessionStart payload of the recorded compaction session, for ``source``."""
    lines = (HOOKS / "tui-compact/hooks_stdin.jsonl").read_text().splitlines()
    starts = [json.loads(x) for x in lines if '"SessionStart"' in x]
    return next(p for p in starts if p["source"] == source)


def _hook(
    payload: dict[str, Any], home: Path, data_dir: Path, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ, HOME=str(home), OPENCODE_RESTORE_DATA_DIR=str(data_dir), **env)
    return subprocess.run(
        [sys.executable, "-m", "opencode_restore", "hook", *args],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=full_env,
        timeout=DEADLINE,
        check=False,
    )


def _at_home(payload: dict[str, Any], home: Path) -> dict[str, Any]:
    path = payload["transcript_path"].replace("/home/dev", str(home))
    return {**payload, "transcript_path": path}


def _context(out: str, event: str = "SessionStart") -> str:
    answer = json.loads(out)
    assert set(answer) == {"hookSpecificOutput"}
    assert answer["hookSpecificOutput"]["hookEventName"] == event
    context: str = answer["hookSpecificOutput"]["additionalContext"]
    return context


def _log(data_dir: Path) -> str:
    path = data_dir / "hook.log"
    return path.read_text() if path.exists() else ""


def test_compact_is_answered_with_the_restoration(home: Path, data_dir: Path) -> None:
    result = _hook(_at_home(_recorded("compact"), home), home, data_dir)
    assert result.returncode == 0
    context = _context(result.stdout)
    assert context.startswith(f"# Restored context: earlier claude-code session `{CLAUDE_ID}`")
    assert "Add a --shout flag" in context
    assert "[M1]" in context
    # What the agent reads: no restore warning, no HTML escape (issue 25).
    assert "Warning" not in context
    assert "&lt;" not in context
    assert context.rstrip().endswith("no model was called._")
    # The journal was saved: the next start is incremental.
    assert _journal(home, data_dir).exists()


def test_startup_records_only(home: Path, data_dir: Path) -> None:
    result = _hook(_at_home(_recorded("startup"), home), home, data_dir)
    assert (result.returncode, result.stdout) == (0, "")
    assert _log(data_dir) == ""


def test_clear_restores_the_previous_session_of_the_directory(home: Path, data_dir: Path) -> None:
    _hook(_at_home(_recorded("startup"), home), home, data_dir)
    new_id = "0b7c2d1e-0000-4000-8000-000000000001"
    new_path = home / ".claude/projects/-home-dev-src-greet-cli" / f"{new_id}.jsonl"
    payload = {
        "session_id": new_id,
        "transcript_path": str(new_path),
        "cwd": CWD,
        "hook_event_name": "SessionStart",
        "source": "clear",
    }
    result = _hook(payload, home, data_dir)
    assert result.returncode == 0, _log(data_dir)
    assert f"session `{CLAUDE_ID}`" in _context(result.stdout)


def test_clear_finds_the_previous_session_on_disk_when_the_store_has_none(
    home: Path, data_dir: Path
) -> None:
    payload = {
        "session_id": "0b7c2d1e-0000-4000-8000-000000000002",
        "cwd": CWD,
        "hook_event_name": "SessionStart",
        "source": "clear",
    }
    result = _hook(payload, home, data_dir)
    assert f"session `{CLAUDE_ID}`" in _context(result.stdout)


def test_past_the_budget_nothing_is_printed_and_the_restore_goes_on(
    home: Path, data_dir: Path
) -> None:
    journal = _journal(home, data_dir)
    lock = journal.with_suffix(".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    # Another restore holds the session: the hook's child must wait past the budget.
    with FileLock(lock):
        result = _hook(
            _at_home(_recorded("compact"), home),
            home,
            data_dir,
            OPENCODE_RESTORE_HOOKS_BUDGET_SECONDS="1",
        )
        assert (result.returncode, result.stdout) == (0, "")
        assert "goes on in the background" in _log(data_dir)
        assert not journal.exists()
    prepared = data_dir / "hooks" / f"claude-code-{CLAUDE_ID}.prompt"
    deadline = time.monotonic() + DEADLINE
    while not prepared.exists():
        assert time.monotonic() < deadline, "the background restore never finished"
        time.sleep(0.1)
    # The next prompt of the session carries it, once.
    prompt = {**_at_home(_recorded("compact"), home), "hook_event_name": "UserPromptSubmit"}
    prompt.pop("source")
    prompt["prompt"] = "go on"
    first = _hook(prompt, home, data_dir)
    assert _context(first.stdout, "UserPromptSubmit").startswith(
        f"# Restored context: earlier claude-code session `{CLAUDE_ID}`"
    )
    assert _hook(prompt, home, data_dir).stdout == ""
    assert not prepared.exists()


def _gemini_home(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    chats = home / ".gemini/tmp/proj/chats"
    chats.mkdir(parents=True)
    transcript = chats / "session-2026-02-04T07-00-compress.jsonl"
    transcript.write_bytes(GEMINI_COMPRESSION.read_bytes())
    return home, transcript


def _gemini(session: str, transcript: Path | None, event: str, **fields: str) -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": str(transcript) if transcript else "",
        "cwd": "/work/proj",
        "hook_event_name": event,
        "timestamp": "2026-02-04T07:10:00Z",
        **fields,
    }


@pytest.mark.parametrize(
    ("event", "fields"),
    [("SessionStart", {"source": "resume"}), ("PreCompress", {"trigger": "manual"})],
)
def test_gemini_resume_and_compress_are_delivered_once_at_the_next_before_agent(
    event: str, fields: dict[str, str], tmp_path: Path, data_dir: Path
) -> None:
    # Gemini CLI 0.61 ignores PreCompress's answer; BeforeAgent's additionalContext is
    # appended to the prompt. So the event only notes what is due.
    home, transcript = _gemini_home(tmp_path)
    due = _hook(
        _gemini("gem-compress", transcript, event, **fields), home, data_dir, "--agent", "gemini"
    )
    assert (due.returncode, due.stdout) == (0, ""), _log(data_dir)
    before = _gemini("gem-compress", transcript, "BeforeAgent", prompt="go on")
    first = _hook(before, home, data_dir, "--agent", "gemini")
    assert "earlier gemini session `gem-compress`" in _context(first.stdout, "BeforeAgent")
    again = _hook(before, home, data_dir, "--agent", "gemini")
    assert (again.returncode, again.stdout) == (0, "")
    assert _log(data_dir) == ""


def test_gemini_clear_delivers_the_previous_session_and_auto_precompress_nothing(
    tmp_path: Path, data_dir: Path
) -> None:
    home, transcript = _gemini_home(tmp_path)
    gemini = ("--agent", "gemini")
    start = _gemini("gem-compress", transcript, "SessionStart", source="startup")
    assert _hook(start, home, data_dir, *gemini).stdout == ""
    # PreCompress(auto) comes before every model request (if installed without a matcher).
    auto = _gemini("gem-compress", transcript, "PreCompress", trigger="auto")
    assert _hook(auto, home, data_dir, *gemini).stdout == ""
    before = _gemini("gem-compress", transcript, "BeforeAgent", prompt="hi")
    assert _hook(before, home, data_dir, *gemini).stdout == ""
    # Nothing prepared or due; BeforeAgent only noted how far it read the chat file.
    assert [p.name for p in (data_dir / "hooks").iterdir()] == ["gemini-gem-compress.seen"]
    # /clear: a new session id; its first prompt gets the session before it.
    clear = _gemini("gem-new", None, "SessionStart", source="clear")
    assert _hook(clear, home, data_dir, *gemini).stdout == ""
    first = _hook(_gemini("gem-new", None, "BeforeAgent", prompt="go"), home, data_dir, *gemini)
    assert "earlier gemini session `gem-compress`" in _context(first.stdout, "BeforeAgent")
    assert _log(data_dir).count("no transcript path found") == 2  # gem-new names none


def test_claude_resume_reloads_the_conversation_so_nothing_is_added(
    home: Path, data_dir: Path
) -> None:
    payload = _at_home(_recorded("compact"), home)
    _hook({**payload, "source": "startup"}, home, data_dir)
    result = _hook({**payload, "source": "resume"}, home, data_dir)
    assert (result.returncode, result.stdout) == (0, "")
    assert _log(data_dir) == ""


def test_conversation_in(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    assert not conversation_in(str(path))
    path.write_text('{"type":"summary","summary":"x"}\n{"type":"file-history-snapshot"}\n')
    assert not conversation_in(str(path))
    path.write_bytes(CLAUDE_COMPACT.read_bytes())
    assert conversation_in(str(path))


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (
            {"session_id": "s1", "hook_event_name": "SessionStart", "source": "compact"},
            "session s1 has no transcript in the store",
        ),
        (
            {
                "session_id": "s2",
                "transcript_path": "/nonexistent/s2.jsonl",
                "hook_event_name": "SessionStart",
                "source": "resume",
            },
            "claude-code SessionStart resume: session s2 has no transcript in the store",
        ),
        (
            {
                "session_id": "s3",
                "cwd": "/nowhere",
                "hook_event_name": "SessionStart",
                "source": "clear",
            },
            "no earlier claude-code session of '/nowhere'",
        ),
    ],
)
def test_bad_payloads_print_nothing_and_say_why(
    payload: dict[str, Any], reason: str, home: Path, data_dir: Path
) -> None:
    result = _hook(payload, home, data_dir)
    assert (result.returncode, result.stdout) == (0, "")
    assert reason in _log(data_dir)


def test_a_transcript_deleted_since_it_was_recorded(home: Path, data_dir: Path) -> None:
    payload = _at_home(_recorded("compact"), home)
    _hook({**payload, "source": "startup"}, home, data_dir)
    Path(payload["transcript_path"]).unlink()
    result = _hook(payload, home, data_dir)
    assert (result.returncode, result.stdout) == (0, "")
    assert f"transcript of {CLAUDE_ID} not readable: {payload['transcript_path']}" in _log(data_dir)


def test_a_broken_config_never_fails_the_agent(home: Path, data_dir: Path) -> None:
    config = home / ".config/opencode-restore/config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[hooks\nrestore_on = 1\n")
    result = _hook(_at_home(_recorded("compact"), home), home, data_dir)
    assert (result.returncode, result.stdout) == (0, "")
    assert "ConfigError" in _log(data_dir)


@pytest.mark.parametrize(
    ("payload", "args"),
    [
        ({"hook_event_name": "SessionStart", "source": "startup"}, ()),
        ({"hook_event_name": "SessionStart", "source": "resume"}, ()),
        ({"hook_event_name": "UserPromptSubmit", "prompt": "go on"}, ()),
        ({"hook_event_name": "Stop"}, ()),
        ({"hook_event_name": "BeforeAgent", "prompt": "go on"}, ("--agent", "gemini")),
        ({"hook_event_name": "SessionStart", "source": "startup"}, ("--agent", "gemini")),
    ],
)
def test_an_event_that_restores_nothing_imports_no_config_store_or_restore(
    payload: dict[str, Any], args: tuple[str, ...], home: Path, data_dir: Path
) -> None:
    full = {**_at_home(_recorded("compact"), home), **payload}
    if "source" not in payload:
        full.pop("source")
    _hook({**full, "prompt": "first"}, home, data_dir, *args)  # the session has its title
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "opencode_restore", "hook", *args],
        input=json.dumps(full),
        capture_output=True,
        text=True,
        env=dict(os.environ, HOME=str(home), OPENCODE_RESTORE_DATA_DIR=str(data_dir)),
        timeout=DEADLINE,
        check=False,
    )
    assert (result.returncode, result.stdout) == (0, "")
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()}
    heavy = {"pydantic", "opencode_restore.config", "opencode_restore.store.store", "subprocess"}
    heavy |= {"opencode_restore.redact", "click", "anthropic", "openai", "httpx"}
    assert imported & heavy == set()


def test_claude_pre_compact_prepares_and_only_session_start_compact_delivers(
    home: Path, data_dir: Path
) -> None:
    payload = _at_home(_recorded("compact"), home)
    pre = {**payload, "hook_event_name": "PreCompact", "trigger": "manual"}
    pre.pop("source")
    prompt = {**pre, "hook_event_name": "UserPromptSubmit", "prompt": "go on"}
    assert _hook(pre, home, data_dir).stdout == ""
    # The compaction may still fail: a prompt before SessionStart(compact) gets nothing.
    assert _hook(prompt, home, data_dir).stdout == ""
    result = _hook(payload, home, data_dir)
    assert f"session `{CLAUDE_ID}`" in _context(result.stdout)
    assert _hook(prompt, home, data_dir).stdout == ""  # delivered once
    assert _log(data_dir) == ""


def _note(data_dir: Path, pid: int, *, due: bool = True) -> Path:
    from opencode_restore.hooks.restore import _write_pending, pending_path

    path = Path(pending_path(str(data_dir), "gemini", "s1"))
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_pending(str(path), pid, "clear", "t1", due=due)
    return path


def test_a_restoration_not_ready_stays_due_and_a_failed_one_is_said(data_dir: Path) -> None:
    from opencode_restore.hooks.restore import collect, prepared_path

    lines: list[str] = []
    note = _note(data_dir, os.getpid())  # a live restore (this process) writing nothing yet
    assert collect(str(data_dir), "gemini", "s1", 0.0, lines.append) is None
    assert note.exists()
    assert lines == []
    Path(prepared_path(str(data_dir), "gemini", "s1")).write_text("# Restored context: x\n")
    assert collect(str(data_dir), "gemini", "s1", 0.0, lines.append) == "# Restored context: x"
    assert not note.exists()
    assert collect(str(data_dir), "gemini", "s1", 0.0, lines.append) is None  # once
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
        timeout=DEADLINE,
    )
    note = _note(data_dir, int(dead.stdout))  # the restore ended without writing anything
    assert collect(str(data_dir), "gemini", "s1", 0.0, lines.append) is None
    assert not note.exists()
    assert lines == ["clear: no restoration of t1: the restore failed (its error is above)"]


def test_a_prepared_note_is_not_due_until_made_so(data_dir: Path) -> None:
    from opencode_restore.hooks.restore import collect, prepared_path

    note = _note(data_dir, os.getpid(), due=False)
    Path(prepared_path(str(data_dir), "gemini", "s1")).write_text("# Restored context: y\n")
    assert collect(str(data_dir), "gemini", "s1", 0.0, print) is None
    assert note.exists()
    assert collect(str(data_dir), "gemini", "s1", 0.0, print, make_due=True) == (
        "# Restored context: y"
    )


def test_hook_settings_read_the_users_file_and_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opencode_restore.hooks import restore as hook_restore

    config = tmp_path / "config.toml"
    monkeypatch.setattr("opencode_restore.dirs.user_config_path", lambda: str(config))
    defaults = hook_restore.hook_settings({})
    assert (defaults.restore_on, defaults.budget) == (
        frozenset({"compact", "clear", "resume"}),
        8.0,
    )
    config.write_text('[hooks]\nrestore_on = ["compact"]\nbudget_seconds = 3\n')
    read = hook_restore.hook_settings({})
    assert (read.restore_on, read.budget) == (frozenset({"compact"}), 3.0)
    env = {
        "OPENCODE_RESTORE_HOOKS_RESTORE_ON": "clear,startup",
        "OPENCODE_RESTORE_HOOKS_BUDGET_SECONDS": "1.5",
    }
    over = hook_restore.hook_settings(env)
    assert (over.restore_on, over.budget) == (frozenset({"clear", "startup"}), 1.5)
    config.write_text('[hooks]\nrestore_on = ["soon"]\n')
    with pytest.raises(hook_restore.SettingsProblem, match="unknown source 'soon'"):
        hook_restore.hook_settings({})
