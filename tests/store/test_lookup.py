"""Sessions without paths: ids, prefixes, ``--latest`` and the scan cache."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.sources import get_reader
from opencode_restore.sources.base import Found
from opencode_restore.store.discovery import scan
from opencode_restore.store.lookup import (
    AmbiguousSession,
    SessionNotFound,
    find_session,
    human_size,
    latest_session,
)
from opencode_restore.store.store import Store
from tests.store.builders import CLAUDE_COMPACT, CODEX_COMPACT, CODEX_RESUME, PI_TREE, fake_home

CLAUDE_ID = "e57fea98-e10e-4cce-a470-5de2e7413154"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Path]]:
    h = tmp_path / "home"
    made = fake_home(h)
    monkeypatch.setenv("HOME", str(h))
    return made


def _touch(path: Path, when: float) -> None:
    os.utime(path, (when, when))


def test_an_id_unknown_to_the_store_is_found_by_discovery(
    store: Store, home: dict[str, list[Path]]
) -> None:
    assert store.sessions()[1] == 0
    target = find_session(store, CLAUDE_ID)
    assert (target.id, target.agent) == (CLAUDE_ID, "claude-code")
    assert target.paths == [home["claude-code"][0].resolve()]
    assert not target.container
    # The discovery registered everything it saw: the next lookup is the store's alone.
    assert store.sessions()[1] == 7


def test_a_unique_prefix_finds_the_session(store: Store, home: dict[str, list[Path]]) -> None:
    target = find_session(store, "sess-tree")
    assert (target.id, target.agent) == ("sess-tree-0001", "pi")
    assert find_session(store, "01a1fde9").paths == [home["codex"][0].resolve()]


def test_an_ambiguous_prefix_lists_every_candidate(
    store: Store, home: dict[str, list[Path]]
) -> None:
    with pytest.raises(AmbiguousSession) as err:
        find_session(store, "01a1fde")
    text = str(err.value)
    lines = text.splitlines()
    assert lines[0] == "session id prefix '01a1fde' matches 2 sessions; give more of the id:"
    for path, sid in ((CODEX_RESUME, "01a1fde9"), (CODEX_COMPACT, "01a1fde6")):
        line = next(x for x in lines if sid in x)
        assert "codex" in line
        assert "/home/dev/src/greet-cli" in line
        assert "'Add a --shout flag to the greet CLI" in line
        assert human_size(path.stat().st_size) in line
    assert err.value.exit_code == 2


def test_agent_narrows_a_prefix(store: Store, home: dict[str, list[Path]]) -> None:
    with pytest.raises(SessionNotFound, match="default locations of pi"):
        find_session(store, "01a1fde9", agent="pi")


def test_unknown_id_names_what_was_searched(store: Store, home: dict[str, list[Path]]) -> None:
    with pytest.raises(SessionNotFound, match="no session id starts with it"):
        find_session(store, "zzz")
    with pytest.raises(SessionNotFound, match="empty"):
        find_session(store, " ")


def test_an_opencode_session_is_read_inside_its_database(
    store: Store, home: dict[str, list[Path]]
) -> None:
    target = find_session(store, "ses_e021")
    assert target.container
    assert target.paths == [home["opencode"][0].resolve()]


def test_latest_prefers_the_current_directory_then_any(
    store: Store, home: dict[str, list[Path]]
) -> None:
    for k, paths in enumerate(home.values()):
        for p in paths:
            _touch(p, 1_700_000_000 + k * 100)
    pi_file = home["pi"][0]
    _touch(pi_file, 1_600_000_000)  # the oldest of all
    sink = WarningSink()
    assert latest_session(store, here="/work/demo", sink=sink).id == "sess-tree-0001"
    assert sink.warnings == []
    # A directory without sessions does not narrow anything, and the fallback is said.
    newest = latest_session(store, here="/nowhere", sink=sink)
    assert newest.agent != "pi"
    [said] = [str(w) for w in sink.warnings]
    assert said.startswith("/nowhere: no session recorded in this folder; --latest took")
    assert f"{newest.id} ({newest.agent}, in " in said
    assert latest_session(store, agent="pi").id == "sess-tree-0001"
    with pytest.raises(SessionNotFound, match="no pi session recorded in /nowhere"):
        latest_session(store, cwd="/nowhere", agent="pi")
    assert latest_session(store, cwd="/work/demo", discover=False).id == "sess-tree-0001"


def test_latest_in_an_empty_home_says_so(store: Store) -> None:
    with pytest.raises(SessionNotFound, match="no agent sessions found"):
        latest_session(store)


def test_a_second_scan_reads_no_unchanged_file(
    store: Store, home: dict[str, list[Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    scan(store)
    read: list[Path] = []
    pi = get_reader("pi")
    real = pi.describe

    def counting(path: Path) -> Found | None:
        read.append(path)
        return real(path)

    monkeypatch.setattr(pi, "describe", counting)
    assert scan(store).appended == 0
    assert read == []
    # A file that grew is read again, and the session's activity moves on to its new entry.
    pi_file = home["pi"][0]
    last = orjson.loads(PI_TREE.read_bytes().splitlines()[-1])
    with pi_file.open("ab") as fh:
        fh.write(orjson.dumps({**last, "timestamp": "2030-03-17T17:46:40.000Z"}) + b"\n")
    _touch(pi_file, 1_900_000_000)
    scan(store)
    assert read == [pi_file.resolve()]
    row = store.session("sess-tree-0001")
    assert row is not None
    assert row.updated_at.startswith("2030-03-17")


def test_a_cached_slug_chain_keeps_its_merged_id(store: Store, tmp_path: Path) -> None:
    """A /clear continuation that appears later joins the chain of the file seen before."""
    project = tmp_path / "home/.claude/projects/-p"
    project.mkdir(parents=True)
    first = project / f"{CLAUDE_ID}.jsonl"
    first.write_bytes(CLAUDE_COMPACT.read_bytes())
    _touch(first, 1_700_000_000)
    root = tmp_path / "home/.claude/projects"
    scan(store, agent="claude-code", root=root)
    later_id = "11111111-2222-4333-8444-555555555555"
    second = project / f"{later_id}.jsonl"
    text = CLAUDE_COMPACT.read_text("utf-8").replace(CLAUDE_ID, later_id)
    second.write_text(text.replace("2026-11-21T11:", "2026-11-21T12:"), "utf-8")
    scan(store, agent="claude-code", root=root)
    row = store.session(CLAUDE_ID)
    assert row is not None
    assert [Path(f.path).name for f in row.files] == [first.name, second.name]
    assert store.session(later_id) is None
