"""Every format behind the one ``Reader`` protocol: places, listing, describing, tails."""

from __future__ import annotations

from pathlib import Path

import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.sources import get_reader, is_container, is_container_reader, readers
from opencode_restore.sources.base import ContainerReader, Found, Reader, TailReader, merge_slugs

FIX = Path(__file__).resolve().parents[2] / "fixtures"
CLAUDE = FIX / "claude-code" / "scout" / "simple_conversation.jsonl"
OPENCODE_DB = FIX / "opencode" / "recorded" / "tui-compact" / "opencode.db"
EVAL_LOG = FIX / "inspect" / "eval-logs" / "log_read_sample.json"
PI = FIX / "pi" / "pi-mono" / "before-compaction.jsonl"


def _typed(reader: Reader) -> Reader:
    """The registry's readers satisfy ``Reader`` for mypy too (each module's READER)."""
    return reader


def test_every_reader_has_the_whole_protocol() -> None:
    names = [r.name for r in readers()]
    assert names == ["claude-code", "codex", "gemini", "pi", "opencode", "inspect", "terminal"]
    for reader in map(_typed, readers()):
        for member in ("sniff", "read", "iter_messages", "default_roots", "session_files"):
            assert callable(getattr(reader, member)), (reader.name, member)
        assert callable(reader.describe)
        assert callable(reader.list_sessions)


def test_only_container_formats_choose_a_session_and_only_claude_reads_tails() -> None:
    assert [r.name for r in readers() if isinstance(r, ContainerReader)] == ["opencode", "inspect"]
    assert [r.name for r in readers() if is_container(r.name)] == ["opencode", "inspect"]
    assert [r.name for r in readers() if isinstance(r, TailReader)] == ["claude-code"]
    assert not is_container("no-such-format")


def test_is_container_reader_answers_as_isinstance_once_per_class(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = [is_container_reader(r) for r in readers()]
    assert first == [isinstance(r, ContainerReader) for r in readers()]

    # Asked again, no reader is looked through: the runtime check would say no now.
    def no_member(self: object, name: str) -> object:
        raise AttributeError(name)

    for reader in readers():
        monkeypatch.setattr(type(reader), "__getattr__", no_member, raising=False)
        monkeypatch.delattr(type(reader), "name", raising=False)
    assert [is_container_reader(r) for r in readers()] == first


@pytest.mark.parametrize(
    ("agent", "expected"),
    [
        ("claude-code", [".claude/projects"]),
        ("codex", [".codex/sessions", ".codex/archived_sessions"]),
        ("gemini", [".gemini/tmp"]),
        ("pi", [".pi/agent/sessions"]),
        ("opencode", [".local/share/opencode"]),
        ("inspect", []),
        ("terminal", []),
    ],
)
def test_default_roots_live_with_each_format(
    agent: str, expected: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    roots = get_reader(agent).default_roots(tmp_path)
    assert roots == [tmp_path / e for e in expected]


def test_a_session_file_lists_the_one_session_its_head_describes() -> None:
    reader = get_reader("claude-code")
    (found,) = reader.list_sessions(CLAUDE, WarningSink())
    assert found == reader.describe(CLAUDE)
    assert found.agent == "claude-code"
    assert found.session_id == reader.read([CLAUDE], WarningSink()).id
    pi = get_reader("pi")
    (found,) = pi.list_sessions(PI, WarningSink())
    assert (found.agent, found.path) == ("pi", PI)


def test_a_terminal_capture_is_described_by_the_id_its_content_gives(tmp_path: Path) -> None:
    log = tmp_path / "screen.log"
    log.write_text("$ ls\n")
    terminal = get_reader("terminal")
    (found,) = terminal.list_sessions(log, WarningSink())
    assert found == terminal.describe(log)
    assert found.session_id == terminal.read([log], WarningSink()).id
    assert found.session_id.startswith("screen-")
    # A capture has no place of its own: it is found only when named.
    assert terminal.session_files(tmp_path) == []


def test_a_container_lists_its_top_level_sessions_by_the_id_that_reads_them() -> None:
    reader = get_reader("opencode")
    assert isinstance(reader, ContainerReader)
    listed = reader.list_sessions(OPENCODE_DB, WarningSink())
    assert listed
    assert {(f.agent, f.path) for f in listed} == {("opencode", OPENCODE_DB)}
    for found in listed:
        session = reader.read([OPENCODE_DB], WarningSink(), session=found.session_id)
        assert session.id == found.session_id
    assert reader.session_files(OPENCODE_DB.parent.parent) == sorted(
        p for p in OPENCODE_DB.parent.parent.rglob("opencode.db")
    )


def test_an_eval_log_lists_one_session_per_sample() -> None:
    reader = get_reader("inspect")
    assert isinstance(reader, ContainerReader)
    listed = reader.list_sessions(EVAL_LOG, WarningSink())
    assert [f.session_id for f in listed] == [
        c.id for c in reader.sessions([EVAL_LOG], WarningSink())
    ]
    first = reader.read([EVAL_LOG], WarningSink(), session=listed[0].session_id)
    assert first.id == listed[0].session_id


def test_files_sharing_a_slug_take_the_oldest_id_per_agent_and_folder(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    old = Found(
        "claude-code", "a", tmp_path / "a.jsonl", slug="s", started=datetime(2026, 1, 1, tzinfo=UTC)
    )
    new = Found(
        "claude-code", "b", tmp_path / "b.jsonl", slug="s", started=datetime(2026, 1, 2, tzinfo=UTC)
    )
    apart = Found("claude-code", "c", tmp_path / "x" / "c.jsonl", slug="s")
    assert [f.session_id for f in merge_slugs([new, old, apart])] == ["a", "a", "c"]
