"""Template JSON values capped inside `capped_json` (a small context window), whole outside."""

from __future__ import annotations

from opencode_restore.pipeline.prompting.prompts import capped_json, render

SESSION = {"agent": "claude-code", "id": "s1", "title": None, "cwd": None}


def turn_prompt(state: str) -> str:
    """The turn's shared part (state and facts) of a turn prompt with ``state``."""
    prompt = render(
        "turn_summary",
        None,
        session=SESSION,
        state_json=state,
        facts_json="{}",
        turn_number=1,
        transcript="[M1] USER:\nhello",
        segment=None,
        running_json="",
    )
    return prompt.turn


def test_json_values_are_cut_in_the_middle_only_while_capped() -> None:
    state = '{"files": [' + ", ".join(f'"f{i}.py"' for i in range(500)) + "]}"
    assert state in turn_prompt(state)
    with capped_json(1000):
        task = turn_prompt(state)
    assert state not in task
    assert state[:400] in task
    assert state[-400:] in task
    assert f"[… {len(state) - 1000} characters of the state JSON omitted …]" in task
    assert state in turn_prompt(state)  # the cap ends with the block
