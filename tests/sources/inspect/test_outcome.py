"""How an Inspect sample ended: its scores and its error as system messages after the
conversation (``sources/inspect/outcome.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from opencode_restore.cli import cli
from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Message
from opencode_restore.report.messages import iter_jsonl, message_record
from opencode_restore.sources import filter_messages
from opencode_restore.sources.inspect.outcome import render_value
from opencode_restore.sources.inspect.reader import READER

LOGS = Path(__file__).resolve().parents[3] / "fixtures" / "inspect" / "eval-logs"
BROWSER = LOGS / "2025-05-12T20-27-36-04-00_browser.json"


def _log(tmp_path: Path, sample: dict[str, Any]) -> Path:
    base: dict[str, Any] = {
        "id": "s1",
        "epoch": 1,
        "messages": [
            {"role": "user", "content": "What is 6 x 7?"},
            {"role": "assistant", "content": "42"},
        ],
    }
    path = tmp_path / "log.json"
    doc = {"version": 2, "eval": {"run_id": "r1", "task": "t"}, "samples": [{**base, **sample}]}
    path.write_text(json.dumps(doc))
    return path


def _read(path: Path) -> list[Message]:
    sink = WarningSink()
    messages = READER.read([path], sink).messages()
    assert sink.warnings == []
    return messages


def _scorer_span(sid: str, name: str, at: str, score: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"event": "span_begin", "id": sid, "type": "scorer", "name": name, "timestamp": at},
        {"event": "score", "span_id": sid, "timestamp": at, "score": score},
        {"event": "span_end", "id": sid, "timestamp": at},
    ]


# --- the browser eval log -------------------------------------------------------------


def test_browser_sample_ends_with_its_score() -> None:
    messages = _read(BROWSER)
    raw = json.loads(BROWSER.read_text())["samples"][0]
    score = messages[-1]
    assert messages[-2].role == "assistant"  # after the final answer
    assert (score.role, score.type, score.is_human, score.is_error) == (
        "system",
        "text",
        False,
        False,
    )
    assert score.id == "1:score:includes"
    assert (score.file_index, score.entry_index) == (0, len(raw["messages"]) + 1)
    assert [m.entry_index for m in messages] == list(range(1, len(messages) + 1))
    assert score.meta["synthetic"] is True
    meta = score.meta["score"]
    assert meta["scorer"] == "includes"
    assert meta["value"] == "C"
    assert meta["answer"].startswith("the ai security institute (aisi) is the premier")
    assert meta["explanation"].startswith("The AI Security Institute (AISI) is the premier")
    lines = score.text.splitlines()
    assert lines[0] == "score (includes): C"
    assert lines[1].startswith("— answer: the ai security institute")
    assert lines[2].startswith("— explanation: The AI Security Institute")
    assert len(lines) == 3
    assert all(len(line) <= 220 for line in lines)
    # The time of the score event (the only one), not of the sample's end.
    score_event = next(e for e in raw["events"] if e["event"] == "score")
    assert score.timestamp is not None
    assert score.timestamp.isoformat().startswith("2025-05-13T00:27:56.689")
    assert score_event["timestamp"].startswith("2025-05-12T20:27:56.689")
    # One score: the sample's `scores` and its score event are not counted twice.
    assert sum(1 for m in messages if "score" in m.meta) == 1
    assert "sample_error" not in score.meta


def test_browser_score_in_the_messages_command_and_the_api_shape() -> None:
    result = CliRunner().invoke(cli, ["messages", str(BROWSER), "--format", "jsonl"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.output.splitlines()]
    assert [r["role"] for r in records] == ["user", "assistant", "system"]
    last = records[-1]
    assert last["id"] == "1:score:includes"
    assert last["text"].startswith("score (includes): C\n— answer: ")
    assert last["timestamp"] == "2025-05-13T00:27:56.689Z"
    assert (last["file_index"], last["entry_index"]) == (0, 11)
    # The API/MCP record is the same shape as any other message's.
    messages = _read(BROWSER)
    assert set(message_record(messages[-1])) == set(message_record(messages[0]))
    # ... plus its [M#] label: none, as a restore never shows a system message.
    assert last.pop("label") is None
    assert orjson.loads(b"".join(iter_jsonl(messages[-1:]))) == last
    # A system text survives the default filters (no tools, no thinking).
    assert list(filter_messages(messages))[-1] is messages[-1]
    markdown = CliRunner().invoke(cli, ["messages", str(BROWSER), "--format", "markdown"])
    assert "### System — file 0 entry 11" in markdown.output
    assert "score (includes): C" in markdown.output


def test_ids_are_stable_across_reads_and_formats() -> None:
    first = [m.id for m in _read(BROWSER)]
    again = [m.id for m in READER.iter_messages([BROWSER], WarningSink())]
    from_zip = [m.id for m in _read(BROWSER.parent.parent / "made" / "browser.eval")]
    assert first == again == from_zip
    assert len(set(first)) == len(first)


# --- made-up samples ------------------------------------------------------------------


def test_numeric_dict_list_and_bool_values(tmp_path: Path) -> None:
    scores = {
        "accuracy": {"value": 0.75},
        "rubric": {"value": {"correct": 1, "style": 0.5}, "explanation": "two of\nthree"},
        "steps": {"value": [1, "C"]},
        "passed": {"value": True, "answer": ""},
        "count": {"value": 3},
    }
    messages = _read(_log(tmp_path, {"scores": scores}))
    assert [m.role for m in messages] == ["user", "assistant", *["system"] * 5]
    got = {m.meta["score"]["scorer"]: m for m in messages[2:]}
    assert list(got) == list(scores)  # the log's order
    assert {k: m.meta["score"]["value"] for k, m in got.items()} == {
        "accuracy": "0.75",
        "rubric": '{"correct":1,"style":0.5}',
        "steps": '[1,"C"]',
        "passed": "true",
        "count": "3",
    }
    assert got["rubric"].text == (
        'score (rubric): {"correct":1,"style":0.5}\n— explanation: two of three'
    )
    assert got["rubric"].meta["score"]["explanation"] == "two of\nthree"
    assert got["passed"].meta["score"]["answer"] is None  # empty: no answer line
    assert got["passed"].text == "score (passed): true"
    assert got["accuracy"].id == "s1:score:accuracy"
    assert [m.entry_index for m in messages] == [1, 2, 3, 4, 5, 6, 7]
    assert all(m.timestamp is None and not m.is_human for m in messages[2:])


def test_long_parts_are_bounded(tmp_path: Path) -> None:
    scores = {"judge": {"value": "x" * 5000, "answer": "a " * 5000, "explanation": "e" * 9000}}
    (score,) = _read(_log(tmp_path, {"scores": scores}))[2:]
    assert all(len(line) <= 220 for line in score.text.splitlines())
    assert all(len(v) <= 2000 for v in score.meta["score"].values() if isinstance(v, str))


def test_a_sample_without_scores_gets_no_message(tmp_path: Path) -> None:
    messages = _read(_log(tmp_path, {}))
    assert [m.role for m in messages] == ["user", "assistant"]
    messages = _read(_log(tmp_path, {"scores": None, "events": []}))
    assert [m.role for m in messages] == ["user", "assistant"]
    # Intermediate scores (the agent checking its work mid-run) are no verdict.
    events = [{"event": "score", "intermediate": True, "score": {"value": 0}}]
    assert len(_read(_log(tmp_path, {"events": events}))) == 2
    # Not-an-object entries are skipped.
    assert len(_read(_log(tmp_path, {"scores": {"bad": "C", "worse": [1]}}))) == 2


def test_scores_from_events_when_the_sample_has_none(tmp_path: Path) -> None:
    events = [
        *_scorer_span("sp1", "match", "2025-01-01T00:00:05Z", {"value": "I", "answer": "41"}),
        *_scorer_span("sp2", "judge", "2025-01-01T00:00:06Z", {"value": 1}),
        {"event": "score", "timestamp": "2025-01-01T00:00:07Z", "score": {"value": "C"}},
        # A re-score of `match` replaces the first.
        *_scorer_span("sp3", "match", "2025-01-01T00:00:08Z", {"value": "C", "answer": "42"}),
    ]
    messages = _read(_log(tmp_path, {"events": events}))
    scores = [m.meta["score"] for m in messages[2:]]
    assert [(s["scorer"], s["value"], s["answer"]) for s in scores] == [
        ("judge", "1", None),
        ("score", "C", None),
        ("match", "C", "42"),
    ]
    assert [m.timestamp.second for m in messages[2:] if m.timestamp] == [6, 7, 8]


def test_sample_scores_take_the_time_of_their_scorer_span(tmp_path: Path) -> None:
    events = [
        *_scorer_span("sp1", "a", "2025-01-01T00:00:05Z", {"value": "C"}),
        *_scorer_span("sp2", "b", "2025-01-01T00:00:06Z", {"value": "I"}),
    ]
    sample = {
        "events": events,
        "scores": {"b": {"value": "I"}, "a": {"value": "C"}, "c": {"value": "C"}},
        "completed_at": "2025-01-01T00:00:09Z",
    }
    messages = _read(_log(tmp_path, sample))[2:]
    assert [m.meta["score"]["scorer"] for m in messages] == ["b", "a", "c"]
    # c has no score event: the sample's end.
    assert [m.timestamp.second for m in messages if m.timestamp] == [6, 5, 9]


def test_one_score_takes_the_time_of_a_lone_unnamed_score_event(tmp_path: Path) -> None:
    # Older logs have no scorer spans: one score, one score event, so the time is its.
    events = [{"event": "score", "timestamp": "2025-01-01T00:00:03Z", "score": {"value": "C"}}]
    (score,) = _read(_log(tmp_path, {"events": events, "scores": {"match": {"value": "C"}}}))[2:]
    assert score.meta["score"]["scorer"] == "match"
    assert score.timestamp is not None
    assert score.timestamp.second == 3


def test_a_sample_that_ended_in_an_error(tmp_path: Path) -> None:
    error = {"message": "RuntimeError('sandbox died')", "traceback": "Traceback ...\n"}
    events = [
        {"event": "error", "timestamp": "2025-01-01T00:00:04Z", "error": error},
    ]
    messages = _read(_log(tmp_path, {"error": error, "events": events}))
    assert [m.role for m in messages] == ["user", "assistant", "system"]
    failed = messages[-1]
    assert failed.id == "s1:error"
    assert failed.text == "sample error: RuntimeError('sandbox died')"
    assert failed.meta == {"sample_error": "RuntimeError('sandbox died')", "synthetic": True}
    assert failed.is_error
    assert not failed.is_human
    assert failed.timestamp is not None
    assert failed.timestamp.second == 4
    assert failed.entry_index == 3
    # Only an error event (a log written while the sample ran), then a score after it.
    only_event = _read(_log(tmp_path, {"events": events, "scores": {"m": {"value": "I"}}}))
    assert [m.id for m in only_event[2:]] == ["s1:error", "s1:score:m"]
    assert [m.entry_index for m in only_event[2:]] == [3, 4]


def test_render_value() -> None:
    assert render_value("C") == "C"
    assert render_value(1) == "1"
    assert render_value(0.5) == "0.5"
    assert render_value(False) == "false"
    assert render_value(None) == "null"
    assert render_value({"a": [1, 2]}) == '{"a":[1,2]}'
    assert render_value([2**70]) == str([2**70])
