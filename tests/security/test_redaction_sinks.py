"""Every sink holds at most 3 % of the planted secret kinds (issue 14, item 2).

bench/redaction.py prints the same figures per sink, with the exposure when
redaction is off for comparison.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .corpus import secret_cases
from .sinks import SINKS, collect, leaks, plant_log


@pytest.mark.slow
def test_the_planted_corpus_is_redacted_in_every_sink(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = secret_cases()
    log = plant_log(tmp_path / "session.jsonl", cases)
    sinks = collect(tmp_path, log, cases, monkeypatch)
    assert set(sinks) == set(SINKS)
    assert all(sinks.values()), [name for name, text in sinks.items() if not text]
    found = leaks(sinks, cases)
    over = {name: kinds for name, kinds in found.items() if len(kinds) > 0.03 * len(cases)}
    assert not over, over
