"""The turn stage holds a model's TURN SUMMARY to its turn: texts that state nothing give
way to the rules' turn line, and citations outside the turn are cut and counted."""

from __future__ import annotations

import json
from typing import Any

import anyio

from opencode_restore.config import load_config
from opencode_restore.evaluate.model_use import model_use
from opencode_restore.llm.offline import OfflineProvider
from opencode_restore.llm.scripted import ScriptedProvider
from opencode_restore.pipeline.restoration import REPLACED_WARNING, WHOLE_SUMMARY, Restoration
from opencode_restore.pipeline.run import RestoreOptions, restore_session
from opencode_restore.pipeline.schemas import TurnSummary
from opencode_restore.pipeline.stages.turn_summarizer import hold_to_turn
from tests.pipeline.helpers import two_turn_session

RULES: dict[str, Any] = {
    "user_request_summary": "Now run the tests. [M6]",
    "agent_response_summary": "Tests pass. [M9]",
    "key_outcomes": ["Ran `pytest -q` (exit 0) [M7]"],
}
TURN = {f"M{n}" for n in range(6, 10)}


def test_labels_and_blanks_give_way_to_the_rules_turn_line() -> None:
    model = TurnSummary.model_validate(
        {
            "turn_number": 2,
            "user_request_summary": "M19",
            "agent_response_summary": "",
            "key_outcomes": ["2", "[M7]"],
            "open_questions": ["N/A", "Should the README change? [M8]"],
            "decisions": [{"decision": "turn 3", "reason": ""}],
        }
    )
    out = hold_to_turn(model, RULES, TURN)
    assert out.user_request_summary == RULES["user_request_summary"]
    assert out.agent_response_summary == RULES["agent_response_summary"]
    assert out.key_outcomes == RULES["key_outcomes"]
    assert out.open_questions == ["Should the README change? [M8]"]
    assert out.decisions == []
    assert out.outside_citations == []
    assert out.stood_in == ["user_request_summary", "agent_response_summary", "key_outcomes"]


def test_citations_outside_the_turn_are_cut_and_listed() -> None:
    model = TurnSummary.model_validate(
        {
            "turn_number": 2,
            "user_request_summary": "Run the tests again [M1, M6]",
            "agent_response_summary": "They pass [M3-M7]",
            "key_outcomes": ["Ran pytest [M40]"],
            "resolved_questions": ["docs? [M5]"],
        }
    )
    out = hold_to_turn(model, RULES, TURN)
    assert out.user_request_summary == "Run the tests again [M6]"
    assert out.agent_response_summary == "They pass [M6, M7]"
    assert out.key_outcomes == ["Ran pytest"]
    # Earlier questions are quoted as listed, citations and all.
    assert out.resolved_questions == ["docs? [M5]"]
    assert out.outside_citations == ["M1", "M3", "M4", "M5", "M40"]
    # Written by the stage, never asked of a model.
    assert "outside_citations" not in json.dumps(TurnSummary.model_json_schema())


def _restore(provider: Any) -> Restoration:
    config = load_config(env={})
    config.llm.max_attempts = 1
    options = RestoreOptions(skip_evidence_search=True)
    return anyio.run(lambda: restore_session(two_turn_session(), config, provider, options=options))


def test_through_a_restore_the_rules_stand_in_and_the_cut_is_counted() -> None:
    offline = _restore(OfflineProvider())
    garbage = {"turn_number": 1, "user_request_summary": "[M1]", "agent_response_summary": "1"}
    elsewhere = {
        "turn_number": 2,
        "user_request_summary": "Run the tests [M1]",
        "agent_response_summary": "The tests ran [M7]",
    }
    r = _restore(ScriptedProvider([garbage, elsewhere], auto=True))
    assert r.failed_turns == []
    first, second = r.turns
    assert first.user_request_summary == offline.turns[0].user_request_summary
    assert first.agent_response_summary == offline.turns[0].agent_response_summary
    assert first.stood_in[:2] == ["user_request_summary", "agent_response_summary"]
    assert "stood_in" not in offline.model_dump_json()
    assert second.user_request_summary == "Run the tests"
    assert second.outside_citations == ["M1"]
    assert (r.citations.removed_outside_turn, r.citations.outside_turn_labels) == (1, ["M1"])
    # The offline provider's turn summaries are the rules' own: not held.
    assert offline.citations.removed_outside_turn == 0


def test_a_turn_whose_replies_never_fit_gets_the_rules_summary_whole() -> None:
    offline = _restore(OfflineProvider())
    # Turn 1: a reply and its repair that are no JSON at all (a tiny model's chatter).
    r = _restore(
        ScriptedProvider(["I think the user wants tests.", "Sure! Here it is."], auto=True)
    )
    assert r.failed_turns == []
    first, second = r.turns
    assert first.stood_in == [WHOLE_SUMMARY]
    assert first.user_request_summary == offline.turns[0].user_request_summary
    assert first.key_outcomes == offline.turns[0].key_outcomes
    assert WHOLE_SUMMARY not in second.stood_in
    assert f"{REPLACED_WARNING} 1" in r.warnings
    use = model_use(r)
    assert use.replaced_turns == [1]
    assert use.nothing == []  # turn 2 is the model's


def test_when_no_turn_is_the_models_eval_says_it_contributed_nothing() -> None:
    r = _restore(ScriptedProvider(["chatter"] * 4, auto=True))
    assert r.failed_turns == []
    assert [t.stood_in for t in r.turns] == [[WHOLE_SUMMARY]] * 2
    assert f"{REPLACED_WARNING}s 1, 2" in r.warnings
    assert model_use(r).nothing == ["no turn's summary is the model's (failed, or never in shape)"]
