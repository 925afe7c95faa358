"""``sessions scan`` of Claude Code folders: in-file ids, slug chains, sub-agents, non-logs.

The facts come from /work/shared/samples/EXPECTATIONS.md (inspect_scout's and ccrider's
tests on the same samples): ``simple_conversation`` is ``test-session-001``; files
sharing a slug are one session (``session-aaa`` from slug_session_1 + 2, holding both
ids); ``agent-atest01`` is the sub-agent file of ``agent_session``; ccrider's
``agent-session.jsonl`` is a sidechain file; the whole scout folder gives >= 5 sessions.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.sources import open_session
from opencode_restore.sources.base import Found, merge_slugs
from opencode_restore.store.discovery import find_sessions, scan
from opencode_restore.store.store import Store
from tests.store.builders import FIXTURES

SCOUT = FIXTURES / "claude-code" / "scout"
CCRIDER = FIXTURES / "claude-code" / "ccrider"


def _project(home: Path, name: str, files: dict[str, Path]) -> Path:
    """Copy ``files`` into ``~/.claude/projects/<name>/`` under their new names."""
    folder = home / ".claude" / "projects" / name
    folder.mkdir(parents=True)
    for new, src in files.items():
        shutil.copy(src, folder / new)
    return folder


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The scout samples as the QA run had them (``scout__`` names), one folder each test."""
    h = tmp_path / "home"
    _project(h, "-scout", {f"scout__{p.name}": p for p in sorted(SCOUT.glob("*.jsonl"))})
    return h


def _by_id(found: list[Found]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in sorted(found, key=lambda f: (f.started is None, f.started, f.path.name)):
        out.setdefault(f.session_id, []).append(f.path.name)
    return out


def test_ids_come_from_the_files_not_their_names(home: Path) -> None:
    sessions = _by_id(find_sessions(["claude-code"], [home], WarningSink()))
    assert sessions["test-session-001"] == ["scout__simple_conversation.jsonl"]
    assert sessions["test-session-002"] == ["scout__tool_call_conversation.jsonl"]
    assert sessions["test-session-005"] == ["scout__compaction_session.jsonl"]
    assert not any(sid.startswith("scout__") for sid in sessions)
    # EXPECTATIONS: the whole directory gives >= 5 sessions.
    assert len(sessions) >= 5


def test_files_sharing_a_slug_are_one_chain_named_by_the_oldest(home: Path) -> None:
    sessions = _by_id(find_sessions(["claude-code"], [home], WarningSink()))
    assert sessions["session-aaa"] == ["scout__slug_session_1.jsonl", "scout__slug_session_2.jsonl"]
    assert "session-bbb" not in sessions
    assert sessions["session-clear"] == [
        "scout__slug_clear_session.jsonl",
        "scout__slug_clear_partner.jsonl",
    ]
    assert sessions["session-mc1"] == [
        "scout__slug_multi_clear_file1.jsonl",
        "scout__slug_multi_clear_file2.jsonl",
    ]
    assert "session-partner" not in sessions
    assert "session-mc2" not in sessions


def test_a_registered_slug_chain_restores_as_one_session(home: Path, store: Store) -> None:
    scan(store, agent="claude-code", root=home)
    row = store.session("session-aaa")
    assert row is not None
    assert [Path(f.path).name for f in row.files] == [
        "scout__slug_session_1.jsonl",
        "scout__slug_session_2.jsonl",
    ]
    assert store.session("session-bbb") is None
    session = open_session([Path(f.path) for f in row.files], WarningSink())
    assert session.id == "session-aaa"
    assert len(session.messages()) == 4
    assert session.meta["session_ids"] == ["session-aaa", "session-bbb"]
    assert session.usage().total == 450
    clear = store.session("session-clear")
    assert clear is not None
    merged = open_session([Path(f.path) for f in clear.files], WarningSink())
    # No duplicates among the merged ids.
    assert merged.meta["session_ids"] == ["session-clear", "session-partner"]


def test_one_slug_in_two_projects_is_two_sessions(tmp_path: Path) -> None:
    home = tmp_path / "h"
    _project(home, "-a", {"one.jsonl": SCOUT / "slug_session_1.jsonl"})
    _project(home, "-b", {"two.jsonl": SCOUT / "slug_session_2.jsonl"})
    sessions = _by_id(find_sessions(["claude-code"], [home], WarningSink()))
    assert sessions == {"session-aaa": ["one.jsonl"], "session-bbb": ["two.jsonl"]}


def test_sub_agent_files_are_not_sessions(home: Path, tmp_path: Path) -> None:
    found = find_sessions(["claude-code"], [home], WarningSink())
    # scout__agent-atest01 carries its parent's sessionId: it must not join that chain.
    assert _by_id(found)["test-session-004"] == ["scout__agent_session.jsonl"]
    assert not any("atest01" in f.path.name for f in found)
    other = tmp_path / "other"
    _project(
        other,
        "-cc",
        {
            "sidechain.jsonl": CCRIDER / "agent-session.jsonl",
            "no-summary.jsonl": CCRIDER / "no-summary.jsonl",
        },
    )
    assert _by_id(find_sessions(["claude-code"], [other], WarningSink())) == {
        "test-session-456": ["no-summary.jsonl"]
    }


def test_a_slug_on_the_last_lines_only_is_found(tmp_path: Path) -> None:
    # Claude Code sets the slug when plan mode starts: real files carry it from line
    # ~50 on, past the head the scan reads first.
    lines = (SCOUT / "slug_session_1.jsonl").read_text().splitlines()
    filler = lines[0].replace('"slug":"merged-slug-test",', "")
    padded = tmp_path / "h" / ".claude" / "projects" / "-p"
    padded.mkdir(parents=True)
    (padded / "late.jsonl").write_text("\n".join([filler] * 3000 + lines) + "\n")
    shutil.copy(SCOUT / "slug_session_2.jsonl", padded / "next.jsonl")
    assert (padded / "late.jsonl").stat().st_size > 512 * 1024
    sessions = _by_id(find_sessions(["claude-code"], [tmp_path / "h"], WarningSink()))
    assert sessions == {"session-aaa": ["late.jsonl", "next.jsonl"]}


def test_merge_slugs_groups_by_agent_and_folder_only(tmp_path: Path) -> None:
    # Only Claude Code files carry a slug; a slug joins files of one agent and one folder.
    codex = Found("codex", "c1", tmp_path / "a.jsonl", slug="s")
    lone = Found("claude-code", "x", tmp_path / "x.jsonl", slug="s")
    twin = Found("codex", "c2", tmp_path / "elsewhere" / "b.jsonl", slug="s")
    assert [f.session_id for f in merge_slugs([codex, lone, twin])] == ["c1", "x", "c2"]


def test_non_logs_in_agent_folders_are_reported_once(tmp_path: Path, store: Store) -> None:
    home = tmp_path / "h"
    claude = _project(home, "-p", {"ok.jsonl": SCOUT / "simple_conversation.jsonl"})
    (claude / "binary.jsonl").write_bytes(bytes(range(256)) * 20)
    rollouts = home / ".codex" / "sessions" / "2026" / "01" / "01"
    rollouts.mkdir(parents=True)
    empty = rollouts / "rollout-2026-01-01T00-00-00-0199aaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee.jsonl"
    empty.touch()
    sink = WarningSink()
    # --root searches every agent's patterns under it: *.jsonl twice (claude, pi).
    result = scan(store, root=home, sink=sink)
    assert [f.session_id for f in result.found] == ["test-session-001"]
    assert sorted(str(w) for w in sink.warnings) == sorted(
        [
            f"{claude / 'binary.jsonl'}: found by a scan, but unknown log format "
            "(tried claude-code, codex, gemini, pi, opencode, inspect, terminal); skipped",
            f"{empty}: found by a scan, but file is empty; skipped",
        ]
    )
