"""Budget compaction, the token estimator, transcript cuts and --debug-render output."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from opencode_restore.errors import ProviderError
from opencode_restore.llm.base import LLMRequest, LLMResult
from opencode_restore.pipeline.budget import TokenEstimator, _cap_lines, fallback_summary
from opencode_restore.pipeline.journal.store import JournalStore
from opencode_restore.pipeline.prompting.render import request_chars
from opencode_restore.pipeline.tokens import raw_tokens

from .journal_helpers import KEY, Counting, config, restore, session_of

BUDGET = 3000


class NoRange(Counting):
    """The range summary call fails for good; everything else answers."""

    async def complete(self, request: LLMRequest) -> LLMResult:
        if request.stage == "range_summary":
            self.requests.append(request)
            raise ProviderError("offline", "rules", "range summaries are down")
        return await super().complete(request)


def _budget(tokens: int = BUDGET) -> Any:
    cfg = config()
    cfg.llm.context_budget_tokens = tokens
    return cfg


def _saved(data: Path) -> dict[str, Any]:
    saved: dict[str, Any] = json.loads(JournalStore(data).path_for(KEY).read_text())
    return saved


def test_long_session_compacts_and_every_prompt_fits(tmp_path: Path) -> None:
    provider = Counting()
    r = restore(session_of(40), provider, tmp_path, _budget())
    sizes = [raw_tokens(request_chars(q)) for q in provider.requests]
    assert max(sizes) <= BUDGET
    stages = provider.stages()
    assert stages.count("range_summary") == 1
    at = stages.index("range_summary")
    # The compaction is large: the next turn's prompt is far below the budget.
    assert sizes[at + 1] < 0.75 * BUDGET
    # Every turn summary is still in the restoration.
    assert [t.turn_number for t in r.turns] == list(range(1, 41))
    assert r.timeline is not None
    # Where the fold lands depends on the prompts' size: late, and only once.
    n = r.timeline.compacted_through_turn
    assert n is not None
    assert 25 <= n < 40
    saved = _saved(tmp_path)
    assert saved["blocks"][0]["kind"] == "range.summary"
    assert saved["blocks"][0]["meta"]["first_turn"] == 1
    assert saved["blocks"][1]["turn"] == n + 1
    assert len(saved["turns"]) == 40
    assert len(saved["state"]["summaries"]) == 40
    # The offline provider answers the range call with one line per compacted turn
    # (turn i holds the labels M(4i-3) to M(4i)).
    line = f"Turn {n}: request {n} [M{4 * n - 3}] → done {n} [M{4 * n}]"
    assert line in saved["blocks"][0]["text"]
    assert saved["blocks"][0]["meta"]["fallback"] is False
    # Later turn prompts start from the range summary.
    after = provider.requests[at + 1]
    assert after.messages[1].content.startswith(f"[SUMMARY OF TURNS 1–{n}]")
    assert "[NOTICE] Context budget" in after.messages[-2].content
    assert "compacted into a summary" in after.messages[-2].content
    # The range call carried the turns it folds.
    folded = provider.requests[at]
    assert f"[TURN {n} · M{4 * n - 3}–M{4 * n}]" in folded.messages[-1].content
    assert folded.facts["turn_summaries"][-1]["turn_number"] == n


def test_failed_range_call_falls_back_to_one_line_per_turn(tmp_path: Path) -> None:
    provider = NoRange()
    restore(session_of(40), provider, tmp_path, _budget())
    saved = _saved(tmp_path)
    head = saved["blocks"][0]
    assert head["kind"] == "range.summary"
    assert head["meta"]["fallback"] is True
    n = head["meta"]["last_turn"]
    assert f"Turn {n}: request {n} [M{4 * n - 3}] → done {n} [M{4 * n}]" in head["text"]
    assert max(raw_tokens(request_chars(q)) for q in provider.requests) <= BUDGET


def test_second_compaction_keeps_the_first_summary(tmp_path: Path) -> None:
    provider = Counting()
    restore(session_of(70), provider, tmp_path, _budget())
    assert provider.stages().count("range_summary") >= 2  # how many depends on prompt sizes
    second = [q for q in provider.requests if q.stage == "range_summary"][1]
    assert "Summary of the turns before this range" in second.messages[0].content
    saved = _saved(tmp_path)
    head = saved["blocks"][0]
    assert head["meta"]["first_turn"] == 1
    assert head["meta"]["last_turn"] > 33
    assert head["text"].startswith("(…")  # the cap dropped the oldest lines


def test_resume_after_compaction_and_a_change_inside_it(tmp_path: Path) -> None:
    restore(session_of(40), Counting(), tmp_path, _budget())
    again = Counting()
    restore(session_of(42), again, tmp_path, _budget())
    assert again.turn_calls() == [41, 42]
    assert _saved(tmp_path)["blocks"][0]["kind"] == "range.summary"
    changed = Counting()
    r = restore(session_of(42, changed={5: "changed"}), changed, tmp_path, _budget())
    assert changed.turn_calls() == list(range(5, 43))
    assert [t.turn_number for t in r.turns] == list(range(1, 43))
    assert max(raw_tokens(request_chars(q)) for q in changed.requests) <= BUDGET


def test_one_huge_turn_is_cut_to_fit(tmp_path: Path) -> None:
    provider = Counting()
    cfg = _budget()
    cfg.restore.max_tool_output_chars = 100_000  # the preprocessor would cut it first
    restore(session_of(2, filler=40_000), provider, tmp_path, cfg)
    turn = provider.requests[0]
    assert "characters of this turn omitted" in turn.messages[-1].content
    assert raw_tokens(request_chars(turn)) <= BUDGET


def test_debug_render_prints_each_request(tmp_path: Path) -> None:
    out = io.StringIO()
    restore(session_of(3), Counting(), tmp_path, debug_render=out)
    text = out.getvalue()
    assert text.count("── render turn_summary") == 3
    assert text.count("── render synthesis") == 1
    assert text.count("=>[1]") == 4
    assert text.count("=>[2]") == 4
    assert "[system] You restore coding-agent sessions" in text


def test_estimator_follows_reported_usage() -> None:
    est = TokenEstimator()
    assert est.tokens(350) == 100
    est.observe(350, 200)
    assert est.factor == pytest.approx(1.5)
    assert est.tokens(350) == 150
    est.observe(350, 0)  # nothing reported: no change
    assert est.factor == pytest.approx(1.5)
    for _ in range(20):
        est.observe(350, 10_000)
    assert est.factor == 4.0
    for _ in range(20):
        est.observe(350, 1)
    assert est.factor == 0.25


def test_cap_lines_and_fallback() -> None:
    text = "\n".join(f"line {i}" for i in range(100))
    capped = _cap_lines(text, 200)
    assert len(capped) <= 200
    assert capped.endswith("line 99")
    assert capped.startswith("(… ")
    assert _cap_lines("x" * 500, 100) == "x" * 100
    assert _cap_lines("short", 100) == "short"
    records = [
        {"turn_number": 1, "user_request_summary": "a " * 200, "agent_response_summary": "b"}
    ]
    lines = fallback_summary(records, [1, 2]).splitlines()
    assert len(lines[0]) == 240
    assert lines[0].endswith("…")
    assert lines[1] == "Turn 2: (not summarized)"
