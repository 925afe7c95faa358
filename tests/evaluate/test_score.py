"""Scoring a restoration against facts: matching, citations, contradictions, the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from opencode_restore.cli import cli
from opencode_restore.errors import UsageError
from opencode_restore.evaluate.facts_file import Evidence, Fact, FactsFile, Recording, load_facts
from opencode_restore.evaluate.score import score_restoration, string_pattern
from opencode_restore.model import Message, Turn
from opencode_restore.pipeline.restoration import ReferenceRow, Restoration, SessionInfo
from opencode_restore.pipeline.schemas import Progress, SessionSummary


def test_strings_match_whole_words_only_case_insensitively() -> None:
    assert string_pattern("store.py").search("Edited `shrinkray/Store.py` [M3]")
    assert not string_pattern("store.py").search("pickle_store.py")
    assert not string_pattern("rowid").search("lastrowid")
    assert string_pattern("hash()").search("python's hash() is salted")


def _restoration(**summary: object) -> Restoration:
    refs = [
        ReferenceRow(label="M1", message_id="u1", file="log", file_index=0, entry_index=3),
        ReferenceRow(label="M2", message_id="a7.1", file="log", file_index=0, entry_index=9),
        ReferenceRow(label="M3", message_id="u2", file="log", file_index=0, entry_index=12),
    ]
    return Restoration(
        session=SessionInfo(id="s", agent="pi", files=["log"]),
        provider="offline:rules",
        summary=SessionSummary.model_validate({"goal": "g [M1]", **summary}),
        references=refs,
        turn_count=2,
    )


def _facts(*facts: Fact) -> FactsFile:
    return FactsFile(recordings={"r": Recording(log="log")}, facts=list(facts))


def _fact(id_: str, strings: list[str], ids: list[str], lines: list[int] | None = None) -> Fact:
    ev = Evidence(message_ids=ids, lines=lines or [])
    return Fact(id=id_, kind="constraint", turn=1, strings=strings, evidence={"r": ev})


def _turns(answered_last: bool) -> list[Turn]:
    t1 = Turn(1, "a", [Message("u1", "user", "text", "a"), Message("x", "assistant", "text", "ok")])
    t2 = Turn(2, "b", [Message("u2", "user", "text", "b")], interrupted=not answered_last)
    return [t1, t2]


def test_kept_cited_and_split_entry_ids() -> None:
    r = _restoration(
        constraints_preferences=["Never log a full URL (PRIV-88) [M2]", "codes are base62"],
        progress={"done": ["ran tests [M1]"]},
    )
    facts = _facts(
        _fact("url", ["PRIV-88"], ["a7"]),  # cited by a split message of entry a7
        _fact("b62", ["base62"], ["u1"]),  # kept but its line cites nothing
        _fact("gone", ["AUTOINCREMENT"], ["u1"]),
        _fact("byline", ["ran tests"], ["zz"], lines=[3]),  # resolved by the line number
    )
    s = score_restoration(r, facts, "r", _turns(False))
    got = {f.id: (f.kept, f.cited) for f in s.facts}
    assert got == {
        "url": (True, True),
        "b62": (True, False),
        "gone": (False, False),
        "byline": (True, True),
    }
    assert s.contradictions == []
    assert s.resolved == 1.0
    assert s.tokens > 0


def test_a_pending_item_that_the_log_shows_done_is_a_contradiction() -> None:
    r = _restoration(
        progress=Progress(done=["ship it [M3]"], in_progress=["ship it [M3]"]),
        next_step="do the user's last request [M3]",
    )
    s = score_restoration(r, _facts(), "r", _turns(answered_last=True))
    assert len(s.contradictions) == 3  # done and pending; twice pending though answered
    unfinished = score_restoration(
        _restoration(next_step="finish [M3]"), _facts(), "r", _turns(answered_last=False)
    )
    assert unfinished.contradictions == []


def test_a_bad_facts_file_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "facts.json"
    bad.write_text('{"recordings": {}, "facts": [{"id": "x"}]}')
    result = CliRunner().invoke(cli, ["eval", str(bad)])
    assert result.exit_code == 2
    assert "facts.json: not a facts file: facts.0.kind" in result.stderr
    bad.write_text("{")
    with pytest.raises(UsageError, match="not a JSON facts file"):
        load_facts(bad)


def test_eval_of_a_devset_recording(fixtures: Path) -> None:
    facts = str(fixtures / "devset/facts.json")
    result = CliRunner().invoke(cli, ["eval", facts, "-r", "pi", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    (rec,) = json.loads(result.stdout)["recordings"]
    assert rec["recording"] == "pi"
    assert len(rec["facts"]) == 15
    assert rec["resolved"] == 1.0
    assert rec["contradictions"] == []
    table = CliRunner().invoke(cli, ["eval", facts, "-r", "pi", "--min-kept", "0"])
    assert table.exit_code == 0
    assert table.stdout.startswith("recording")
    unknown = CliRunner().invoke(cli, ["eval", facts, "-r", "nope"])
    assert unknown.exit_code == 2
    assert "no recording 'nope'" in unknown.stderr


def test_eval_exits_1_under_the_minimum(fixtures: Path, tmp_path: Path) -> None:
    data = json.loads((fixtures / "devset/facts.json").read_text())
    log = data["recordings"]["pi"]["log"]
    (tmp_path / log).parent.mkdir(parents=True)
    (tmp_path / log).write_bytes((fixtures / "devset" / log).read_bytes())
    never = {"id": "never", "kind": "identifier", "turn": 1, "strings": ["QX-0000-never"]}
    data["facts"] = [never]
    (tmp_path / "facts.json").write_text(json.dumps(data))
    args = ["eval", str(tmp_path / "facts.json"), "-r", "pi"]
    assert CliRunner().invoke(cli, [*args, "--min-kept", "1"]).exit_code == 1
    assert CliRunner().invoke(cli, [*args, "--min-cited", "1"]).exit_code == 1
    assert CliRunner().invoke(cli, args).exit_code == 0


def test_probes_ask_the_judge_one_question_per_fact() -> None:
    import anyio

    from opencode_restore.evaluate.probes import run_probes
    from opencode_restore.llm.scripted import ScriptedProvider

    judge = ScriptedProvider(
        [
            {"answer": "PRIV-88: no full URL in logs", "states_fact": True},
            {"answer": "not in the summary", "states_fact": False},
        ]
    )
    facts = [_fact("url", ["PRIV-88"], ["u1"]), _fact("b62", ["base62"], ["u1"])]
    results = anyio.run(run_probes, judge, "- Never log a full URL (PRIV-88) [M1]", facts)
    assert [(r.fact_id, r.category, r.passed) for r in results] == [
        ("url", "recall", True),
        ("b62", "recall", False),
    ]
    # The summary travels as quoted data, and the expected fact with it.
    assert "PRIV-88" in judge.requests[0].messages[0].content
    assert judge.requests[0].stage == "probe"


def test_a_minimal_model_answer_keeps_every_fact_the_rules_find(fixtures: Path) -> None:
    """The deterministic merge: whatever the model leaves out, the log's facts stay."""
    import anyio

    from opencode_restore.config import load_config
    from opencode_restore.diagnostics import WarningSink
    from opencode_restore.llm.offline import OfflineProvider
    from opencode_restore.llm.scripted import ScriptedProvider
    from opencode_restore.pipeline.run import RestoreOptions, restore_session
    from opencode_restore.pipeline.stages.turn_parser import parse_turns
    from opencode_restore.sources import open_session

    class Minimal(ScriptedProvider):
        reads_facts = False  # a network model: it gets no parsed facts object

    facts = load_facts(fixtures / "devset/facts.json")
    log = facts.log_path("pi")
    session = open_session([log], WarningSink())
    options = RestoreOptions(skip_evidence_search=True)

    def restored(provider: Any) -> Restoration:
        config = load_config(env={})
        return anyio.run(lambda: restore_session(session, config, provider, options=options))

    minimal = restored(Minimal(auto=True))
    assert minimal.provider.startswith("scripted")
    offline = restored(OfflineProvider())
    turns = parse_turns(session)
    got = score_restoration(minimal, facts, "pi", turns, log)
    want = score_restoration(offline, facts, "pi", turns, log)
    assert [f.id for f in got.facts if f.kept] == [f.id for f in want.facts if f.kept]
    assert got.contradictions == []
