"""Codex user messages that are context, not requests: injected harness text (Desktop's
first message, environment, AGENTS.md, ``<turn_aborted>``) and the IDE extension's
wrapper around a request.

Texts are shortened real ones: the Desktop first message is line 6 of the real-devset's
codex/graph-trail-review (Codex Desktop 0.145.0-alpha.30: three content items, the plugin
list, AGENTS.md and the environment), the ``<turn_aborted>`` message and event lines 72-73
of codex/agentv-sync-pr (Codex CLI 0.142.0); the IDE wrapper has the shape the VS Code
extension writes (``# Context from my IDE setup:`` ... ``## My request for Codex:``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Message
from opencode_restore.pipeline.stages.turn_parser import parse_turns
from opencode_restore.sources.codex import READER
from opencode_restore.sources.codex.items import injected_kind, split_ide_context

from .test_edge import event, item, meta, msg, write

PLUGINS = (
    "<recommended_plugins>\nHere is a list of plugins that are available but not installed.\n\n"
    "- Atlassian Rovo (atlassian-rovo@openai-curated-remote)\n- Box (box@openai-curated-remote)\n"
    "</recommended_plugins>"
)
AGENTS = (
    "# AGENTS.md instructions for /Users/thomi/Projects/entire-graph\n\n<INSTRUCTIONS>\n"
    "# Agent Instructions\n\nThis repository is **Entire Graph** (`entire-graph`)\n</INSTRUCTIONS>"
)
ENVIRONMENT = (
    "<environment_context>\n  <cwd>/Users/thomi/Projects/entire-graph</cwd>\n  <shell>zsh</shell>\n"
    "</environment_context>"
)
REQUEST = (
    "Do an adversarial review of https://entire.io/gh/entireio/entire-graph/trails/10 - you "
    "can access the trail via the Entire CLI.\n"
)
ABORTED = (
    "<turn_aborted>\nThe user interrupted the previous turn on purpose. Any running unified "
    "exec processes may still be running in the background. If any tools/commands were "
    "aborted, they may have partially executed.\n</turn_aborted>"
)
IDE = (
    "# Context from my IDE setup:\n\n## Active file: src/app.ts\n\n## Open tabs:\n"
    "- app.ts: src/app.ts\n- README.md: README.md\n\n## My request for Codex:\n"
    "fix the hover animation on the portfolio cards\n"
)


def _items(*texts: str) -> dict[str, Any]:
    content = [{"type": "input_text", "text": t} for t in texts]
    return item({"type": "message", "role": "user", "content": content})


def _read(tmp_path: Path, lines: list[Any]) -> list[Message]:
    return READER.read([write(tmp_path / "r.jsonl", lines)], WarningSink()).messages()


def test_desktop_first_message_is_context(tmp_path: Path) -> None:
    lines = [
        meta(),
        _items(PLUGINS, AGENTS, ENVIRONMENT),
        msg("user", REQUEST),
        event({"type": "user_message", "message": REQUEST}),
        msg("assistant", "I will look at the trail."),
    ]
    out = _read(tmp_path, lines)
    first = out[0]
    assert not first.is_human
    assert first.meta["injected"] == "recommended_plugins"
    assert [m.text for m in out if m.is_human] == [REQUEST]
    turns = parse_turns(out)
    assert len(turns) == 1
    assert turns[0].user_text == REQUEST.strip()


def test_a_typed_message_among_context_items_is_a_request(tmp_path: Path) -> None:
    out = _read(tmp_path, [meta(), _items(ENVIRONMENT, "please also run the tests")])
    assert out[0].is_human
    assert "injected" not in out[0].meta


def test_injected_kinds() -> None:
    assert injected_kind(ENVIRONMENT) == "environment_context"
    assert injected_kind(AGENTS) == "instructions"
    assert injected_kind(ABORTED) == "interrupt"
    assert injected_kind(PLUGINS) == "recommended_plugins"
    assert injected_kind("<ci-monitor-event>build red</ci-monitor-event>") == "ci-monitor-event"
    assert injected_kind(REQUEST) is None
    assert injected_kind("<b>bold</b> is not rendered, why?") is None
    assert injected_kind("# Context from my IDE setup:\n\n## Active file: a.py\n") == "ide_context"


def test_ide_wrapper_keeps_the_request_and_the_context_apart(tmp_path: Path) -> None:
    lines = [
        meta(),
        msg("user", IDE),
        event({"type": "user_message", "message": IDE}),
        msg("assistant", "Done."),
    ]
    out = _read(tmp_path, lines)
    humans = [m for m in out if m.is_human]
    assert len(humans) == 1  # the event copy still pairs with its response item
    request = humans[0]
    assert request.text == "fix the hover animation on the portfolio cards"
    context = request.meta["injected_context"]
    assert context["kind"] == "ide_context"
    assert "## Active file: src/app.ts" in context["text"]
    assert parse_turns(out)[0].user_text == "fix the hover animation on the portfolio cards"


def test_split_ide_context_leaves_other_text_alone() -> None:
    assert split_ide_context(REQUEST) == (REQUEST, None)
    # The heading quoted in a request that is not wrapped is the user's text.
    quoted = "why does my prompt start with ## My request for Codex:\nin the log?"
    assert split_ide_context(quoted) == (quoted, None)
    files = (
        "# Files mentioned by the user:\n\n## shot.png:\n/tmp/shot.png\n\n"
        "## My request for Codex:\nFix it."
    )
    assert split_ide_context(files) == (
        "Fix it.",
        "# Files mentioned by the user:\n\n## shot.png:\n/tmp/shot.png",
    )


def test_turn_aborted_message_and_event_make_one_marker(tmp_path: Path) -> None:
    aborted = {"type": "turn_aborted", "turn_id": "t1", "reason": "interrupted"}
    lines = [
        meta(),
        msg("user", "fix the origin URL."),
        item(
            {
                "type": "function_call",
                "name": "shell",
                "arguments": '{"command":["ls"]}',
                "call_id": "c1",
            }
        ),
        msg("user", ABORTED),
        event(aborted),
        msg("user", "continue"),
        msg("assistant", "Continuing."),
    ]
    out = _read(tmp_path, lines)
    markers = [m for m in out if m.meta.get("injected") == "interrupt"]
    assert len(markers) == 1
    assert markers[0].meta["reason"] == "interrupted"
    assert not markers[0].is_human
    turns = parse_turns(out)
    assert [t.user_text for t in turns] == ["fix the origin URL.", "continue"]
    assert turns[0].interrupted
    assert not turns[1].interrupted


def test_turn_aborted_event_alone_is_a_marker(tmp_path: Path) -> None:
    lines = [
        meta(),
        msg("user", "fix the origin URL."),
        msg("assistant", "Looking at the remote first."),
        event({"type": "turn_aborted", "turn_id": "t1", "reason": "interrupted"}),
        msg("user", "continue"),
    ]
    out = _read(tmp_path, lines)
    marker = next(m for m in out if m.meta.get("injected") == "interrupt")
    assert (marker.role, marker.type) == ("system", "text")
    turns = parse_turns(out)
    assert len(turns) == 2
    assert turns[0].interrupted  # its last words were not an answer: the user stopped it


def test_no_marker_without_an_abort(tmp_path: Path) -> None:
    out = _read(tmp_path, [meta(), msg("user", "hi"), msg("assistant", "Hello.")])
    assert not any(m.meta.get("injected") for m in out)
    assert not parse_turns(out)[0].interrupted


def test_orjson_roundtrip_of_meta(tmp_path: Path) -> None:
    out = _read(tmp_path, [meta(), msg("user", IDE)])
    assert orjson.loads(orjson.dumps(out[0].meta))["injected_context"]["kind"] == "ide_context"
