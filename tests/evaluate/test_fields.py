"""Scoring on the summary's fields (the real devset's facts files): kept, cited, must_not.

The real devset's reference scorer, ``check.py``, lives outside this repository
(``../shared/samples/real-devset``, or ``$OPENCODE_RESTORE_REAL_DEVSET``); the tests that run
it next to ours on the same restoration JSON skip when it is absent.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from opencode_restore.cli import cli
from opencode_restore.evaluate.facts_file import (
    Evidence,
    Fact,
    FactsFile,
    MustNot,
    Recording,
    load_facts,
)
from opencode_restore.evaluate.fields import labelled_sentences, score_fields
from opencode_restore.evaluate.score import resolve_scoring, score_restoration
from opencode_restore.model import Message, Turn
from opencode_restore.pipeline.restoration import ReferenceRow, Restoration, SessionInfo
from opencode_restore.pipeline.schemas import SessionSummary

ROOT = Path(__file__).resolve().parents[2]
REAL = Path(
    os.environ.get("OPENCODE_RESTORE_REAL_DEVSET")
    or ROOT.parent / "shared" / "samples" / "real-devset"
)
LOG = "agent/s1/full.jsonl"


def _check() -> ModuleType | None:
    path = REAL / "check.py"
    spec = importlib.util.spec_from_file_location("real_devset_check", path)
    if not path.is_file() or spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CHECK = _check()
needs_check = pytest.mark.skipif(CHECK is None, reason=f"no check.py in {REAL}")
REAL_FACTS = sorted(REAL.glob("facts-*.json")) if CHECK is not None else []


def _facts(must_not: list[dict[str, Any]] | None = None) -> FactsFile:
    def fact(id_: str, strings: list[str], ids: list[str], lines: list[int]) -> Fact:
        ev = {"s1": Evidence(message_ids=ids, lines=lines)}
        return Fact(id=id_, kind="outcome", turn=1, strings=strings, evidence=ev)

    return FactsFile(
        recordings={"s1": Recording(log=LOG)},
        facts=[
            fact("pr", ["PR #13"], ["msg_a"], []),
            fact("commit", ["cdb4bfe8"], [], [40]),
            fact("file", ["full.jsonl"], ["msg_a"], []),
            fact("split", ["report-ui"], ["u1#2"], []),
        ],
        must_not=[MustNot.model_validate(m) for m in must_not or []],
    )


def _ref(label: str, message_id: str, entry: int, file: str = "/x/" + LOG) -> dict[str, Any]:
    return {"label": label, "message_id": message_id, "file": file, "entry_index": entry}


def _rest(summary: dict[str, Any], refs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"summary": {"goal": "", **summary}, "references": refs}


def test_sentences_borrow_the_next_labels_and_opening_labels_go_back() -> None:
    got = labelled_sentences("Opened PR #13. Then pushed [M2]. [M3] Later: done.\nNo label")
    assert got == [
        ("Opened PR #13.", ["M2", "M3"]),
        ("Then pushed [M2]. [M3]", ["M2", "M3"]),
        ("Later: done.", []),
        ("No label", []),
    ]


def test_kept_and_cited_by_sentence_id_and_line() -> None:
    rest = _rest(
        {
            # the PR sentence borrows [M1] from the next one, whose id is msg_a:2
            "progress": {"done": ["Opened PR #13. It is green [M1]", "Split report-ui [M4]"]},
            # cited by line 40 of this log only: [M3] is line 40 of another file
            "next_step": "Push cdb4bfe8 [M2]. Push cdb4bfe8 again [M3]",
            # the log's own file name is blanked: not kept
            "goal": "Read full.jsonl [M1]",
            "findings": ["PR #13 only here is not scored"],
        },
        [
            _ref("M1", "msg_a:2", 7),
            _ref("M2", "zz", 40),
            _ref("M3", "zz", 40, file="/x/other.jsonl"),
            _ref("M4", "u1#2:1", 9),  # cut at ':' only: u1#2 is the fact's id
        ],
    )
    got = score_fields(rest, _facts(), "s1")
    assert [(f.id, f.kept, f.cited, f.field) for f in got.facts] == [
        ("pr", True, True, "progress.done"),
        ("commit", True, True, "next_step"),
        ("file", False, False, ""),
        ("split", True, True, "progress.done"),
    ]
    assert got.facts[1].labels_seen == ["M2=ok", "M3=wrong"]


def test_must_not_needs_with_strings_and_no_except_strings_and_counts_items() -> None:
    items = [
        {"id": "readme", "strings": ["README"], "with_strings": ["committed"],
         "except_strings": ["not committed"]},
        {"id": "open", "strings": ["latency"], "with_strings": ["?"], "fields": ["open_questions"]},
    ]  # fmt: skip
    rest = _rest(
        {
            "progress": {"done": ["README committed [M1]", "README committed again [M1]"]},
            "next_step": "README not committed yet; latency?",
            "open_questions": ["latency target [M1]"],
            "key_decisions": [{"decision": "ask", "reason": "latency?"}],
        },
        [_ref("M1", "m", 1)],
    )
    got = score_fields(rest, _facts(items), "s1")
    assert [h.id for h in got.hits] == ["readme", "readme"]
    assert got.hit_ids == ["readme"]
    assert got.must_not_items == 2


def _restoration(goal: str) -> Restoration:
    ref = ReferenceRow(label="M1", message_id="msg_a", file=LOG, file_index=0, entry_index=1)
    return Restoration(
        session=SessionInfo(id="s", agent="codex", files=["/x/" + LOG]),
        provider="offline:rules",
        summary=SessionSummary(goal=goal),
        references=[ref],
        turn_count=1,
    )


def test_a_facts_file_with_must_not_is_scored_on_fields_unless_told() -> None:
    with_must_not = _facts([{"id": "pr", "strings": ["PR #13"], "with_strings": ["merged"]}])
    assert resolve_scoring(with_must_not) == "fields"
    assert resolve_scoring(FactsFile(recordings={}, facts=[])) == "markdown"
    turns = [Turn(1, "a", [Message("u1", "user", "text", "a")])]
    r = _restoration("PR #13 merged. Then more [M1]")
    s = score_restoration(r, with_must_not, "s1", turns)
    assert (s.scoring, s.agent, s.must_not_items, s.must_not_hit_ids) == (
        "fields",
        "codex",
        1,
        ["pr"],
    )
    assert (s.facts[0].id, s.facts[0].kept, s.facts[0].cited) == ("pr", True, True)
    md = score_restoration(r, with_must_not, "s1", turns, scoring="markdown")
    assert (md.scoring, md.must_not_hits) == ("markdown", [])


# --- the same numbers as check.py -------------------------------------------------------


def _vocab(facts: dict[str, Any]) -> tuple[list[str], list[str], list[int]]:
    words: set[str] = {"the", "Reason:", "done", "[M1]", "[M2, M3]", "[M4]", "[M9]"}
    ids: set[str] = set()
    lines: set[int] = set()
    for fact in facts["facts"]:
        words.update(fact["strings"][:3])
        for ev in fact["evidence"].values():
            ids.update(ev.get("message_ids") or [])
            lines.update(ev.get("lines") or [])
    for item in facts.get("must_not") or []:
        for key in ("strings", "with_strings", "except_strings"):
            words.update((item.get(key) or [])[:3])
    log = next(iter(facts["recordings"].values()))["log"]
    words.update([os.path.basename(log), "x" + os.path.basename(log).upper()])
    return sorted(words), sorted(ids), sorted(lines)


def _text(words: list[str]) -> st.SearchStrategy[str]:
    seps = st.sampled_from([" ", ". ", "\n", "? ", "! ", "", ": "])
    piece = st.tuples(st.sampled_from(words), seps).map("".join)
    return st.lists(piece, max_size=8).map("".join)


@st.composite
def _restorations(draw: st.DrawFn, raw: dict[str, Any]) -> dict[str, Any]:
    words, ids, lines = _vocab(raw)
    text = _text(words)
    texts = st.lists(text, max_size=3)
    log = next(iter(raw["recordings"].values()))["log"]
    summary = {
        "goal": draw(text),
        "constraints_preferences": draw(texts),
        "progress": {"done": draw(texts), "in_progress": draw(texts), "blocked": draw(texts)},
        "key_decisions": [
            {"decision": d, "reason": r}
            for d, r in draw(st.lists(st.tuples(text, text), max_size=2))
        ],
        "errors_fixes_ruled_out": draw(texts),
        "findings": draw(texts),
        "current_work": draw(text),
        "next_step": draw(text),
        "open_questions": draw(texts),
        "compaction_notes": draw(texts),
    }
    message_id = st.one_of(
        st.sampled_from(ids or ["none"]),
        st.sampled_from(ids or ["none"]).map(lambda i: i + ":2"),
        st.sampled_from(ids or ["none"]).map(lambda i: i + "#1"),
        st.just("REDACTED"),
    )
    refs = [
        {
            "label": f"M{n}",
            "message_id": draw(message_id),
            "file": draw(st.sampled_from(["/some/where/" + log, "/else/other.jsonl", None])),
            "entry_index": draw(st.sampled_from(lines or [1])),
        }
        for n in range(1, 6)
    ]
    return {"summary": summary, "references": refs}


def _same(raw: dict[str, Any], facts: FactsFile, rest: dict[str, Any]) -> None:
    assert CHECK is not None
    name = next(iter(raw["recordings"]))
    theirs = CHECK.score(rest, raw, name)
    ours = score_fields(rest, facts, name)
    assert [(f.id, f.kept, f.cited, f.field) for f in ours.facts] == [
        (r["id"], r["kept"], r["cited"], r["kept_field"] or "") for r in theirs["facts"]
    ]
    assert [(h.id, h.field, h.sentence) for h in ours.hits] == [
        (h["id"], h["field"], h["sentence"]) for h in theirs["must_not_hits"]
    ]
    assert ours.hit_ids == theirs["must_not_hit_ids"]
    assert ours.must_not_items == theirs["must_not_items"]


@needs_check
@pytest.mark.parametrize("path", REAL_FACTS, ids=lambda p: p.stem)
def test_the_same_figures_as_check_py_on_random_summaries(path: Path) -> None:
    raw = json.loads(path.read_text(encoding="utf-8"))
    facts = load_facts(path)

    @settings(max_examples=40)  # six files: ~1 s each
    @given(_restorations(raw))
    def same(rest: dict[str, Any]) -> None:
        _same(raw, facts, rest)

    same()


@needs_check
def test_eval_of_a_real_session_agrees_with_check_py_on_the_kept_json(tmp_path: Path) -> None:
    """The CLI end to end on the smallest real log: its JSON scored by check.py."""
    path = min(REAL_FACTS, key=lambda p: load_facts(p).log_path(
        next(iter(load_facts(p).recordings))).stat().st_size)  # fmt: skip
    raw = json.loads(path.read_text(encoding="utf-8"))
    result = CliRunner().invoke(
        cli, ["eval", str(path), "--format", "json", "--keep", str(tmp_path)]
    )
    assert result.exit_code == 0, result.stderr
    (ours,) = json.loads(result.stdout)["recordings"]
    name = ours["recording"]
    rest = json.loads((tmp_path / f"{name}.json").read_text(encoding="utf-8"))
    assert CHECK is not None
    theirs = CHECK.score(rest, raw, name)
    assert [f["kept"] for f in ours["facts"]] == [r["kept"] for r in theirs["facts"]]
    assert [f["cited"] for f in ours["facts"]] == [r["cited"] for r in theirs["facts"]]
    assert ours["must_not_hit_ids"] == theirs["must_not_hit_ids"]
    assert ours["scoring"] == "fields"
    assert ours["agent"]


# --- the eval command on a folder of facts files -----------------------------------------


def real_like_folder(tmp_path: Path, fixtures: Path) -> Path:
    """A folder shaped like the real devset: one facts-pi.json over the devset's pi log."""
    data = json.loads((fixtures / "devset/facts.json").read_text())
    log = data["recordings"]["pi"]["log"]
    (tmp_path / log).parent.mkdir(parents=True)
    shutil.copyfile(fixtures / "devset" / log, tmp_path / log)
    data["recordings"] = {"pi": data["recordings"]["pi"]}
    for fact in data["facts"]:
        fact["evidence"] = {"pi": fact["evidence"]["pi"]}
    data["must_not"] = [
        {"id": "always", "strings": ["shrinkray"]},  # the goal names the project
        {"id": "never", "strings": ["QX-0000-never"]},
    ]
    (tmp_path / "facts-pi.json").write_text(json.dumps(data))
    return tmp_path


def test_eval_of_a_folder_reports_agent_and_must_not(tmp_path: Path, fixtures: Path) -> None:
    folder = real_like_folder(tmp_path / "set", fixtures)
    keep = tmp_path / "keep"
    result = CliRunner().invoke(cli, ["eval", str(folder), "--keep", str(keep)])
    assert result.exit_code == 0, result.stderr
    head, _rule, row = result.stdout.splitlines()[:3]
    columns = ["recording", "agent", "kept", "cited", "must_not", "contra", "tokens", "resolve"]
    assert head.split() == columns
    assert row.split()[:2] == ["pi", "pi"]
    assert " 1/2 " in row
    assert "pi: must_not always (" in result.stdout
    assert result.stdout.splitlines()[-1].startswith("overall: facts kept ")
    assert result.stdout.splitlines()[-1].endswith("must_not hits 1/2")
    assert json.loads((keep / "pi.json").read_text())["session"]["agent"] == "pi"
    over = CliRunner().invoke(cli, ["eval", str(folder), "--max-must-not", "0"])
    assert over.exit_code == 1
    md = CliRunner().invoke(cli, ["eval", str(folder), "--scoring", "markdown"])
    assert "must_not" not in md.stdout


def test_eval_refuses_an_empty_folder_and_a_recording_in_two_files(
    tmp_path: Path, fixtures: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(cli, ["eval", str(empty)])
    assert result.exit_code == 2
    assert "no facts*.json file in this folder" in result.stderr
    folder = real_like_folder(tmp_path / "set", fixtures)
    shutil.copyfile(folder / "facts-pi.json", folder / "facts-pi2.json")
    twice = CliRunner().invoke(cli, ["eval", str(folder)])
    assert twice.exit_code == 2
    assert "recording 'pi' is also in" in twice.stderr
    unknown = CliRunner().invoke(cli, ["eval", str(folder / "facts-pi.json"), "-r", "nope"])
    assert "no recording 'nope'" in unknown.stderr
