"""Facts of a turn: what it asked, changed and ran, its errors, what its compactions kept."""

from __future__ import annotations

from opencode_restore.facts import turn as facts
from opencode_restore.facts.turn import turn_facts
from opencode_restore.model import Message, Turn
from tests.facts.test_errors import TRACEBACK, result


def test_turn_facts() -> None:
    messages = [
        Message("u1", "user", "text", "please fix\nValueError: in the user's words"),
        Message("a1", "assistant", "text", "  "),
        Message("a2", "assistant", "text", "On it " + "z" * 700),
        result(TRACEBACK, mid="r1"),
    ]
    turn = Turn(1, "please fix", messages)
    got = turn_facts(turn, {"u1": "M1", "a2": "M2", "r1": "M3"})
    assert got["user_request"] == "please fix"
    assert got["user_labels"] == ["M1"]
    assert got["errors"] == [{"label": "M3", "text": "KeyError: 'name'"}]  # not the user's text
    [text] = got["assistant_texts"]
    assert text["label"] == "M2"
    assert len(text["text"]) == 600
    assert text["text"].endswith("…")
    assert got["last_assistant"] == text


def _turn(*messages: Message) -> Turn:
    from opencode_restore.pipeline.stages.turn_parser import build_turn, parse_turns

    del build_turn
    (turn,) = parse_turns(list(messages))
    return turn


def test_source_read_from_a_file_is_not_an_error_and_a_failing_run_is() -> None:
    source = "def parse(s):\n    try:\n        return int(s)\n    except ValueError:\n        raise"
    turn = _turn(
        Message("u", "user", "text", "fix parse"),
        Message("c1", "assistant", "tool_use", "", tool_name="Read", tool_call_id="t1",
                tool_input={"file_path": "p.py"}),
        Message("r1", "tool", "tool_result", source, tool_call_id="t1"),
        Message("c2", "assistant", "tool_use", "", tool_name="Bash", tool_call_id="t2",
                tool_input={"command": "sed -n 1,40p p.py"}),
        Message("r2", "tool", "tool_result", "    except ValueError:", tool_call_id="t2"),
        Message("c3", "assistant", "tool_use", "", tool_name="Bash", tool_call_id="t3",
                tool_input={"command": "python -m unittest -q"}),
        Message("r3", "tool", "tool_result", f"E\n{TRACEBACK}\nFAILED (errors=1)",
                tool_call_id="t3", is_error=True),
        Message("a", "assistant", "text", "The test fails."),
    )  # fmt: skip
    f = turn_facts(turn, {"c3": "M7"})
    assert f["errors"] == []  # nothing from the read nor from `sed -n`
    assert f["failed_commands"] == [
        {"command": "python -m unittest -q", "label": "M7", "exit_code": None,
         "error": "KeyError: 'name'"}
    ]  # fmt: skip
    assert f["passed_commands"] == []  # `sed -n` only looked


def test_what_a_compaction_kept_is_shown_without_the_agents_preamble() -> None:
    summary = (
        "This session is being continued from a previous conversation that ran out of context. "
        "The summary below covers the earlier portion of the conversation.\n\nSummary:\n## Goal\n"
        "Maintain shrinkray.\n\nIf you need specific details from before compaction, read the "
        "transcript. Continue the conversation from where it left off."
    )
    assert facts.compaction_text(summary) == "Goal Maintain shrinkray."


def test_a_turn_s_tool_calls_scores_refusals_and_the_call_left_waiting() -> None:
    from opencode_restore.model import CommandRun

    messages = [
        Message("u1", "user", "text", "Use the browser to find the page."),
        Message("t1", "assistant", "tool_use", "", tool_name="web_browser_go", tool_call_id="a"),
        Message("r1", "tool", "tool_result", "[132] link", tool_call_id="a"),
        Message("t2", "assistant", "tool_use", "", tool_name="TodoWrite", tool_call_id="b"),
        Message(
            "t3",
            "assistant",
            "tool_use",
            "",
            tool_name="Bash",
            tool_call_id="c",
            tool_input={"command": "entire login"},
        ),
        Message(
            "r3",
            "tool",
            "tool_result",
            'exec_command failed: Rejected(\\"x\\\\nReason: '
            'Automatic approval review failed: {\\\\\\"message\\\\\\": \\\\\\"Not '
            'supported.\\\\\\"}\\")',
            tool_call_id="c",
            is_error=True,
            meta={"denied": "policy"},
        ),
        Message(
            "s1",
            "system",
            "text",
            "score (includes): C",
            meta={"synthetic": True, "score": {"scorer": "includes", "value": "C"}},
        ),
        Message(
            "t4",
            "assistant",
            "tool_use",
            "",
            tool_name="Bash",
            tool_call_id="d",
            tool_input={"command": "git commit -m wip"},
        ),
    ]
    turn = Turn(
        1,
        messages[0].text,
        messages,
        commands=[
            CommandRun("entire login", "t3", rejected=True),
            CommandRun("git commit -m wip", "t4"),
        ],
        interrupted=True,
    )
    labels = {m.id: f"M{i}" for i, m in enumerate(messages, start=1)}
    f = turn_facts(turn, labels)
    assert f["tool_calls"] == {"web_browser_go": 1}  # notes and commands are not actions
    assert f["scores"] == [{"scorer": "includes", "value": "C", "label": "M7"}]
    [refused] = f["refused_commands"]
    assert refused["by"] == "policy"
    assert refused["reason"] == "Automatic approval review failed: Not supported."
    assert f["failed_commands"] == []  # a refused command never ran
    assert f["unanswered_call"] == {"tool": "Bash", "target": "git commit -m wip", "label": "M8"}


def test_an_edit_retried_with_success_is_no_failed_attempt() -> None:
    from opencode_restore.model import ArtifactAction

    messages = [
        Message("u1", "user", "text", "fix it"),
        Message("e1", "assistant", "tool_use", "", tool_name="Edit", tool_call_id="a"),
        Message("e2", "assistant", "tool_use", "", tool_name="Edit", tool_call_id="b"),
        Message("e3", "assistant", "tool_use", "", tool_name="Edit", tool_call_id="c"),
    ]
    turn = Turn(
        1,
        "fix it",
        messages,
        artifacts=[ArtifactAction("a.ts", "edited", "e2")],
        failed_artifacts=[
            ArtifactAction("a.ts", "edited", "e1"),
            ArtifactAction("b.ts", "edited", "e3"),
        ],
    )
    f = turn_facts(turn, {"e1": "M2", "e2": "M3", "e3": "M4"})
    assert f["failed_artifacts"] == [{"path": "b.ts", "action": "edited", "label": "M4"}]
