"""Resume, incremental re-runs and stage reuse over the saved journal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from opencode_restore.errors import ProviderError
from opencode_restore.llm.base import LLMRequest, LLMResult
from opencode_restore.llm.offline import OfflineProvider
from opencode_restore.pipeline.journal.identity import journal_key
from opencode_restore.pipeline.journal.store import JournalStore
from opencode_restore.pipeline.restoration import Restoration

from .journal_helpers import KEY, Counting, Crash, config, restore, session_of


def _saved(data: Path, key: str = KEY) -> dict[str, Any]:
    """What is saved: the snapshot with the journal's changes applied."""
    saved = JournalStore(data).load(key)
    assert saved is not None
    return saved


def _comparable(r: Restoration) -> dict[str, Any]:
    out = r.model_dump(mode="json", exclude={"usage", "timeline"})
    return out


def test_crash_then_resume_repeats_no_finished_call(tmp_path: Path) -> None:
    session = session_of(6)
    with pytest.raises(Crash):
        restore(session, Counting(crash_at=4), tmp_path)  # turns 1-3 done, turn 4 never answered
    saved = _saved(tmp_path)
    assert saved["schema"] == "restore.timeline.v1"
    assert saved["turn_ids"] == ["u1", "u2", "u3"]
    assert [b["kind"] for b in saved["blocks"]] == ["turn.header", "turn.summary"] * 3
    again = Counting()
    r = restore(session, again, tmp_path)
    assert again.turn_calls() == [4, 5, 6]
    assert again.stages() == ["turn_summary"] * 3 + ["synthesis"]
    assert r.timeline is not None
    assert r.timeline.turns_reused == 3
    assert "turn 4" in r.timeline.note
    # Identical to an uninterrupted run: same summaries, same labels, same references.
    clean = restore(session, OfflineProvider(), None)
    assert _comparable(r) == _comparable(clean)
    assert [t.turn_number for t in r.turns] == [1, 2, 3, 4, 5, 6]
    assert r.timeline.note == "resumed at turn 4: 3 turns reused, 3 to do (new turns)"
    assert all(ref.role is not None for ref in r.references)


def test_crash_in_synthesis_keeps_every_turn(tmp_path: Path) -> None:
    session = session_of(3)
    with pytest.raises(Crash):
        restore(session, Counting(crash_at=4), tmp_path)
    assert "synthesis" not in _saved(tmp_path)["stages"]
    again = Counting()
    restore(session, again, tmp_path)
    assert again.stages() == ["synthesis"]


def test_unchanged_log_makes_no_call_and_same_result(tmp_path: Path) -> None:
    session = session_of(4)
    first = restore(session, Counting(), tmp_path)
    again = Counting()
    second = restore(session, again, tmp_path)
    assert again.requests == []
    assert _comparable(second) == _comparable(first)
    assert second.timeline is not None
    assert second.timeline.stages_reused == ["evidence", "synthesis", "branches"]
    assert second.usage.calls == 0
    # The saved usage adds up over runs.
    assert _saved(tmp_path)["usage"]["calls"] == first.usage.calls


def test_grown_log_summarizes_only_new_turns(tmp_path: Path) -> None:
    restore(session_of(3), Counting(), tmp_path)
    again = Counting()
    r = restore(session_of(5), again, tmp_path)
    assert again.turn_calls() == [4, 5]
    assert again.stages()[-1] == "synthesis"  # the summary covers the new turns
    assert r.timeline is not None
    assert "resumed at turn 4" in r.timeline.note
    assert _comparable(r) == _comparable(restore(session_of(5), OfflineProvider(), None))


def test_changed_turn_restarts_there(tmp_path: Path) -> None:
    restore(session_of(5), Counting(), tmp_path)
    again = Counting()
    changed = session_of(5, changed={3: "a different request"})
    r = restore(changed, again, tmp_path)
    assert again.turn_calls() == [3, 4, 5]
    assert r.turns[2].user_request_summary.startswith("a different request")
    saved = _saved(tmp_path)
    assert saved["turn_ids"] == ["u1", "u2", "u3", "u4", "u5"]
    assert r.timeline is not None
    assert r.timeline.note == "resumed at turn 3: it changed since the last run; 2 turns reused"
    assert _comparable(r) == _comparable(restore(changed, OfflineProvider(), None))


def test_state_loaded_equals_state_replayed(tmp_path: Path) -> None:
    from opencode_restore.pipeline.journal.persist import from_payload
    from opencode_restore.pipeline.resume import replay
    from opencode_restore.pipeline.stages.turn_parser import parse_turns
    from opencode_restore.pipeline.state import RestoreState
    from opencode_restore.timeline.numbering import Numbering

    session = session_of(4)
    restore(session, Counting(), tmp_path)
    payload = _saved(tmp_path)
    tl = from_payload(payload, session)
    replayed = replay(tl, parse_turns(session), Numbering.from_dict(payload["numbering"]))
    assert replayed.to_dict() == RestoreState.from_dict(payload["state"]).to_dict()
    assert [s.turn_number for s in replayed.summaries] == [1, 2, 3, 4]


def test_fresh_ignores_the_saved_timeline(tmp_path: Path) -> None:
    restore(session_of(3), Counting(), tmp_path)
    again = Counting()
    r = restore(session_of(3), again, tmp_path, fresh=True)
    assert again.turn_calls() == [1, 2, 3]
    assert r.timeline is not None
    assert "fresh" in r.timeline.note


def test_another_model_starts_again(tmp_path: Path) -> None:
    restore(session_of(2), Counting(), tmp_path)
    other = Counting()
    other.model = "other-rules"
    r = restore(session_of(2), other, tmp_path)
    assert other.turn_calls() == [1, 2]
    assert r.timeline is not None
    assert "another model" in r.timeline.note


def test_max_turns_prefix_does_not_overwrite_a_longer_timeline(tmp_path: Path) -> None:
    restore(session_of(4), Counting(), tmp_path)
    short = Counting()
    r = restore(session_of(4), short, tmp_path, max_turns=2)
    assert short.turn_calls() == []
    assert [t.turn_number for t in r.turns] == [1, 2]
    assert r.timeline is not None
    assert r.timeline.path is None
    assert len(_saved(tmp_path)["turns"]) == 4


class FailingTurns(Counting):
    """Counting, but the calls for some turns fail for good (as after the retries)."""

    def __init__(self, fail: set[int]) -> None:
        super().__init__()
        self.fail = fail

    async def complete(self, request: LLMRequest) -> LLMResult:
        if request.stage == "turn_summary" and request.facts["turn_number"] in self.fail:
            self.requests.append(request)
            raise ProviderError("counting", "offline", "service unavailable", status=503)
        return await super().complete(request)


def test_failed_turn_is_recorded_then_retried_on_the_next_run(tmp_path: Path) -> None:
    from opencode_restore.llm.scripted import ScriptedProvider, ScriptedStatusError

    cfg = config()
    cfg.llm.max_attempts = 1
    provider = ScriptedProvider([ScriptedStatusError(503)], auto=True)
    first = restore(session_of(2), provider, tmp_path, cfg)
    assert [f.turn for f in first.failed_turns] == [1]
    saved = _saved(tmp_path)
    assert saved["turns"][0]["error"]
    assert saved["turns"][0]["summary"] is None
    assert "could not be summarized" in saved["blocks"][1]["text"]
    again = ScriptedProvider(auto=True)
    second = restore(session_of(2), again, tmp_path, cfg)
    assert [r.facts["turn_number"] for r in again.requests if r.stage == "turn_summary"] == [1, 2]
    assert second.failed_turns == []
    assert second.timeline is not None
    assert second.timeline.note == (
        "resumed at turn 1: 0 turns reused, retrying turn 1, which failed last time"
    )
    assert _saved(tmp_path)["turns"][0]["summary"] is not None


def test_retry_redoes_the_turns_after_a_failed_one(tmp_path: Path) -> None:
    session = session_of(4)
    first = restore(session, FailingTurns({2}), tmp_path)
    assert [f.turn for f in first.failed_turns] == [2]
    still_down = FailingTurns({2})
    restore(session, still_down, tmp_path)
    # Turn 1 is kept; turn 2 is tried again and, still failing, recorded again.
    assert still_down.turn_calls() == [2, 3, 4]
    again = Counting()
    r = restore(session, again, tmp_path)
    # Turns 3 and 4 were summarized without turn 2 in the state: they are redone too.
    assert again.turn_calls() == [2, 3, 4]
    assert r.failed_turns == []
    clean = restore(session, OfflineProvider(), None)
    assert _comparable(r) == _comparable(clean)
    done = Counting()
    restore(session, done, tmp_path)
    assert done.requests == []


def test_evidence_is_reused_only_with_the_same_options(tmp_path: Path) -> None:
    cfg = config(skip_evidence_search=False)
    session = session_of(2)
    first = Counting()
    restore(session, first, tmp_path, cfg)
    assert "evidence" in first.stages()
    saved = _saved(tmp_path)
    assert saved["stages"]["evidence"]["data"]["items"]
    assert saved["sources_pool"][0]["id"] == "S1"
    assert any(b["kind"] == "evidence" for b in saved["blocks"])
    same = Counting()
    restore(session, same, tmp_path, cfg)
    assert same.requests == []
    other = Counting()
    restore(session, other, tmp_path, cfg, max_searches=1)
    assert other.stages()[0] == "evidence"
    assert other.stages()[-1] == "synthesis"


def test_corrupt_file_is_moved_aside(tmp_path: Path) -> None:
    path = JournalStore(tmp_path).path_for(KEY)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"schema": "restore.timeline.v1", "turns": [')
    again = Counting()
    r = restore(session_of(2), again, tmp_path)
    assert again.turn_calls() == [1, 2]
    assert path.with_suffix(".corrupt").exists()
    assert r.timeline is not None
    assert r.timeline.note == "new timeline"
    assert _saved(tmp_path)["turn_ids"] == ["u1", "u2"]


def test_wrong_schema_starts_again(tmp_path: Path) -> None:
    path = JournalStore(tmp_path).path_for(KEY)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"schema": "conv.timeline.v1", "version": 1}))
    r = restore(session_of(1), Counting(), tmp_path)
    assert r.timeline is not None
    assert "not usable" in r.timeline.note


def test_source_file_hashes_are_saved(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text('{"a": 1}\n')
    session = session_of(1, files=[str(log)])
    restore(session, Counting(), tmp_path / "data")
    saved = _saved(tmp_path / "data", journal_key(session))
    assert saved["source_files"][0]["size"] == 9
    assert len(saved["source_files"][0]["sha256"]) == 64
    log.write_text('{"a": 1}\n{"b": 2}\n')
    r = restore(session_of(2, files=[str(log)]), Counting(), tmp_path / "data")
    assert r.timeline is not None
    assert "the log grew" in r.timeline.note
