"""How an Inspect sample ended, as messages after its conversation: scores and an error.

The final conversation (``sample.messages``) stops at the model's last output; how the
run was judged lives elsewhere in the sample. Without it a restored sample has a goal and
an answer but no verdict. So the reader appends, after the conversation:

* one ``system`` message when the sample ended in an error (``sample.error``, else the
  last ``error`` event): ``"sample error: <message>"``, ``is_error``,
  ``meta["sample_error"]`` the message;
* one ``system`` message per score: ``"score (<scorer>): <value>"`` with ``— answer:``
  and ``— explanation:`` lines when the score has them (each one line, at most
  `LINE_CHARS`), ``meta["score"] = {"scorer", "value", "answer", "explanation"}``.

Scores come from the sample's ``scores`` (scorer name → ``Score``) when it has any, else
from its final (non-intermediate) ``score`` events, named by the ``scorer`` span around
them (``"score"`` outside one; a scorer scored twice keeps its last score); each takes
the time of its score event, else the sample's ``completed_at``. Values may be a
string, a number, a bool, a list or a dict: strings and numbers as they are, anything
else as compact JSON.

All these messages are ``meta["synthetic"]`` (no user request). Their ids are
``"<sample id>:score:<scorer>"`` and ``"<sample id>:error"``; ``file_index`` 0 and
``entry_index`` continuing the conversation's numbering (its position in the sample).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson

from ...fields import non_empty, one_line, parse_timestamp
from ...model import Message

#: Longest part (value, answer, explanation) of a score message's text.
LINE_CHARS = 200
#: Longest string kept in ``meta["score"]`` and ``meta["sample_error"]``.
META_CHARS = 2000
#: Scorer name of a score event outside any scorer span.
DEFAULT_SCORER = "score"


def _bounded(text: str, limit: int = META_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def render_value(value: Any) -> str:
    """A score value in one compact string: ``C``, ``0.5``, ``true``, ``{"a":1}``."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    try:
        return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:  # e.g. an integer beyond 64 bits inside a list
        return str(value)


def _optional_text(value: Any) -> str | None:
    """A score's ``answer`` or ``explanation`` as text, or None when it has none."""
    if value is None:
        return None
    text = value if isinstance(value, str) else render_value(value)
    return _bounded(text) if text.strip() else None


def _score_message(
    sample_id: str, scorer: str, score: dict[str, Any], when: datetime | None, index: int
) -> Message:
    value = render_value(score.get("value"))
    answer = _optional_text(score.get("answer"))
    explanation = _optional_text(score.get("explanation"))
    lines = [f"score ({one_line(scorer, 80)}): {one_line(value, LINE_CHARS)}"]
    if answer is not None:
        lines.append(f"— answer: {one_line(answer, LINE_CHARS)}")
    if explanation is not None:
        lines.append(f"— explanation: {one_line(explanation, LINE_CHARS)}")
    meta = {
        "score": {
            "scorer": scorer,
            "value": _bounded(value),
            "answer": answer,
            "explanation": explanation,
        },
        "synthetic": True,
    }
    return Message(
        id=f"{sample_id}:score:{scorer}",
        role="system",
        type="text",
        text="\n".join(lines),
        timestamp=when,
        file_index=0,
        entry_index=index,
        meta=meta,
    )


def _scorer_spans(events: list[Any]) -> dict[str, str]:
    """Span id → scorer name, for the ``scorer`` spans of the run."""
    spans: dict[str, str] = {}
    for ev in events:
        if isinstance(ev, dict) and ev.get("event") == "span_begin" and ev.get("type") == "scorer":
            sid = non_empty(ev.get("id")) or non_empty(ev.get("span_id"))
            name = non_empty(ev.get("name"))
            if sid is not None and name is not None:
                spans[sid] = name
    return spans


def _event_scores(events: list[Any]) -> list[tuple[str | None, dict[str, Any], datetime | None]]:
    """``(scorer or None, score, time)`` of each final score event, in order."""
    spans = _scorer_spans(events)
    out: list[tuple[str | None, dict[str, Any], datetime | None]] = []
    for ev in events:
        if not isinstance(ev, dict) or ev.get("event") != "score" or ev.get("intermediate"):
            continue
        score = ev.get("score")
        if isinstance(score, dict):
            scorer = spans.get(non_empty(ev.get("span_id")) or "")
            out.append((scorer, score, parse_timestamp(ev.get("timestamp"))))
    return out


def _scores(
    sample: dict[str, Any], events: list[Any]
) -> list[tuple[str, dict[str, Any], datetime | None]]:
    """``(scorer, score, time)`` of each of the sample's scores (see the module doc)."""
    found = _event_scores(events)
    completed = parse_timestamp(sample.get("completed_at"))
    raw = sample.get("scores")
    scores = {str(k): v for k, v in raw.items() if isinstance(v, dict)} if isinstance(
        raw, dict
    ) else {}  # fmt: skip
    if scores:
        times = {name: when for name, _, when in found if name is not None and when}
        # One score and one score event outside any scorer span: that event is its.
        if len(scores) == 1 and len(found) == 1 and found[0][0] is None and found[0][2]:
            times.setdefault(next(iter(scores)), found[0][2])
        return [(k, v, times.get(k) or completed) for k, v in scores.items()]
    latest: dict[str, tuple[dict[str, Any], datetime | None]] = {}
    for name, score, when in found:
        key = name or DEFAULT_SCORER
        latest.pop(key, None)  # a re-score goes where the last one was
        latest[key] = (score, when or completed)
    return [(k, score, when) for k, (score, when) in latest.items()]


def _error_text(value: Any) -> str | None:
    """The message of an ``EvalError`` (or a bare string), or None."""
    if isinstance(value, dict):
        value = value.get("message")
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _sample_error(sample: dict[str, Any], events: list[Any]) -> tuple[str, datetime | None] | None:
    """The error the sample ended in and when, or None."""
    errors = [
        (text, parse_timestamp(ev.get("timestamp")))
        for ev in events
        if isinstance(ev, dict) and ev.get("event") == "error"
        if (text := _error_text(ev.get("error"))) is not None
    ]
    own = _error_text(sample.get("error"))
    if own is not None:
        when = next((w for t, w in reversed(errors) if t == own), None)
        return own, when or parse_timestamp(sample.get("completed_at"))
    return errors[-1] if errors else None


def outcome_messages(
    sample: dict[str, Any], events: list[Any], sample_id: str, first_index: int
) -> list[Message]:
    """The sample's error (if it ended in one), then one message per score.

    ``sample`` holds ``scores``, ``error`` and ``completed_at`` (attachments resolved);
    ``events`` are the sample's events; entry indexes start at ``first_index``.
    """
    out: list[Message] = []
    index = first_index
    error = _sample_error(sample, events)
    if error is not None:
        text, when = error
        out.append(
            Message(
                id=f"{sample_id}:error",
                role="system",
                type="text",
                text=f"sample error: {one_line(text, 300)}",
                timestamp=when,
                file_index=0,
                entry_index=index,
                is_error=True,
                meta={"sample_error": _bounded(text), "synthetic": True},
            )
        )
        index += 1
    for scorer, score, when in _scores(sample, events):
        out.append(_score_message(sample_id, scorer, score, when, index))
        index += 1
    return out
