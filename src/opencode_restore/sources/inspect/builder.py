"""Build a ``Timeline`` (agents, sub-agents, branches) from a flat list of Inspect events.

Follows inspect_scout's ``build_timeline`` / inspect_ai's ``timeline_build``:

1. ``span_begin``/``span_end`` events nest the others by ``span_id`` (an event tree).
2. Top-level phase spans named ``init``, ``solvers`` and ``scorers`` partition the run;
   without them the whole stream is one synthetic ``main`` agent.
3. Inside the agent part, ``type="agent"`` spans and ``type="tool"`` spans that contain
   model calls become child agent spans; a ``tool`` event with an ``agent`` name and
   nested ``events`` becomes a ``tool-agent-<id>`` span. Every other span (solver,
   tool without model calls, custom types) is unrolled: its begin/end and children
   go straight into the parent.
4. Runs of ``type="branch"`` spans become branches of their parent, ``branched_from``
   the branch event's anchor.
5. Utility agents are classified (see ``utility``), and bridge sub-agents get
   their ``agent_result``. Re-rolled model calls become branches when asked for.

Unlike upstream, top-level events outside the phase spans (old logs put ``solver``
spans at the top level beside ``init``) are kept in the agent part, not dropped.
Events without a ``uuid`` (all of them in older logs) get ``"event-<n>"``, ``n`` being
the 1-based position in the flat list (``"<parent uuid>/<k>"`` for a tool's nested events).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...fields import non_empty
from ...model import Timeline, TimelineEvent, TimelineSpan
from .branches import branch_anchor, detect_rerolls
from .events import chat_messages_to_messages, to_timeline_event
from .utility import (
    RawEvents,
    attach_agent_results,
    classify_utility_agents,
    wrap_utility_calls,
)

__all__ = ["build_timeline", "chat_messages_to_messages", "total_tokens"]

_PHASES = ("init", "solvers", "scorers")


@dataclass(slots=True)
class _TreeSpan:
    """A span of the event tree: its begin/end events and children in order."""

    id: str
    name: str
    type: str | None
    begin: dict[str, Any] | None = None
    end: dict[str, Any] | None = None
    children: list[_TreeSpan | dict[str, Any]] = field(default_factory=list)


_Item = _TreeSpan | dict[str, Any]
_Content = list[TimelineEvent | TimelineSpan]


def _event_tree(events: Sequence[dict[str, Any]]) -> list[_Item]:
    """Nest events under their spans; anything unplaceable stays at the top level.

    A span nests under ``parent_id`` only when that span began earlier, so a
    malformed log can never form a cycle.
    """
    roots: list[_Item] = []
    spans: dict[str, _TreeSpan] = {}
    for ev in events:
        kind = ev.get("event")
        if kind == "span_begin":
            sid = non_empty(ev.get("id")) or non_empty(ev.get("span_id"))
            if sid is None or sid in spans:
                roots.append(ev)
                continue
            node = _TreeSpan(
                sid, _text_or(ev.get("name"), sid), non_empty(ev.get("type")), begin=ev
            )
            spans[sid] = node
            parent = spans.get(non_empty(ev.get("parent_id")) or "")
            (parent.children if parent else roots).append(node)
        elif kind == "span_end":
            ended = spans.get(non_empty(ev.get("id")) or non_empty(ev.get("span_id")) or "")
            if ended is not None and ended.end is None:
                ended.end = ev
            else:
                roots.append(ev)
        else:
            owner = spans.get(non_empty(ev.get("span_id")) or "")
            (owner.children if owner else roots).append(ev)
    return roots


def _text_or(value: Any, default: str) -> str:
    """``value`` when it is a non-empty string, else ``default``."""
    return value if isinstance(value, str) and value else default


def _sequence(items: Sequence[_Item]) -> Iterator[dict[str, Any]]:
    """Every event under ``items`` in order, span begin/end included."""
    for item in items:
        if isinstance(item, _TreeSpan):
            if item.begin is not None:
                yield item.begin
            yield from _sequence(item.children)
            if item.end is not None:
                yield item.end
        else:
            yield item


def _has_model(span: _TreeSpan) -> bool:
    return any(
        _has_model(c) if isinstance(c, _TreeSpan) else c.get("event") == "model"
        for c in span.children
    )


def _is_agent(span: _TreeSpan) -> bool:
    return span.type == "agent" or (span.type == "tool" and _has_model(span))


class _Builder:
    def __init__(self, events: Sequence[dict[str, Any]]) -> None:
        self.uuids = {
            id(ev): non_empty(ev.get("uuid")) or f"event-{n}" for n, ev in enumerate(events, 1)
        }
        self.raw: RawEvents = {}
        self.unrolled_solver = False

    def leaf(self, ev: dict[str, Any], uuid: str | None = None) -> TimelineEvent:
        node = to_timeline_event(ev, uuid or self.uuids.get(id(ev)) or "event-0")
        self.raw[id(node)] = ev
        return node

    def event_node(
        self, ev: dict[str, Any], uuid: str | None = None
    ) -> TimelineEvent | TimelineSpan:
        """An event, or the agent span a tool event spawned (``agent`` + nested events)."""
        uuid = uuid or self.uuids.get(id(ev)) or "event-0"
        nested = ev.get("events")
        agent = non_empty(ev.get("agent"))
        if ev.get("event") != "tool" or agent is None or not isinstance(nested, list):
            return self.leaf(ev, uuid)
        content: _Content = [
            self.event_node(child, non_empty(child.get("uuid")) or f"{uuid}/{k}")
            for k, child in enumerate(nested, 1)
            if isinstance(child, dict)
        ]
        if not content:
            return self.leaf(ev, uuid)
        meta: dict[str, Any] = {"source": "tool", "tool_call_id": str(ev.get("id") or "")}
        result = ev.get("result")
        if isinstance(result, str) and result:
            meta["agent_result"] = result
        span_id = f"tool-agent-{ev.get('id')}"
        return TimelineSpan(span_id, agent, "agent", content=content, meta=meta)

    def add(self, item: _Item, into: _Content) -> None:
        """Append one tree item: unroll a non-agent span, drop an empty agent span."""
        if isinstance(item, _TreeSpan) and not _is_agent(item):
            self.unroll(item, into)
            return
        node = self.agent_span(item) if isinstance(item, _TreeSpan) else self.event_node(item)
        if isinstance(node, TimelineEvent) or node.content or node.branches:
            into.append(node)

    def unroll(self, span: _TreeSpan, into: _Content) -> None:
        if span.type == "solver":
            self.unrolled_solver = True
        if span.begin is not None:
            into.append(self.leaf(span.begin))
        for child in span.children:
            self.add(child, into)
        if span.end is not None:
            into.append(self.leaf(span.end))

    def process(self, children: Sequence[_Item]) -> tuple[_Content, list[TimelineSpan]]:
        """Content and branches of a span: runs of ``branch`` spans become branches."""
        content: _Content = []
        branches: list[TimelineSpan] = []
        for item in children:
            if isinstance(item, _TreeSpan) and item.type == "branch":
                branch = self.branch(item)
                if branch is not None:
                    branches.append(branch)
            else:
                self.add(item, content)
        return content, branches

    def branch(self, span: _TreeSpan) -> TimelineSpan | None:
        content, nested = self.process(span.children)
        if not content and not nested:
            return None
        return TimelineSpan(
            span.id,
            span.name,
            "branch",
            content=content,
            branches=nested,
            branched_from=branch_anchor(span.children, content),
            meta={"source": "span"},
        )

    def agent_span(self, span: _TreeSpan, extra: Sequence[_Item] = ()) -> TimelineSpan:
        """An agent span; ``extra`` items (orphans of the solvers span) come first."""
        content: _Content = []
        for item in extra:
            self.add(item, content)
        own, branches = self.process(span.children)
        meta: dict[str, Any] = {"source": "span" if span.type == "agent" else "tool"}
        begin_meta = (span.begin or {}).get("metadata")
        if isinstance(begin_meta, dict) and non_empty(begin_meta.get("description")):
            meta["description"] = begin_meta["description"]
        return TimelineSpan(
            span.id, span.name, "agent", content=content + own, branches=branches, meta=meta
        )

    def container(self, sid: str, name: str, items: Sequence[_Item]) -> TimelineSpan:
        content, branches = self.process(items)
        return TimelineSpan(
            sid, name, "agent", content=content, branches=branches, meta={"source": "span"}
        )

    def from_solvers(self, solvers: _TreeSpan) -> TimelineSpan | None:
        """The agent part of a run from its ``solvers`` span."""
        if not solvers.children:
            return None
        agents = [c for c in solvers.children if isinstance(c, _TreeSpan) and _is_agent(c)]
        others = [c for c in solvers.children if not any(c is a for a in agents)]
        if len(agents) == 1:
            return self.agent_span(agents[0], others)
        if agents:
            # Upstream puts each loose item in front of what it built so far, one at a
            # time: the items come out last first (an unrolled span keeps its own order).
            content: _Content = []
            for item in others:
                group: _Content = []
                self.add(item, group)
                content[:0] = group
            content.extend(self.agent_span(a) for a in agents)
            return TimelineSpan("root", "main", "agent", content=content, meta={"source": "span"})
        self.unrolled_solver = False
        root = self.container(solvers.id, solvers.name, solvers.children)
        # A primitive solver unrolled into the container: the run itself is the agent.
        if self.unrolled_solver:
            root.name = "main"
        return root

    def section(self, span: _TreeSpan | None, name: str, span_type: str) -> TimelineSpan | None:
        """The flat init or scoring section of a run (None when it has no events)."""
        if span is None:
            return None
        content: _Content = [self.leaf(ev) for ev in _sequence(span.children)]
        if not content:
            return None
        return TimelineSpan(span.id, name, span_type, content=content, meta={"source": "span"})


def total_tokens(span: TimelineSpan) -> int:
    """Tokens of every model call in the span: content, child spans and branches."""
    total = 0
    for item in [*span.content, *span.branches]:
        if isinstance(item, TimelineSpan):
            total += total_tokens(item)
        elif item.model is not None and item.model.usage is not None:
            total += item.model.usage.total
    return total


def build_timeline(
    events: Sequence[Any],
    *,
    root_name: str | None = None,
    detect_reroll_branches: bool = False,
) -> Timeline:
    """Build the agent tree of one Inspect sample from its flat event dicts.

    ``root_name`` renames the root span (inspect_ai's own builder calls it ``main``;
    by default an agent root keeps its span's name). ``detect_reroll_branches`` turns
    model calls re-sent with an identical input into branches (compaction events are
    hard boundaries). It is off by default: bridge agents legitimately repeat an input,
    and inspect_ai's own fixtures (``utility_header_only_prompt``) expect no branch
    there. Items that are not objects are ignored.
    """
    raw = [ev for ev in events if isinstance(ev, dict)]
    b = _Builder(raw)
    tree = _event_tree(raw)
    phases = {
        item.name: item for item in tree if isinstance(item, _TreeSpan) and item.name in _PHASES
    }
    init = b.section(phases.get("init"), "init", "init")
    scoring = b.section(phases.get("scorers"), "scoring", "scorers")
    solvers = phases.get("solvers")
    agent = b.from_solvers(solvers) if solvers is not None else None
    others = [item for item in tree if not any(item is p for p in phases.values())]
    if others and agent is None:
        agent = b.container("main", "main", others)
    elif others and agent is not None:
        content, branches = b.process(others)
        agent.content.extend(content)
        agent.branches.extend(branches)
    if agent is None:
        root = TimelineSpan("root", "main", None)
    else:
        root = agent
        if detect_reroll_branches:
            detect_rerolls(root, b.raw)
        wrap_utility_calls(root, b.raw)
        classify_utility_agents(root)
        attach_agent_results(root)
    if init is not None:
        root.content.insert(0, init)
    if scoring is not None:
        root.content.append(scoring)
    if root_name is not None:
        root.name = root_name
    return Timeline(root=root, name="Default")
