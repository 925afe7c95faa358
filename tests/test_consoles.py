"""The commands' rich consoles print log and error text as it is."""

from __future__ import annotations

import pytest

from opencode_restore.consoles import console


def test_emoji_codes_in_text_stay_text(capsys: pytest.CaptureFixture[str]) -> None:
    # A model named openai:x printed "openai❌" in every error line.
    console(stderr=True).print(
        "turn 1/3 failed: openai:x: refused :smile:", markup=False, highlight=False
    )
    assert capsys.readouterr().err == "turn 1/3 failed: openai:x: refused :smile:\n"
