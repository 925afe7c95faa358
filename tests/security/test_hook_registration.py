"""Hook payloads naming files that are no transcript (issue 14, item 7).

A payload could register ``/etc/shadow`` as a transcript, which ``GET /messages`` then read.
Each case runs the real hook receiver, then asks the API for the session's messages; every
test's requests run under ``anyio.fail_after``.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx
import pytest

from opencode_restore.api import create_app
from opencode_restore.config import load_config
from opencode_restore.hooks.receiver import run, transcript_refusal
from opencode_restore.store import open_store
from tests.store.builders import CLAUDE_COMPACT, CODEX_RESUME

SID = "e57fea98-e10e-4cce-a470-5de2e7413154"
DEADLINE = 60


def _fifo(home: Path) -> str:
    path = home / ".claude" / "projects" / "-w" / "pipe.jsonl"
    os.mkfifo(path)
    return str(path)


def _symlink_out(home: Path) -> str:
    path = home / ".claude" / "projects" / "-w" / "shadow.jsonl"
    path.symlink_to("/etc/shadow")
    return str(path)


def _not_json(home: Path) -> str:
    path = home / ".claude" / "projects" / "-w" / "notes.jsonl"
    path.write_text("root:$6$salt$hash:19000:0:99999:7:::\n")
    return str(path)


def _ssh_key(home: Path) -> str:
    (home / ".ssh").mkdir()
    path = home / ".ssh" / "id_ed25519"
    path.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE=\n")
    return str(path)


def _directory(home: Path) -> str:
    path = home / ".claude" / "projects" / "-w" / "dir.jsonl"
    path.mkdir()
    return str(path)


def _json_array(home: Path) -> str:
    path = home / ".claude" / "projects" / "-w" / "list.jsonl"
    path.write_text("[1, 2, 3]\n")
    return str(path)


#: (case, payload transcript_path built under the test's home, the reason logged)
HOSTILE: list[tuple[str, Callable[[Path], str], str]] = [
    ("system file", lambda _h: "/etc/shadow", "end in .jsonl"),
    ("system file named like a transcript", lambda _h: "/etc/shadow.jsonl", "outside the home"),
    ("dot-dot out of home", lambda h: f"{h}/../../../etc/x.jsonl", "outside the home"),
    ("symlink in home to /etc", _symlink_out, "end in .jsonl"),
    ("another user's home", lambda h: f"{h.parent}/other/.claude/x.jsonl", "outside the home"),
    ("fifo", _fifo, "not a regular file"),
    ("directory", _directory, "not a regular file"),
    ("not JSON", _not_json, "does not start with a JSON object"),
    ("JSON but no object", _json_array, "does not start with a JSON object"),
    ("ssh key", _ssh_key, "end in .jsonl"),
    ("relative to the hook's cwd", lambda _h: "../../etc/passwd", "end in .jsonl"),
]


def _messages_status(data_dir: Path, sid: str) -> tuple[int, list[str]]:
    store = open_store(data_dir)
    row = store.session(sid)
    assert row is not None, "the session itself is still recorded"
    app = create_app(store, token="t" * 32, config=load_config(), reads_need_token=False)

    async def main() -> int:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            with anyio.fail_after(DEADLINE):
                return (await c.get(f"/sessions/{sid}/messages")).status_code

    status = anyio.run(main)
    return status, [f.path for f in row.files]


@pytest.mark.parametrize(("case", "make", "reason"), HOSTILE, ids=[c[0] for c in HOSTILE])
def test_hostile_transcript_path_is_not_registered(
    home: Path, data_dir: Path, case: str, make: Callable[[Path], str], reason: str
) -> None:
    path = make(home)
    payload = {"session_id": SID, "transcript_path": path, "hook_event_name": "Stop"}
    assert run(None, json.dumps(payload)) == 0
    status, files = _messages_status(data_dir, SID)
    assert files == []
    assert status == 410  # the session has no transcript to read
    log = (data_dir / "hook.log").read_text()
    assert "not registered" in log
    assert reason in log, log


def test_real_transcripts_in_home_and_agent_folders_are_registered(
    home: Path, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transcript = home / ".claude" / "projects" / "-w" / f"{SID}.jsonl"
    shutil.copy(CLAUDE_COMPACT, transcript)
    later = home / ".claude" / "projects" / "-w" / "not-yet-written.jsonl"
    for path in (transcript, later):
        payload = {"session_id": SID, "transcript_path": str(path), "hook_event_name": "Stop"}
        assert run(None, json.dumps(payload)) == 0
    status, files = _messages_status(data_dir, SID)
    assert status == 200
    assert files == [str(transcript), str(later)]
    # An agent folder outside the home, named by the agent's own variable.
    codex_home = tmp_path / "srv" / "codex"
    rollout = codex_home / "sessions" / "2026" / "11" / "21" / CODEX_RESUME.name
    rollout.parent.mkdir(parents=True)
    shutil.copy(CODEX_RESUME, rollout)
    assert transcript_refusal(str(rollout), "codex") is not None
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    assert transcript_refusal(str(rollout), "codex") is None
    thread = "01a1fde9-539c-77f2-9e0a-d405fab49546"
    assert run("codex", json.dumps({"type": "agent-turn-complete", "thread-id": thread})) == 0
    status, files = _messages_status(data_dir, thread)
    assert (status, files) == (200, [str(rollout)])
    assert not (data_dir / "hook.log").exists()


def test_codex_thread_id_cannot_steer_the_search(home: Path, data_dir: Path) -> None:
    codex = home / ".codex" / "sessions"
    codex.mkdir(parents=True)
    (home / "rollout-x-secret.jsonl").write_text("{}\n")
    for thread in ("../../rollout-x-secret", "*", "a/b"):
        payload = {"type": "agent-turn-complete", "thread-id": thread}
        assert run("codex", json.dumps(payload)) == 0
        _status, files = _messages_status(data_dir, thread)
        assert files == []


def test_refusal_reasons() -> None:
    env = {"HOME": "/home/me"}
    assert transcript_refusal("/home/me/x.jsonl", "terminal", env) == (
        "no transcript is registered for agent 'terminal'"
    )
    assert transcript_refusal("/home/me/.local/share/opencode/opencode.db", "opencode", env) is None
    assert transcript_refusal("/x.jsonl", "claude-code", {"HOME": "/"}) == (
        "outside the home folder and claude-code's own folder"
    )


def test_opencodes_store_is_registered_where_opencode_keeps_it(
    home: Path, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The opencode plugin names no file: the hook records opencode's store (its database,
    else its storage folder), also when XDG_DATA_HOME moves it out of the home folder."""
    xdg = tmp_path / "xdg"
    (xdg / "opencode" / "storage").mkdir(parents=True)
    monkeypatch.setenv("XDG_DATA_HOME", str(xdg))
    payload = {"session_id": "ses_1", "cwd": "/w", "hook_event_name": "session.compacted"}
    assert run("opencode", json.dumps(payload)) == 0
    row = open_store(data_dir).session("ses_1")
    assert row is not None
    assert row.files[0].path == str(xdg / "opencode/storage")
    assert not (data_dir / "hook.log").exists()
    for hostile in ("/etc/storage", "/etc/opencode.db", str(xdg / "elsewhere.db")):
        assert transcript_refusal(hostile, "opencode") is not None, hostile
    (xdg / "opencode" / "fake.db").write_text("not a database")
    assert transcript_refusal(str(xdg / "opencode" / "fake.db"), "opencode") == (
        "not an SQLite database"
    )
