"""The synthesizer's merge: the rules' certain facts always, their candidates unless the
model rejects one by id (with a reason, recorded); tested on hand-made summaries and
through restores with the scripted provider."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from opencode_restore.config import load_config
from opencode_restore.llm.offline import OfflineProvider
from opencode_restore.llm.scripted import ScriptedProvider, ScriptedStatusError
from opencode_restore.llm.strict_schema import strict_json_schema, strict_schema_errors
from opencode_restore.model import Message
from opencode_restore.pipeline.restoration import Restoration
from opencode_restore.pipeline.run import RestoreOptions, restore_session
from opencode_restore.pipeline.schemas import SessionSummary, SummaryFields
from opencode_restore.pipeline.stages.synthesizer import (
    CANDIDATE_MAX_TOKENS,
    Candidate,
    candidate_chars,
    candidates,
    candidates_json,
    has_citation,
    merge_deterministic,
    offer,
)
from opencode_restore.report.summary import summary_markdown
from opencode_restore.timeline.numbering import cited_labels
from tests.pipeline.helpers import make_session

# -- hand-made summaries ----------------------------------------------------------------

FOUND: dict[str, Any] = {
    "goal": "Add a --shout flag [M1]",
    "constraints_preferences": [
        "Don't add any new dependencies. [M1]",
        "Rejecting Bash of `git push --force`, the user said: “open a PR instead” [M13]",
    ],
    "progress": {
        "done": [
            "Turn 1: Add a --shout flag [M1] → edited `greet.py` [M2]",
            "Turn 2: Commit it. [M11] → committed `1a2b3c4` “Add --shout” [M12]",
        ],
        "in_progress": [],
        "blocked": ["Turn 3 could not be summarized"],
    },
    "key_decisions": [{"decision": "Use argparse rather than click [M10]", "reason": "stdlib"}],
    "errors_fixes_ruled_out": ["`pytest` failed (exit 1) [M4]; fixed in [M8]"],
    "findings": ["The config loader ignores `XDG_CONFIG_HOME` [M9]"],
    "current_work": "Last commit `1a2b3c4` on `main` [M12]; not pushed in this session.",
    "next_step": "Answer the agent's question: Should I also update the README? [M10]",
    "open_questions": ["Should the README mention `--shout`? [M10]"],
    "compaction_notes": ["Turn 2: the context was compacted [M11]"],
}


def found(**changes: Any) -> SessionSummary:
    return SessionSummary.model_validate(FOUND | changes)


def minimal() -> SessionSummary:
    return SessionSummary(goal="Add a flag [M1]")


def texts(s: SessionSummary) -> list[str]:
    """Every item of the summary, one string each."""
    return [
        *s.constraints_preferences,
        *s.progress.done,
        *s.progress.in_progress,
        *s.progress.blocked,
        *[f"{d.decision} {d.reason}" for d in s.key_decisions],
        *s.errors_fixes_ruled_out,
        *s.findings,
        *s.open_questions,
        *s.compaction_notes,
        s.current_work,
        s.next_step,
    ]


def test_candidates_are_the_interpretive_items_in_section_order() -> None:
    got = candidates(found())
    assert [(c.id, c.section) for c in got] == [
        ("C1", "errors_fixes_ruled_out"),
        ("C2", "key_decisions"),
        ("C3", "open_questions"),
        ("C4", "findings"),
        ("C5", "constraints_preferences"),
        ("C6", "next_step"),
    ]
    assert got[1].text == "Use argparse rather than click [M10] Reason: stdlib"
    # The user's rejection of a tool call is certain: never a candidate.
    assert all("Rejecting" not in c.text for c in got)


def test_a_line_citing_a_rejection_is_certain_whatever_its_wording() -> None:
    f = found(constraints_preferences=["no force pushes, said the user [M13]"])
    assert "constraints_preferences" in [c.section for c in candidates(f)]
    assert "constraints_preferences" not in [c.section for c in candidates(f, {"M13"})]


def test_an_unfinished_last_request_is_certain_not_a_candidate() -> None:
    f = found(
        progress={"done": [], "in_progress": ["Turn 2 so far: nothing changed yet"]},
        next_step="Finish the user's last request (turn 2): Commit it. [M11]",
    )
    assert "next_step" not in [c.section for c in candidates(f)]
    out = merge_deterministic(minimal(), f, candidates(f))
    assert out.next_step == "Finish the user's last request (turn 2): Commit it. [M11]"
    assert out.progress.in_progress == ["Turn 2 so far: nothing changed yet"]


def test_a_minimal_answer_loses_nothing() -> None:
    f = found()
    out = merge_deterministic(minimal(), f, candidates(f))
    assert out.rejected_candidates == []
    assert out.ignored_rejections == []
    got = texts(out)
    for item in texts(f):
        assert item in got
    assert out.goal == "Add a flag [M1]"  # the model's own
    assert out.stood_in == ["current_work", "next_step"]


def test_a_rejected_candidate_is_left_out_and_its_reason_recorded() -> None:
    f = found()
    offered = candidates(f)
    model = SessionSummary.model_validate(
        {
            "goal": "Add a flag [M1]",
            "rejected_candidates": [{"id": "C2", "reason": "click was chosen later [M20]"}],
        }
    )
    out = merge_deterministic(model, f, offered)
    assert out.key_decisions == []
    [r] = out.rejected_candidates
    assert (r.id, r.reason, r.section) == ("C2", "click was chosen later [M20]", "key_decisions")
    assert r.text == "Use argparse rather than click [M10] Reason: stdlib"
    got = texts(out)
    for c in offered:
        if c.id != "C2":
            assert c.text in got
    # Certain facts stay, the user's rejection of a tool call among them.
    assert FOUND["constraints_preferences"][1] in out.constraints_preferences
    assert out.progress.done == FOUND["progress"]["done"]


def test_unknown_and_repeated_ids_are_ignored_and_noted() -> None:
    f = found()
    model = SessionSummary.model_validate(
        {
            "goal": "g [M1]",
            "rejected_candidates": [
                {"id": "c4", "reason": "echo of the log [M9]"},
                {"id": "C4", "reason": "again [M9]"},
                {"id": "C99", "reason": "no such candidate"},
                {"id": "Turn 2", "reason": "a done line cannot be rejected"},
            ],
        }
    )
    out = merge_deterministic(model, f, candidates(f))
    assert [(r.id, r.section) for r in out.rejected_candidates] == [("C4", "findings")]
    assert [r.id for r in out.ignored_rejections] == ["C4", "C99", "Turn 2"]
    assert out.findings == []
    assert out.progress.done == FOUND["progress"]["done"]


def test_a_rejection_must_cite_a_message_of_the_session() -> None:
    # A 135M model rejected "ruled out: hash() is salted per process" with a reason that
    # read like a sentence and cited nothing: the fact must stay.
    f = found()
    model = SessionSummary.model_validate(
        {
            "goal": "g [M1]",
            "rejected_candidates": [
                {"id": "C2", "reason": "This decision is not relevant to the session."},
                {"id": "C4", "reason": "The loader was fixed later [M404]."},
                {"id": "C3", "reason": "The README question was answered in [M12]."},
            ],
        }
    )
    issued = {"M1", "M9", "M10", "M12"}
    out = merge_deterministic(
        model, f, candidates(f), cites=lambda text: bool(set(cited_labels(text)) & issued)
    )
    assert [r.id for r in out.rejected_candidates] == ["C3"]
    assert [r.id for r in out.ignored_rejections] == ["C2", "C4"]
    assert [d.decision for d in out.key_decisions] == ["Use argparse rather than click [M10]"]
    assert out.findings == FOUND["findings"]
    assert out.open_questions == []
    # Without a resolver, any label counts (the default a hand-made merge uses).
    assert has_citation("superseded [M404]")
    assert not has_citation("superseded")


def test_a_long_reason_is_cut_to_one_line() -> None:
    f = found()
    model = SessionSummary.model_validate(
        {"goal": "g [M1]", "rejected_candidates": [{"id": "C1", "reason": "why [M4]\n" * 200}]}
    )
    [r] = merge_deterministic(model, f, candidates(f)).rejected_candidates
    assert "\n" not in r.reason
    assert len(r.reason) <= 300


def test_a_candidate_not_offered_cannot_be_rejected() -> None:
    f = found()
    everything = candidates(f)
    offered = offer(everything, len(candidates_json(everything[:1])) + 10)
    assert [c.id for c in offered] == ["C1"]
    model = SessionSummary.model_validate(
        {"goal": "g [M1]", "rejected_candidates": [{"id": "C2", "reason": "r [M10]"}]}
    )
    out = merge_deterministic(model, f, offered)
    assert [r.id for r in out.ignored_rejections] == ["C2"]
    assert [d.decision for d in out.key_decisions] == ["Use argparse rather than click [M10]"]


def test_the_offered_list_is_capped_by_the_budget() -> None:
    assert candidate_chars(100_000) == int(CANDIDATE_MAX_TOKENS * 3.5)
    assert candidate_chars(10_000) == 3500
    long = [Candidate(f"C{n}", "findings", "x" * 2000) for n in range(1, 40)]
    offered = offer(long, candidate_chars(100_000))
    assert 0 < len(offered) < len(long)
    assert len(candidates_json(offered)) <= candidate_chars(100_000)
    assert all(len(c.prompt()["text"]) < 500 for c in offered)


def test_certain_facts_come_back_when_the_model_contradicts_them() -> None:
    f = found()
    model = SessionSummary.model_validate(
        {
            "goal": "g [M1]",
            "progress": {"done": ["Added the flag [M2]"], "in_progress": [], "blocked": []},
            "current_work": "Nothing was committed [M3].",
            "compaction_notes": [],
        }
    )
    out = merge_deterministic(model, f, candidates(f))
    assert out.progress.done == ["Added the flag [M2]", *FOUND["progress"]["done"]]
    assert out.current_work == f"Nothing was committed [M3]. {FOUND['current_work']}"
    assert out.compaction_notes == FOUND["compaction_notes"]
    assert out.progress.blocked == FOUND["progress"]["blocked"]


def test_what_the_model_already_says_is_not_repeated() -> None:
    f = found()
    model = SessionSummary.model_validate(
        {
            "goal": "g [M1]",
            "current_work": "Committed `1a2b3c4` on `main`, not pushed [M12].",
            "findings": ["`XDG_CONFIG_HOME` is ignored by the loader [M9]"],
            "key_decisions": [{"decision": "Use argparse rather than click", "reason": "x"}],
        }
    )
    out = merge_deterministic(model, f, candidates(f))
    assert out.current_work == "Committed `1a2b3c4` on `main`, not pushed [M12]."
    assert out.findings == ["`XDG_CONFIG_HOME` is ignored by the loader [M9]"]
    assert len(out.key_decisions) == 1


def test_nothing_pending_only_fills_an_empty_next_step() -> None:
    f = found(next_step="None pending: the last request was answered [M14].")
    out = merge_deterministic(minimal(), f, candidates(f))
    assert out.next_step == "None pending: the last request was answered [M14]."
    model = SessionSummary(goal="g [M1]", next_step="Push `main` [M12].")
    assert merge_deterministic(model, f, candidates(f)).next_step == "Push `main` [M12]."
    # A real step the model did not state is added after its own.
    g = found()
    out = merge_deterministic(model, g, candidates(g))
    assert out.next_step == f"Push `main` [M12]. {FOUND['next_step']}"


def test_texts_that_state_nothing_give_way_to_the_rules() -> None:
    f = found()
    offered = candidates(f)
    garbage = SessionSummary.model_validate(
        {
            "goal": "M19",
            "current_work": "N/A",
            "next_step": "",
            "progress": {"done": ["2", "[M3]"], "in_progress": ["..."], "blocked": ["none"]},
            "key_decisions": [{"decision": "turn 3", "reason": "x"}],
            "findings": ["[M9]"],
            "rejected_candidates": [{"id": "C1", "reason": "C1"}],
        }
    )
    out = merge_deterministic(garbage, f, offered)
    assert out.stood_in == ["goal", "current_work", "next_step"]
    assert out.goal == f.goal
    assert out.current_work == f.current_work
    assert out.next_step == f.next_step
    assert out.progress.done == f.progress.done
    assert out.progress.in_progress == []
    assert out.progress.blocked == f.progress.blocked
    assert out.key_decisions == f.key_decisions
    assert out.findings == f.findings
    # A rejection with no reason is none: the candidate stays, the rejection is noted.
    assert out.errors_fixes_ruled_out == f.errors_fixes_ruled_out
    assert out.rejected_candidates == []
    assert [i.id for i in out.ignored_rejections] == ["C1"]


def test_the_model_schema_has_the_field_the_rules_schema_is_unchanged() -> None:
    answer = strict_json_schema(SessionSummary)
    assert "rejected_candidates" in answer["required"]
    assert "ignored_rejections" not in answer["properties"]
    assert answer["$defs"]["RejectedCandidate"]["required"] == ["id", "reason"]
    assert strict_schema_errors(answer, "SessionSummary") == []
    # What the offline rules are asked for: the same schema without the field.
    rules = strict_json_schema(SummaryFields)
    assert rules["title"] == "SessionSummary"
    assert "RejectedCandidate" not in json.dumps(rules)
    assert {k: v for k, v in answer["properties"].items() if k != "rejected_candidates"} == (
        rules["properties"]
    )
    # Empty, the records are left out of the JSON (the offline output is unchanged).
    assert "rejected_candidates" not in minimal().model_dump_json()
    assert "ignored_rejections" not in minimal().model_dump()


# -- through a restore, with the scripted provider -------------------------------------


def _tool(i: int, name: str, args: dict[str, Any], out: str, **meta: Any) -> list[Message]:
    return [
        Message(
            f"a{i}",
            "assistant",
            "tool_use",
            "",
            tool_name=name,
            tool_call_id=f"c{i}",
            tool_input=args,
            entry_index=10 * i,
        ),
        Message(
            f"r{i}",
            "tool",
            "tool_result",
            out,
            tool_call_id=f"c{i}",
            is_error=bool(meta.get("exit_code")),
            entry_index=10 * i + 1,
            meta=meta,
        ),
    ]


def session() -> Any:
    """Two turns: a failing test run fixed, a decision, a constraint, a question, a
    commit, and a force push the user rejected."""
    msgs = [
        Message(
            "u1",
            "user",
            "text",
            "Add a --shout flag to greet.py. Don't add any new dependencies.",
            entry_index=1,
        ),
        *_tool(1, "Edit", {"file_path": "/w/greet.py"}, "ok"),
        *_tool(
            2,
            "Bash",
            {"command": "pytest -q"},
            "FAILED test_greet.py::test_shout - AssertionError: expected HELLO\n1 failed",
            exit_code=1,
        ),
        *_tool(3, "Edit", {"file_path": "/w/greet.py"}, "ok"),
        *_tool(4, "Bash", {"command": "pytest -q"}, "2 passed", exit_code=0),
        Message(
            "t1",
            "assistant",
            "text",
            "I used argparse rather than click because the user wants no new "
            "dependencies. Should I also update the README?",
            entry_index=50,
        ),
        Message("u2", "user", "text", "Commit it and push.", entry_index=51),
        *_tool(
            6, "Bash", {"command": "git commit -am 'Add --shout'"}, "[main 1a2b3c4] Add --shout"
        ),
        *_tool(
            7,
            "Bash",
            {"command": "git push --force"},
            "The user doesn't want to proceed with this tool use.",
            rejected=True,
            user_said="no force pushes, open a PR instead",
        ),
        Message("t2", "assistant", "text", "Committed as 1a2b3c4; not pushed.", entry_index=80),
    ]
    return make_session(msgs, cwd="/w", title="greet")


def turn(n: int) -> dict[str, Any]:
    return {
        "turn_number": n,
        "user_request_summary": f"request {n} [M1]",
        "agent_response_summary": f"response {n}",
    }


def restore(provider: Any) -> Restoration:
    config = load_config(env={})
    config.llm.max_attempts = 2
    options = RestoreOptions(skip_evidence_search=True)
    return anyio.run(lambda: restore_session(session(), config, provider, options=options))


def offered_in(provider: ScriptedProvider) -> list[dict[str, str]]:
    """The candidate list the synthesis request carried."""
    [request] = [q for q in provider.requests if q.stage == "synthesis"]
    task = request.messages[-1].content
    head = "Candidate facts found by rules over the log"
    start = task.index("\n", task.index(head)) + 1
    listed: list[dict[str, str]] = json.loads(task[start : task.index("\n\n", start)])
    return listed


@pytest.fixture(scope="module")
def offline() -> Restoration:
    return restore(OfflineProvider())


def test_the_session_has_candidates_and_certain_facts(offline: Restoration) -> None:
    s = offline.summary
    assert s.errors_fixes_ruled_out
    assert s.key_decisions
    assert s.constraints_preferences
    assert any("1a2b3c4" in d for d in s.progress.done)
    assert any("git push --force" in c for c in s.constraints_preferences)
    assert "rejected_candidates" not in offline.model_dump_json()


def test_a_minimal_model_answer_keeps_every_fact_the_rules_found(offline: Restoration) -> None:
    provider = ScriptedProvider([turn(1), turn(2)], auto=True)
    r = restore(provider)
    listed = offered_in(provider)
    sections = {c["section"] for c in listed}
    assert {"errors_fixes_ruled_out", "key_decisions", "constraints_preferences"} <= sections
    # Certain facts are never offered: the turn lines, the end state, the rejection.
    assert not any("git push --force" in c["text"] for c in listed)
    assert not any(c["text"].startswith("Turn 2:") for c in listed)
    got = texts(r.summary)
    for item in texts(offline.summary):
        assert item in got, item
    assert r.summary.rejected_candidates == []


def test_the_model_rejects_one_candidate_with_a_reason(offline: Restoration) -> None:
    probe = ScriptedProvider([turn(1), turn(2)], auto=True)
    restore(probe)
    listed = offered_in(probe)
    decision = next(c for c in listed if c["section"] == "key_decisions")
    answer = {
        "goal": "Add a --shout flag [M1]",
        "rejected_candidates": [
            {"id": decision["id"], "reason": "not a decision: the user only said to commit [M11]"},
            {"id": "C999", "reason": "no such candidate"},
        ],
    }
    provider = ScriptedProvider([turn(1), turn(2), answer])
    r = restore(provider)
    assert offered_in(provider) == listed  # the same rules, the same ids
    assert r.summary.key_decisions == []
    [rejected] = r.summary.rejected_candidates
    assert rejected.id == decision["id"]
    assert rejected.reason == "not a decision: the user only said to commit [M11]"
    assert rejected.section == "key_decisions"
    assert [i.id for i in r.summary.ignored_rejections] == ["C999"]
    [left_out] = offline.summary.key_decisions
    got = texts(r.summary)
    for item in texts(offline.summary):
        if not item.startswith(left_out.decision):
            assert item in got, item
    # Recorded in the JSON, not in the markdown.
    data = json.loads(r.model_dump_json())
    assert data["summary"]["rejected_candidates"][0]["reason"].startswith("not a decision")
    md = summary_markdown(r)
    assert "not a decision" not in md
    assert "C999" not in md


def test_done_lines_the_model_left_out_come_back(offline: Restoration) -> None:
    answer = {
        "goal": "Add a --shout flag [M1]",
        "progress": {"done": [], "in_progress": [], "blocked": []},
        "current_work": "",
        "constraints_preferences": [],
    }
    r = restore(ScriptedProvider([turn(1), turn(2), answer]))
    assert r.summary.progress.done == offline.summary.progress.done
    assert r.summary.current_work == offline.summary.current_work
    rejection = next(c for c in offline.summary.constraints_preferences if "push" in c)
    assert rejection in r.summary.constraints_preferences


def test_a_failed_synthesis_still_falls_back_to_the_rules(offline: Restoration) -> None:
    provider = ScriptedProvider(
        [turn(1), turn(2), ScriptedStatusError(500), ScriptedStatusError(500)]
    )
    r = restore(provider)
    assert any("fell back" in w for w in r.warnings)
    assert r.summary == offline.summary


def test_a_model_writing_labels_gets_the_rules_goal_and_next_step(offline: Restoration) -> None:
    answer = {"goal": "M19", "next_step": "", "current_work": "[M2]"}
    r = restore(ScriptedProvider([turn(1), turn(2), answer]))
    assert not any("fell back" in w for w in r.warnings)
    assert r.summary.goal == offline.summary.goal
    assert r.summary.next_step == offline.summary.next_step
    assert r.summary.current_work == offline.summary.current_work
