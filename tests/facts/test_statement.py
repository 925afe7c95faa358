"""The rule that tells a statement from schema-valid garbage (``facts.statement``)."""

from __future__ import annotations

import pytest

from opencode_restore.facts.statement import is_statement


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "M19",
        "[M19]",
        "[M1, M3-M5]",
        "2",
        "1.2.3",
        "#12",
        "turn 3",
        "Turn 3:",
        "N/A",
        "...",
        "…",
        "none",
        "None.",
        "x",
        "C3",
        "goal",
        "Next step",
        "TBD [M4]",
    ],
)
def test_labels_numbers_placeholders_and_field_names_say_nothing(text: str) -> None:
    assert not is_statement(text)


@pytest.mark.parametrize(
    "text",
    [
        "None pending: the last request was answered [M4]",
        "Fix the failing test [M19]",
        "Edited `a.py` [M3]",
        "Turn 3: request [M5] → edited `cli.py`",
        "Push the branch",
        "修复错误",
    ],
)
def test_a_sentence_with_one_real_word_is_a_statement(text: str) -> None:
    assert is_statement(text)
