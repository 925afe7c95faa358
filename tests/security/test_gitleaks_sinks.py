"""The independent gitleaks corpus, planted in ten placements and measured in every sink (issue 31).

One Claude Code session carries all 221 kinds (one sample per gitleaks rule, generated from
the rule's regex by tests/security/gitleaks_corpus.py) in ten placements, and 30
look-alikes the same ways; the real product paths then restore, serve and log it
(tests/security/sinks.py, ``collect_every_sink``). Per sink:

* the target: at least 97 % of the kinds redacted. It was an expected failure (xfail)
  while the redactor knew too few rule families; every sink has met it since the
  redactor runs every gitleaks rule, so it is a plain assertion now;
* the floor: no sink redacts fewer kinds than it did when this test was written (the
  target leaves room for 6 kinds to leak; the floor says which sinks leaked none);
* the look-alikes: every one the sink carries comes out intact.

bench/redaction.py prints the same table, with the kinds each sink holds when redaction is
off.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .corpus import Case
from .gitleaks_corpus import (
    build,
    fixture_config,
    load_samples,
    look_alikes,
    problem,
    provenance,
)
from .sinks import EVERY_SINK, collect_every_sink, holding, look_alike_cases

SAMPLES = load_samples()
CASES = [Case(s.rule, s.text, s.secret) for s in SAMPLES]
LOOK_ALIKES = look_alike_cases(look_alikes())
TARGET = 0.97

#: Kinds redacted (of 221) per sink as measured on the committed tree e93cec0 (the
#: redactor running every gitleaks rule): the hard floor no change may fall below. The
#: history, for the record: at 60f4223, before the gitleaks rules, provider, HTML, API
#: /messages and MCP get_messages redacted 4/221, JSON and its kin 70/221, hook.log 72/221;
#: at 3e92020 (the rules, keyword-gated) 157, 157, 55 and 156, the rest 220-221.
FLOOR = {
    "provider": 216,
    "markdown": 221,
    "json": 221,
    "html": 216,
    "prompt": 221,
    "stderr": 221,
    "journal": 221,
    "store": 221,
    "batch": 221,
    "api /messages": 216,
    "api /summary": 221,
    "mcp get_messages": 215,
    "mcp restore_session": 221,
    "hook.log": 221,
}
#: Look-alikes each sink carries with redaction off (bench/redaction.py measures it): the
#: summaries in markdown and prompt form quote no look-alike whole, stderr none at all.
CARRIED = dict.fromkeys(EVERY_SINK, 30) | {"markdown": 0, "prompt": 0, "stderr": 0}


def test_the_corpus_has_one_sample_per_gitleaks_rule() -> None:
    assert len(SAMPLES) == 221
    assert len({s.rule for s in SAMPLES}) == len(SAMPLES)
    assert len(provenance()["commit"]) == 40
    assert len(LOOK_ALIKES) == 30
    assert len({c.text for c in LOOK_ALIKES}) == 30


def test_gitleaks_would_report_every_sample() -> None:
    # Regex (translated from RE2), keyword, entropy and allowlists, as gitleaks checks
    # them: the sample is one gitleaks finds, not one our generator merely produced.
    config = fixture_config()
    problems = {
        r["id"]: why
        for r, s in zip(config["rules"], SAMPLES, strict=True)
        if (why := problem(config, r, s.text)) is not None
    }
    assert not problems, problems
    # Each measured secret stands out: no two kinds share one, and none occurs in another
    # sample's text by chance.
    for s in SAMPLES:
        assert sum(s.secret in t.text for t in SAMPLES) == 1, s.rule


def test_the_generator_rebuilds_the_fixture_from_its_rules() -> None:
    # Seeded per rule: the committed samples are what the generator writes, on any machine.
    assert build(fixture_config()) == SAMPLES


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, int]]:
    """Per sink: (kinds redacted, look-alikes intact), from one run of every sink."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        sinks = collect_every_sink(
            tmp_path_factory.mktemp("gitleaks"), CASES, monkeypatch, look_alikes=LOOK_ALIKES
        )
    assert set(sinks) == set(EVERY_SINK)
    leaked = holding(sinks, CASES)
    intact = holding(sinks, LOOK_ALIKES)
    return {s: (len(CASES) - len(leaked[s]), len(intact[s])) for s in EVERY_SINK}


def _table(measured: dict[str, tuple[int, int]]) -> str:
    return "; ".join(f"{s} {k}/{len(CASES)}" for s, (k, _) in measured.items())


@pytest.mark.slow
def test_no_sink_redacts_fewer_kinds_than_its_floor(measured: dict[str, tuple[int, int]]) -> None:
    under = {s: k for s, (k, _) in measured.items() if k < FLOOR[s]}
    assert not under, f"below the floor: {under} ({_table(measured)})"


@pytest.mark.slow
def test_look_alikes_come_out_intact_in_every_sink_that_carries_them(
    measured: dict[str, tuple[int, int]],
) -> None:
    damaged = {s: n for s, (_, n) in measured.items() if n < CARRIED[s]}
    assert not damaged, damaged


@pytest.mark.slow
@pytest.mark.parametrize("sink", EVERY_SINK)
def test_sink_redacts_97_percent_of_the_kinds(
    sink: str, measured: dict[str, tuple[int, int]]
) -> None:
    redacted = measured[sink][0]
    assert redacted >= TARGET * len(CASES), f"{sink}: {redacted}/{len(CASES)}"


def test_the_placements_hold_every_case(tmp_path: Path) -> None:
    # The planted session itself: every kind in each of the nine log placements.
    import json

    from .sinks import PLACEMENTS, field_name, plant_placements, read_file_name

    log = plant_placements(tmp_path / "s.jsonl", tmp_path / "ws", CASES[:3], LOOK_ALIKES[:1])
    text = log.read_text()
    lines = text.splitlines()
    bad = [line for line in lines if not _parses(line)]
    assert len(bad) == 2  # one malformed line per group
    assert len(PLACEMENTS) == 10
    for case in CASES[:3]:
        encoded = json.dumps(case.text)[1:-1]
        assert text.count(encoded) >= 7, case.kind  # user, thinking, Write, 2 Bash, output, summary
        assert f'"{field_name(case.kind)}": {json.dumps(case.secret)}' in text
        assert case.text in (tmp_path / "ws" / read_file_name(0)).read_text()


def _parses(line: str) -> bool:
    import json

    try:
        json.loads(line)
    except ValueError:
        return False
    return True
