"""A journal's change file: turns are appended, stages write a snapshot."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from opencode_restore.llm.offline import OfflineProvider
from opencode_restore.pipeline.journal.store import JournalStore

from ..journal_helpers import KEY, Counting, Crash, restore, session_of


def _files(data: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    store = JournalStore(data)
    snapshot = json.loads(store.path_for(KEY).read_text())
    changes = store.changes_for(KEY)
    lines = [json.loads(x) for x in changes.read_text().splitlines()] if changes.exists() else []
    return snapshot, lines


def test_turns_go_to_the_journal_and_a_finished_run_leaves_one_snapshot(tmp_path: Path) -> None:
    session = session_of(5)
    with pytest.raises(Crash):
        restore(session, Counting(crash_at=5), tmp_path)  # turns 1-4 done
    snapshot, changes = _files(tmp_path)
    # The first turn writes a snapshot; each later one is one small line after it.
    assert snapshot["turn_ids"] == ["u1"]
    assert [c["append"]["turn_ids"] for c in changes] == [["u2"], ["u3"], ["u4"]]
    assert {c["generation"] for c in changes} == {snapshot["generation"]}
    merged = JournalStore(tmp_path).load(KEY)
    assert merged is not None
    assert merged["turn_ids"] == ["u1", "u2", "u3", "u4"]
    assert [b["parent_id"] for b in merged["blocks"][1:]] == [
        b["id"] for b in merged["blocks"][:-1]
    ]
    assert len(merged["numbering"]["labels"]) == 16
    again = Counting()
    restore(session, again, tmp_path)
    assert again.turn_calls() == [5]
    snapshot, changes = _files(tmp_path)
    assert changes == []
    assert snapshot["turn_ids"] == ["u1", "u2", "u3", "u4", "u5"]
    assert "synthesis" in snapshot["stages"]


def test_a_torn_last_line_loses_only_that_turn(tmp_path: Path) -> None:
    session = session_of(4)
    with pytest.raises(Crash):
        restore(session, Counting(crash_at=4), tmp_path)  # turns 1-3 done
    changes = JournalStore(tmp_path).changes_for(KEY)
    text = changes.read_text()
    changes.write_text(text[: len(text) - 40])  # the kill landed inside the last write
    again = Counting()
    r = restore(session, again, tmp_path)
    assert again.turn_calls() == [3, 4]
    clean = restore(session, OfflineProvider(), None)
    assert r.model_dump(mode="json", exclude={"usage", "timeline"}) == clean.model_dump(
        mode="json", exclude={"usage", "timeline"}
    )


def test_lines_of_an_older_generation_are_ignored(tmp_path: Path) -> None:
    session = session_of(3)
    with pytest.raises(Crash):
        restore(session, Counting(crash_at=3), tmp_path)  # turns 1-2 done: u2 in the change file
    store = JournalStore(tmp_path)
    stale = store.changes_for(KEY).read_text()
    restore(session, Counting(), tmp_path)  # finishes with a new snapshot
    # A crash between the snapshot's rename and the change file's removal leaves old lines.
    store.changes_for(KEY).write_text(stale)
    loaded = store.load(KEY)
    assert loaded is not None
    assert loaded["turn_ids"] == ["u1", "u2", "u3"]
    done = Counting()
    restore(session, done, tmp_path)
    assert done.requests == []


def test_a_turn_saves_only_its_own_labels_and_never_the_whole_map(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opencode_restore.timeline.numbering import Numbering

    built: list[int] = []  # the sizes of every whole map made (labels from M1 on)
    entries = Numbering.iter_entries

    def counting(self: Numbering, start: int) -> Iterator[dict[str, Any]]:
        if start == 0:
            built.append(len(self))
        return entries(self, start)

    monkeypatch.setattr(Numbering, "iter_entries", counting)
    session = session_of(5)
    with pytest.raises(Crash):
        restore(session, Counting(crash_at=5), tmp_path)  # turns 1-4 done
    # The first turn's snapshot holds the map; later turns add their 4 labels each.
    assert built == [4]
    snapshot, changes = _files(tmp_path)
    assert len(snapshot["numbering"]["labels"]) == 4
    assert [len(c["append"]["numbering.labels"]) for c in changes] == [4, 4, 4]
    starts = [c["append"]["numbering.labels"][0]["id"] for c in changes]
    assert len(set(starts)) == 3


def test_the_saved_state_is_not_held_after_it_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc
    import weakref

    from opencode_restore.pipeline import run as pipeline
    from opencode_restore.pipeline.stages.synthesizer import synthesize as real_synthesize
    from opencode_restore.pipeline.state import RestoreState

    class Payload(dict):  # type: ignore[type-arg]
        """A dict a weak reference can watch."""

    saved: list[weakref.ref[Payload]] = []
    whole = RestoreState.to_dict

    def watched(self: RestoreState, *, streamed: bool = False) -> Payload:
        payload = Payload(whole(self, streamed=streamed))
        saved.append(weakref.ref(payload))
        return payload

    alive: list[bool] = []
    synthesize = real_synthesize

    async def checking(*args: object, **kwargs: object) -> object:
        gc.collect()
        # The evidence stage's save wrote the state: a second copy of every turn summary
        # must not stay in memory through the rest of the run.
        alive.extend(ref() is not None for ref in saved)
        return await synthesize(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(RestoreState, "to_dict", watched)
    monkeypatch.setattr(pipeline, "synthesize", checking)
    restore(session_of(3), OfflineProvider(), tmp_path)
    assert alive
    assert not any(alive)
