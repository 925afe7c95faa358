"""A hook-registered transcript is checked again when it is read, not only when registered.

The campaign's finding (issue 31): a path registered before it existed, or a symlink
re-pointed after registration, made ``GET /messages`` and ``restore <id>`` serve a file
outside the home folder. Each case registers through the real hook receiver, then moves
the target out of bounds and reads through the API and the session lookup; every
request runs under ``anyio.fail_after`` (and the security suite's deadline).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
import httpx
import pytest

from opencode_restore.api import create_app
from opencode_restore.config import load_config
from opencode_restore.diagnostics import WarningSink
from opencode_restore.hooks.receiver import run
from opencode_restore.store import open_store
from opencode_restore.store.lookup import SessionNotFound, find_session
from opencode_restore.store.transcript_paths import read_refusal
from tests.store.builders import CLAUDE_COMPACT

SID = "e57fea98-e10e-4cce-a470-5de2e7413154"
DEADLINE = 60
#: A word of the outside file that must never be served.
MARKER = "OUTSIDE-THE-HOME-FOLDER-7731"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A well-formed Claude Code transcript outside the home folder, carrying the marker."""
    path = tmp_path / "elsewhere" / "private.jsonl"
    path.parent.mkdir()
    path.write_text(
        CLAUDE_COMPACT.read_text() + json.dumps({"type": "user", "note": MARKER}) + "\n"
    )
    return path


def _register(path: Path) -> None:
    payload = {"session_id": SID, "transcript_path": str(path), "hook_event_name": "Stop"}
    assert run(None, json.dumps(payload)) == 0


def _get_messages(data_dir: Path) -> httpx.Response:
    store = open_store(data_dir)
    app = create_app(store, token="t" * 32, config=load_config(), reads_need_token=False)

    async def main() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            with anyio.fail_after(DEADLINE):
                return await c.get(f"/sessions/{SID}/messages")

    try:
        return anyio.run(main)
    finally:
        store.close()


def _assert_not_served(data_dir: Path) -> None:
    response = _get_messages(data_dir)
    assert response.status_code == 410, response.text
    assert "outside the home folder" in response.json()["detail"]
    assert MARKER not in response.text
    store = open_store(data_dir)
    try:
        with pytest.raises(SessionNotFound, match="outside the home folder"):
            find_session(store, SID, discover=False)
    finally:
        store.close()


def test_a_path_registered_before_it_exists_then_linked_out(
    home: Path, data_dir: Path, outside: Path
) -> None:
    later = home / ".claude" / "projects" / "-w" / f"{SID}.jsonl"
    _register(later)  # SessionStart comes before the first write: judged by place alone
    later.symlink_to(outside)
    _assert_not_served(data_dir)


def test_a_registered_transcript_re_pointed_later(
    home: Path, data_dir: Path, outside: Path
) -> None:
    transcript = home / ".claude" / "projects" / "-w" / f"{SID}.jsonl"
    shutil.copy(CLAUDE_COMPACT, transcript)
    _register(transcript)
    assert _get_messages(data_dir).status_code == 200
    transcript.unlink()
    transcript.symlink_to(outside)
    _assert_not_served(data_dir)


def test_a_linked_folder_re_pointed_later(home: Path, data_dir: Path, outside: Path) -> None:
    real = home / "projects-real"
    real.mkdir()
    shutil.copy(CLAUDE_COMPACT, real / "private.jsonl")
    link = home / ".claude" / "projects" / "linked"
    link.symlink_to(real)
    _register(link / "private.jsonl")
    assert _get_messages(data_dir).status_code == 200
    link.unlink()
    link.symlink_to(outside.parent)
    _assert_not_served(data_dir)


def test_only_the_refused_file_of_a_chain_is_left_out(
    home: Path, data_dir: Path, outside: Path
) -> None:
    first = home / ".claude" / "projects" / "-w" / f"{SID}.jsonl"
    shutil.copy(CLAUDE_COMPACT, first)
    second = home / ".claude" / "projects" / "-w" / "continued.jsonl"
    _register(first)
    _register(second)
    second.symlink_to(outside)
    response = _get_messages(data_dir)
    assert response.status_code == 200
    assert response.headers["X-Missing-Files"] == "1"
    assert MARKER not in response.text
    store = open_store(data_dir)
    try:
        sink = WarningSink()
        target = find_session(store, SID, discover=False, sink=sink)
    finally:
        store.close()
    assert target.paths == [first]
    assert any("outside the home folder" in str(w) for w in sink.warnings)


def test_scanned_files_are_not_rechecked(tmp_path: Path) -> None:
    # Our own scans found them in the agents' folders; only a hook's word is re-checked.
    assert read_refusal("/etc/passwd", "claude-code", "scan", {"HOME": str(tmp_path)}) is None
    assert read_refusal("/etc/passwd", "claude-code", "hook", {"HOME": str(tmp_path)})
