"""``sessions scan``: each agent's default locations, ``--root`` and ``--agent``."""

from __future__ import annotations

from pathlib import Path

import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.errors import SourceError
from opencode_restore.store.discovery import AGENTS, default_roots, scan
from opencode_restore.store.store import Store
from tests.store.builders import GEMINI_CONTINUED, copy_to, fake_home


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, list[Path]]]:
    h = tmp_path / "home"
    made = fake_home(h)
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return h, made


def test_default_roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODEX_HOME", raising=False)
    assert default_roots("claude-code", tmp_path) == [tmp_path / ".claude/projects"]
    assert default_roots("codex", tmp_path) == [
        tmp_path / ".codex/sessions",
        tmp_path / ".codex/archived_sessions",
    ]
    assert default_roots("gemini", tmp_path) == [tmp_path / ".gemini/tmp"]
    assert default_roots("opencode", tmp_path) == [tmp_path / ".local/share/opencode"]
    assert default_roots("pi", tmp_path) == [tmp_path / ".pi/agent/sessions"]
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "ch"))
    assert default_roots("codex", tmp_path)[0] == tmp_path / "ch/sessions"
    with pytest.raises(SourceError, match="unknown agent"):
        default_roots("nope", tmp_path)


def test_scan_finds_every_agent_in_default_locations(
    store: Store, home: tuple[Path, dict[str, list[Path]]]
) -> None:
    _h, made = home
    result = scan(store)
    rows, total = store.sessions(limit=100)
    by_id = {r.id: r for r in rows}
    assert total == 7
    assert {r.agent for r in rows} == set(AGENTS)
    claude = by_id["e57fea98-e10e-4cce-a470-5de2e7413154"]
    assert claude.agent == "claude-code"
    assert claude.cwd == "/home/dev/src/greet-cli"
    assert claude.native_log_file == str(made["claude-code"][0].resolve())
    assert "d703ad6a-fc57-46ca-94d6-a6af7cf0c933" in by_id
    # The sub-agent file under <session>/subagents/ is not a session.
    assert not any(r.id.startswith("agent-") or r.id == "atest01" for r in rows)
    assert by_id["01a1fde9-539c-77f2-9e0a-d405fab49546"].agent == "codex"  # sessions/
    assert by_id["01a1fde6-b303-7f63-b067-d32dfaddcad9"].agent == "codex"  # archived_sessions/
    gemini = store.session("gem-resume")
    assert gemini is not None
    # The legacy .json and its .jsonl continuation form one chain, oldest first.
    assert [Path(f.path).suffix for f in gemini.files] == [".json", ".jsonl"]
    opencode = by_id["ses_e021ac976ffeprCgfn115CWSLu"]
    assert (opencode.agent, opencode.title) == ("opencode", "Add --shout flag to greet CLI")
    assert by_id["sess-tree-0001"].cwd == "/work/demo"
    assert result.appended == 8
    # Scanning again registers nothing new.
    assert scan(store).appended == 0


def test_scan_one_agent(store: Store, home: tuple[Path, dict[str, list[Path]]]) -> None:
    result = scan(store, agent="codex")
    assert {f.agent for f in result.found} == {"codex"}
    assert store.sessions()[1] == 2


def test_scan_root_overrides_defaults(store: Store, tmp_path: Path) -> None:
    other = tmp_path / "backup"
    fake_home(other)
    result = scan(store, root=other)  # every agent, searched recursively under the root
    assert {f.agent for f in result.found} == set(AGENTS)
    result = scan(store, agent="pi", root=other / ".pi")
    assert [f.session_id for f in result.found] == ["sess-tree-0001"]


def test_scan_rejects_unknown_agent(store: Store) -> None:
    with pytest.raises(SourceError, match="unknown agent"):
        scan(store, agent="vim")


def test_files_of_another_format_are_not_claimed(store: Store, tmp_path: Path) -> None:
    root = tmp_path / "mixed"
    fake_home(root)
    result = scan(store, agent="claude-code", root=root)
    # pi's *.jsonl and Gemini's session-*.jsonl are not Claude Code transcripts.
    assert {f.path.suffix for f in result.found} == {".jsonl"}
    assert all(".claude" in f.path.parts for f in result.found)


def test_broken_opencode_db_is_reported(store: Store, tmp_path: Path) -> None:
    root = tmp_path / "oc"
    root.mkdir()
    (root / "opencode.db").write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    sink = WarningSink()
    result = scan(store, agent="opencode", root=root, sink=sink)
    assert result.found == []
    assert any("opencode.db" in w.path for w in sink.warnings)


def test_missing_root_is_skipped(store: Store, tmp_path: Path) -> None:
    result = scan(store, agent="gemini", root=tmp_path / "nowhere")
    assert result.found == []


def test_odd_files_in_agent_folders(store: Store, tmp_path: Path) -> None:
    root = tmp_path / "odd"
    chats = root / "chats"
    chats.mkdir(parents=True)
    # Gemini: only session-* files are sessions (logs.json is the prompt log).
    (chats / "logs.json").write_text('[{"sessionId": "x", "type": "user"}]')
    (chats / "session-2026-01-01T00-00-undated.json").write_text(
        '{"sessionId": "undated", "messages": [{"id": "m", "type": "user", "content": "hi"}]}'
    )
    result = scan(store, agent="gemini", root=root)
    assert [f.session_id for f in result.found] == ["undated"]
    assert result.found[0].started is None
    # Codex: a rollout without session_meta takes its id from the file name.
    uid = "0199aaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
    (root / f"rollout-2026-01-01T00-00-00-{uid}.jsonl").write_text(
        '{"timestamp":"2026-01-01T00:00:00Z","type":"response_item","payload":{"type":"message",'
        '"role":"user","content":[{"type":"input_text","text":"hi"}]}}\n'
    )
    found = scan(store, agent="codex", root=root).found
    assert [(f.session_id, f.cwd) for f in found] == [(uid, None)]


def test_head_reads_only_the_first_lines(tmp_path: Path) -> None:
    from opencode_restore.sources.discover import head_objects as _head_objects

    path = tmp_path / "long.jsonl"
    path.write_text("not json\n" + "".join(f'{{"n": {k}}}\n' for k in range(100)))
    assert [o["n"] for o in _head_objects(path)] == list(range(39))
    assert list(_head_objects(tmp_path / "missing.jsonl")) == []


def test_unreadable_candidates_are_skipped(tmp_path: Path) -> None:
    from opencode_restore.sources.discover import mtime
    from opencode_restore.sources.gemini import discover

    missing = tmp_path / "gone" / "session-x.json"
    assert discover.describe(missing) is None
    assert mtime(missing) is None


def test_gemini_cwd_comes_from_the_project_root_file(tmp_path: Path) -> None:
    # Gemini CLI keeps tmp/<project>/.project_root beside chats/; a chat's head has no cwd.
    from opencode_restore.sources.gemini import discover

    chats = tmp_path / ".gemini/tmp/shrinkray/chats"
    chat = copy_to(GEMINI_CONTINUED, chats)
    before = discover.describe(chat)
    assert before is not None
    assert before.cwd is None
    (chats.parent / ".project_root").write_text("/home/dev/src/shrinkray\n")
    found = discover.describe(chat)
    assert found is not None
    assert found.cwd == "/home/dev/src/shrinkray"


def test_updated_is_the_last_entry_time_not_the_copy_time(
    store: Store, home: tuple[Path, dict[str, list[Path]]]
) -> None:
    # The fake home's files were just copied: their mtime is now, the sessions are older.
    scan(store)
    updated = {r.id: r.updated_at for r in store.sessions(limit=100)[0]}
    assert updated["e57fea98-e10e-4cce-a470-5de2e7413154"].startswith("2026-11-21T11:41:12.816")
    assert updated["d703ad6a-fc57-46ca-94d6-a6af7cf0c933"].startswith("2026-11-21T11:39:37.256")
    assert updated["01a1fde9-539c-77f2-9e0a-d405fab49546"].startswith("2026-11-21T11:41:32.418")
    assert updated["01a1fde6-b303-7f63-b067-d32dfaddcad9"].startswith("2026-11-21T11:39:07.876")
    assert updated["gem-resume"].startswith("2026-02-04T08:00:02")
    assert updated["sess-tree-0001"].startswith("2026-01-05T10:00:22")


def test_updated_falls_back_to_the_mtime_without_entry_times(tmp_path: Path) -> None:
    from opencode_restore.sources.discover import last_activity, mtime

    log = tmp_path / "s.jsonl"
    log.write_text('{"type":"session","id":"x"}\n')
    assert last_activity(log) == mtime(log)
    assert last_activity(tmp_path / "gone.jsonl") is None
