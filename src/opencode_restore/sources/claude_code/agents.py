"""Claude Code sub-agent runs as child spans of the session timeline.

Three generations of storage:

* ``<session-stem>/subagents/**/agent-<id>.jsonl`` (+ ``agent-<id>.meta.json`` with
  ``agentType`` and ``toolUseId``), including ``agent-acompact-*`` files, which are
  the compaction's own summarising call (a utility span);
* ``agent-<id>.jsonl`` next to the session file, named by ``agentId: <id>`` in the
  Task call's result;
* ``isSidechain: true`` lines interleaved in the session file itself.

Each run is placed right after the Task (or Agent) tool call that started it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ...diagnostics import WarningSink
from ...model import Session, TimelineEvent, TimelineSpan
from ..base import load_json
from .scan import Scan

#: Reads one sub-agent file: its session and the agent links found in it.
ReadAgent = Callable[[Path], tuple[Session, dict[str, str]]]
_AGENT_TOOLS = ("Task", "Agent")


class _Agent:
    __slots__ = ("agent_id", "span", "tool_use_id", "type_hint")

    def __init__(self, span: TimelineSpan, agent_id: str | None, type_hint: str | None) -> None:
        self.span = span
        self.agent_id = agent_id
        self.type_hint = type_hint
        self.tool_use_id: str | None = None


def agent_files(files: Sequence[Path], links: dict[str, str]) -> list[tuple[str, Path]]:
    """(agent id, file) for every sub-agent file of a chain, newest layout first."""
    found: dict[str, Path] = {}
    for path in files:
        folder = path.parent / path.stem / "subagents"
        if folder.is_dir():
            for f in sorted(folder.rglob("agent-*.jsonl")):
                found.setdefault(f.stem.removeprefix("agent-"), f)
    chain = set(files)
    for agent_id in links:
        if agent_id in found:
            continue
        for path in files:
            f = path.parent / f"agent-{agent_id}.jsonl"
            if f not in chain and f.is_file():
                found[agent_id] = f
                break
    return list(found.items())


def attach_agents(
    files: Sequence[Path],
    s: Scan,
    root: TimelineSpan,
    runs: Sequence[TimelineSpan],
    run_agents: Sequence[str | None],
    read_agent: ReadAgent,
    sink: WarningSink,
) -> None:
    """Read every sub-agent of the chain and slot its span in after its Task call."""
    links = dict(s.agent_links)
    agents: list[_Agent] = []
    for agent_id, f in agent_files(files, links):
        session, nested = read_agent(f)
        for k, v in nested.items():
            links.setdefault(k, v)
        meta = _meta_json(f, sink)
        span = session.timeline.root
        span.id, span.span_type = f"agent-{agent_id}", "agent"
        span.utility = agent_id.startswith("acompact")
        span.meta = {"agent_id": agent_id, "file": str(f)}
        agent = _Agent(span, agent_id, meta.get("agentType"))
        agent.tool_use_id = meta.get("toolUseId")
        agents.append(agent)
    for span, run_agent in zip(runs, run_agents, strict=True):
        span.id = f"agent-{run_agent}" if run_agent else f"sidechain-{len(agents)}"
        span.meta = {"agent_id": run_agent} if run_agent else {}
        agents.append(_Agent(span, run_agent, None))
    for a in agents:
        if a.tool_use_id is None and a.agent_id is not None:
            a.tool_use_id = links.get(a.agent_id)
    _assign_unlinked(agents, runs, root)
    calls = _tool_calls([root, *(a.span for a in agents)])
    compactions = [e for e in root.events() if e.compaction is not None]
    # Compaction runs are matched to compactions in time order.
    agents.sort(key=lambda a: (a.span.utility, _first_time(a.span)))
    for a in agents:
        _place(a, calls, compactions, root)


def _first_time(span: TimelineSpan) -> str:
    for e in span.events():
        if e.timestamp is not None:
            return e.timestamp.isoformat()
    return ""


def _meta_json(f: Path, sink: WarningSink) -> dict[str, str]:
    meta_path = f.with_name(f"{f.stem}.meta.json")
    if not meta_path.is_file():
        return {}
    data = load_json(meta_path, sink)
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def _tool_calls(spans: list[TimelineSpan]) -> dict[str, tuple[TimelineSpan, TimelineEvent]]:
    """tool_call_id -> (span, event) for every tool call in these spans and their branches."""
    out: dict[str, tuple[TimelineSpan, TimelineEvent]] = {}
    for top in spans:
        for span in top.walk():
            for e in span.events():
                m = e.message
                if m is not None and m.type == "tool_use" and m.tool_call_id:
                    out.setdefault(m.tool_call_id, (span, e))
    return out


def _assign_unlinked(
    agents: list[_Agent], runs: Sequence[TimelineSpan], root: TimelineSpan
) -> None:
    """Old interleaved side chains without an agent id take the free Task calls in order."""
    claimed = {a.tool_use_id for a in agents if a.tool_use_id}
    free = [
        e.message.tool_call_id
        for e in root.events()
        if e.message is not None
        and e.message.type == "tool_use"
        and e.message.tool_name in _AGENT_TOOLS
        and e.message.tool_call_id not in claimed
    ]
    run_ids = {id(r) for r in runs}
    queue = iter(free)
    for a in agents:
        if a.tool_use_id is None and id(a.span) in run_ids:
            a.tool_use_id = next(queue, None)


def _contains(span: TimelineSpan, target: TimelineSpan) -> bool:
    return any(s is target for s in span.walk())


def _place(
    a: _Agent,
    calls: dict[str, tuple[TimelineSpan, TimelineEvent]],
    compactions: list[TimelineEvent],
    root: TimelineSpan,
) -> None:
    span = a.span
    target, after = root, None
    if a.tool_use_id is not None and a.tool_use_id in calls:
        target, after = calls[a.tool_use_id]
        m = after.message
        tool_input = m.tool_input if m is not None else None
        kind = tool_input.get("subagent_type") if tool_input else None
        span.name = kind if isinstance(kind, str) and kind else span.name
    elif span.utility and compactions:
        after = compactions.pop(0)
    if not span.name or span.name == "main":
        span.name = a.type_hint or (f"agent-{a.agent_id}" if a.agent_id else "sidechain")
    if a.tool_use_id is not None:
        span.meta["tool_use_id"] = a.tool_use_id
    if _contains(span, target):
        target, after = root, None  # a malformed link would nest the span inside itself
        if _contains(span, root):
            return
    content = target.content
    at = len(content)
    if after is not None:
        at = next(i for i, item in enumerate(content) if item is after) + 1
        while at < len(content) and isinstance(content[at], TimelineSpan):
            at += 1  # keep earlier sub-agents of the same call first
    content.insert(at, span)
