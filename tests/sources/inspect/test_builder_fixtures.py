"""Every scout and inspect_ai timeline fixture builds the tree its ``expected`` describes.

Each fixture is ``{description, events, expected}`` with ``expected`` shaped as
``{init, agent, scoring}``. We project our ``Timeline`` into that shape and compare
every field the fixture states (fields it leaves out are not checked).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from opencode_restore.model import Timeline, TimelineEvent, TimelineSpan
from opencode_restore.sources.inspect.builder import build_timeline, total_tokens

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "inspect"
SCOUT = sorted((FIXTURES / "scout-timeline-fixtures").glob("*.json"))
INSPECT_AI = sorted((FIXTURES / "inspect-ai-timeline-fixtures").glob("*.json"))
_SECTIONS = ("init", "scorers")


def _known_uuids(events: list[dict[str, Any]]) -> set[str]:
    """Uuids the fixture itself gives (events without one get synthetic ids we skip)."""
    found: set[str] = set()
    for ev in events:
        if isinstance(ev.get("uuid"), str):
            found.add(ev["uuid"])
        found |= _known_uuids(ev.get("events") or [])
    return found


class Projection:
    """Our timeline in the fixtures' vocabulary."""

    def __init__(self, known: set[str]) -> None:
        self.known = known

    def event_uuids(self, span: TimelineSpan) -> list[str]:
        return [e.uuid for e in span.events() if e.uuid in self.known]

    def nested_uuids(self, span: TimelineSpan) -> list[str]:
        out: list[str] = []
        for item in span.content:
            if isinstance(item, TimelineSpan):
                out += self.nested_uuids(item)
            elif item.uuid in self.known:
                out.append(item.uuid)
        return out

    def children(self, span: TimelineSpan) -> list[dict[str, Any]]:
        kids = [s for s in span.spans() if s.span_type not in _SECTIONS]
        return [self.span(s) for s in kids]

    def span(self, span: TimelineSpan) -> dict[str, Any]:
        return {
            "type": "agent",
            "id": span.id,
            "name": span.name,
            "source": {"source": span.meta.get("source"), "span_id": span.id},
            "event_uuids": self.event_uuids(span),
            "nested_uuids": self.nested_uuids(span),
            "total_tokens": total_tokens(span),
            "utility": span.utility,
            "agent_result": span.meta.get("agent_result"),
            "children": self.children(span),
            "branches": [self.branch(b) for b in span.branches],
            "content_structure": [self.item(i) for i in span.content],
        }

    def branch(self, branch: TimelineSpan) -> dict[str, Any]:
        return {
            "branched_from": branch.branched_from,
            "event_uuids": self.event_uuids(branch),
            "children": self.children(branch),
            "total_tokens": total_tokens(branch),
        }

    def item(self, item: TimelineEvent | TimelineSpan) -> dict[str, Any]:
        if isinstance(item, TimelineSpan):
            return self.span(item)
        return {"type": "event", **({"uuid": item.uuid} if item.uuid in self.known else {})}

    def section(self, root: TimelineSpan, span_type: str, name: str) -> dict[str, Any] | None:
        found = [s for s in root.spans() if s.span_type == span_type]
        assert len(found) <= 1
        if not found:
            return None
        return {
            "section": name,
            "event_uuids": self.event_uuids(found[0]),
            "total_tokens": total_tokens(found[0]),
        }

    def timeline(self, timeline: Timeline) -> dict[str, Any]:
        root = timeline.root
        init = self.section(root, "init", "init")
        scoring = self.section(root, "scorers", "scoring")
        agent = None
        if root.span_type == "agent":
            agent = self.span(root)
            # The fixtures count the agent's own tokens apart from init and scoring.
            agent["total_tokens"] -= sum(s["total_tokens"] for s in (init, scoring) if s)
        return {"init": init, "agent": agent, "scoring": scoring}


def assert_matches(actual: Any, expected: Any, path: str = "expected") -> None:
    """Every field present in ``expected`` equals ours (lists element by element)."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{path}: expected an object, got {actual!r}"
        for key, value in expected.items():
            assert key in actual, f"{path}.{key}: not projected"
            assert_matches(actual[key], value, f"{path}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list), f"{path}: expected a list, got {actual!r}"
        assert len(actual) == len(expected), f"{path}: {len(actual)} items, want {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_matches(a, e, f"{path}[{i}]")
    else:
        assert actual == expected, f"{path}: got {actual!r}, want {expected!r}"


def _check(path: Path, **options: Any) -> None:
    fixture = json.loads(path.read_text())
    timeline = build_timeline(fixture["events"], **options)
    projected = Projection(_known_uuids(fixture["events"])).timeline(timeline)
    assert_matches(projected, fixture["expected"])


@pytest.mark.parametrize("path", SCOUT, ids=[p.stem for p in SCOUT])
def test_scout_fixture(path: Path) -> None:
    _check(path)


@pytest.mark.parametrize("path", INSPECT_AI, ids=[p.stem for p in INSPECT_AI])
def test_inspect_ai_fixture(path: Path) -> None:
    # inspect_ai's own builder always names the root agent "main".
    _check(path, root_name="main")


def test_fixture_sets_are_complete() -> None:
    assert len(SCOUT) == 40
    assert len(INSPECT_AI) == 8


def test_projection_notices_a_wrong_tree() -> None:
    fixture = json.loads((FIXTURES / "scout-timeline-fixtures" / "nested_agents.json").read_text())
    fixture["expected"]["agent"]["children"][0]["event_uuids"] = ["e-002"]
    projected = Projection(_known_uuids(fixture["events"])).timeline(
        build_timeline(fixture["events"])
    )
    with pytest.raises(AssertionError, match="event_uuids"):
        assert_matches(projected, fixture["expected"])
