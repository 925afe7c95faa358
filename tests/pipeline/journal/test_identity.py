"""A journal is named by its session's id and file: copies and other readings keep apart."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from opencode_restore.pipeline.journal.identity import journal_key, saved_journal
from opencode_restore.pipeline.journal.store import JournalStore

from ..journal_helpers import Counting, restore, session_of


def _log(folder: Path) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "log.jsonl"
    path.write_text('{"a": 1}\n')
    return str(path)


def test_a_copy_another_agent_and_a_branch_have_journals_of_their_own(tmp_path: Path) -> None:
    original = session_of(1, files=[_log(tmp_path / "a")])
    copy = session_of(1, files=[_log(tmp_path / "backup")])
    as_pi = dataclasses.replace(original, agent="pi")
    keys = [journal_key(s) for s in (original, copy, as_pi)] + [journal_key(original, "b1")]
    assert len(set(keys)) == 4
    assert all(k.startswith("sess/1-") for k in keys)
    assert keys[3] == f"{keys[0]}@b1"
    # The same file reached through a link is the same file.
    (tmp_path / "link").symlink_to(tmp_path / "a")
    linked = session_of(1, files=[str(tmp_path / "link" / "log.jsonl")])
    assert journal_key(linked) == keys[0]


def _as_before_the_upgrade(data: Path, key: str, session_id: str) -> None:
    """Move the journal saved under ``key`` to the name it had before: the bare id."""
    store = JournalStore(data)
    store.path_for(key).replace(store.path_for(session_id))
    store.changes_for(key).unlink(missing_ok=True)


def test_a_journal_saved_under_the_bare_id_is_continued_after_the_upgrade(
    tmp_path: Path,
) -> None:
    session = session_of(3, files=[_log(tmp_path / "a")])
    restore(session, Counting(), tmp_path / "data")
    _as_before_the_upgrade(tmp_path / "data", journal_key(session), session.id)
    again = Counting()
    r = restore(session, again, tmp_path / "data")
    assert again.requests == []
    assert r.timeline is not None
    assert r.timeline.note == "resumed: all 3 turns unchanged"
    # Kept under its new name: the path the restore reports is the file it continued.
    assert r.timeline.path == str(JournalStore(tmp_path / "data").path_for(journal_key(session)))
    assert Path(r.timeline.path).is_file()
    grown = session_of(4, files=session.files)
    more = Counting()
    restore(grown, more, tmp_path / "data")
    assert more.turn_calls() == [4]


def test_a_bare_id_journal_of_another_file_or_agent_is_not_continued(tmp_path: Path) -> None:
    made_from = session_of(3, files=[_log(tmp_path / "backup")])
    restore(made_from, Counting(), tmp_path / "data")
    _as_before_the_upgrade(tmp_path / "data", journal_key(made_from), made_from.id)
    store = JournalStore(tmp_path / "data")
    original = session_of(3, files=[_log(tmp_path / "a")])
    assert saved_journal(store, original) is None
    assert saved_journal(store, dataclasses.replace(made_from, agent="pi")) is None
    assert saved_journal(store, made_from) is not None
    again = Counting()
    r = restore(original, again, tmp_path / "data")
    assert again.turn_calls() == [1, 2, 3]
    assert r.timeline is not None
    assert r.timeline.note == "new timeline"
