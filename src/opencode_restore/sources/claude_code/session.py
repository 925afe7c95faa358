"""Assembling a Claude Code ``Session``: the second pass, spans, branches and sub-agents."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import orjson

from ...diagnostics import WarningSink
from ...fields import parse_timestamp
from ...model import EventKind, Message, Session, Timeline, TimelineEvent, TimelineSpan
from ..base import LINE_BUFFER, MAX_JSON_DEPTH, max_line_bytes, too_deep
from .agents import attach_agents
from .convert import Converter, attach_summaries
from .scan import NO_PARENT, Scan, scan
from .tree import Layout, build_tree


def read_entries(
    files: Sequence[Path], s: Scan, entries: Sequence[int], sink: WarningSink
) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """Second pass: ``(entry id, uuid, parsed line)`` of only the lines of ``entries``
    (entry ids), in file order.

    Each line is read at the byte offset the first pass noted, so the lines not
    wanted (hook and tool progress: most of a real log) are never read again. A line
    that is not there any more (the file was rewritten, not appended to) is skipped
    with a warning.
    """
    loads = orjson.loads
    cap = max_line_bytes()
    uuids, files_of, offsets = s.uuids, s.file, s.offset
    fh: IO[bytes] | None = None
    current = -1
    try:
        for nid in _in_file_order(s, entries):
            fi = files_of[nid]
            if fi != current:
                current = fi
                if fh is not None:
                    fh.close()
                try:
                    # Wanted lines are close together: most seeks stay inside the buffer.
                    fh = files[fi].open("rb", buffering=LINE_BUFFER)
                except OSError as exc:
                    fh = None
                    sink.warn(files[fi], 0, f"cannot re-read: {exc.strerror}; skipped")
            if fh is None:
                continue
            fh.seek(offsets[nid])
            raw = fh.readline(cap + 1)
            try:
                obj = loads(raw)
            except orjson.JSONDecodeError:
                obj = None
            # An entry without a uuid got a made-up one: only its JSON can be checked.
            if type(obj) is dict and too_deep(raw, obj):
                lineno = s.line[nid]
                sink.warn(
                    files[fi], lineno, f"JSON nested more than {MAX_JSON_DEPTH} deep; skipped"
                )
            elif type(obj) is dict and obj.get("uuid", uid := uuids[nid]) == uid:
                yield nid, uid, obj
            else:
                sink.warn(files[fi], s.line[nid], "line changed while reading; skipped")
    finally:
        if fh is not None:
            fh.close()


def _in_file_order(s: Scan, entries: Sequence[int]) -> Sequence[int]:
    """``entries`` ordered by their place in the chain: as given, without a copy, when
    they are already (the live path, unless a resume moved an entry to a later file)."""
    files_of, lines = s.file, s.line
    last_file = last_line = -1
    for nid in entries:
        fi, line = files_of[nid], lines[nid]
        if fi < last_file or (fi == last_file and line < last_line):
            return sorted(entries, key=s.where)
        last_file, last_line = fi, line
    return entries


def stream_entries(
    files: Sequence[Path], s: Scan, entries: Sequence[int], sink: WarningSink
) -> Iterator[Message]:
    """The messages of ``entries`` (a conversation path, in order), read again from the
    files; memory holds their positions, never the log's text."""
    conv = Converter()

    def gen() -> Iterator[Message]:
        for nid, uid, obj in read_entries(files, s, entries, sink):
            yield from conv.convert(obj, uid, s.file[nid], s.line[nid])

    return attach_summaries(gen())


def _bodies(
    files: Sequence[Path], s: Scan, entries: Sequence[int]
) -> Callable[[], Iterator[Message]]:
    """A hollow session's ``bodies``: its live path streamed again from the positions of
    that path alone (the rest of the first pass is let go)."""
    path = s.subset(entries)
    every = range(len(entries))
    # The read gave the warnings already: a second sink keeps them from doubling.
    return lambda: stream_entries(files, path, every, WarningSink())


class _Plan:
    """A span being filled: its layout, its messages, and its planned branch spans."""

    __slots__ = ("branches", "layout", "messages", "span")

    def __init__(self, span: TimelineSpan, layout: Layout) -> None:
        self.span = span
        self.layout = layout
        self.messages: list[Message] = []
        self.branches: list[tuple[int, _Plan]] = []


def read_session(
    files: Sequence[Path], sink: WarningSink, with_agents: bool, hollow: bool = False
) -> Session:
    """Build a ``Session``; sub-agent files are looked up only when ``with_agents``.

    A sub-agent's own file (every entry a side chain of one ``agentId``) read on its
    own is that agent's session, not its parent's: its id is the ``agentId`` and
    ``meta["parent_session_id"]`` links the parent, so its saved restore state never
    replaces the parent's. ``hollow``: see ``base.HollowReader``.
    """
    session, s = _read(files, sink, with_agents, hollow)
    agents = set(s.side_agents.values())
    if with_agents and s.main_messages == 0 and len(agents) == 1:
        parent = session.id
        session.id = agents.pop()
        session.timeline.root.id = session.id
        session.meta.update(parent_session_id=parent, agent_id=session.id)
    return session


def _read_agent(sink: WarningSink) -> Callable[[Path], tuple[Session, dict[str, str]]]:
    def read_agent(path: Path) -> tuple[Session, dict[str, str]]:
        session, s = _read([path], sink, with_agents=False)
        return session, s.agent_links

    return read_agent


def _empty(m: Message) -> None:
    """Leave ``m``'s body in the file: what reading needs of it is kept (user and system
    text settle slash commands, summaries fill compactions)."""
    if m.type in ("tool_use", "tool_result", "thinking") or (
        m.role == "assistant" and m.type == "text"
    ):
        m.text = ""
        m.tool_input = None


def _read(
    files: Sequence[Path], sink: WarningSink, with_agents: bool, hollow: bool = False
) -> tuple[Session, Scan]:
    first_warning = len(sink.warnings)
    s = scan(files, sink)
    tree = build_tree(s, files, sink)
    sid = s.session_id or (files[0].stem if files else "")
    owner: dict[int, list[Message]] = {}
    root = _plan(s, TimelineSpan(sid, "main", "agent"), tree.main, sid, owner)
    runs = [_plan(s, TimelineSpan("", "", "agent"), lay, sid, owner) for lay in tree.side_runs]
    conv = Converter()
    for nid, uid, obj in read_entries(files, s, list(owner), sink):
        converted = conv.convert(obj, uid, s.file[nid], s.line[nid])
        held = owner[nid]
        if hollow and held is root.messages:
            for m in converted:
                _empty(m)
        held.extend(converted)
    _finish(s, root)
    for run in runs:
        _finish(s, run)
    if with_agents:
        run_agents = [s.side_agents.get(r.layout.active[0]) for r in runs]
        spans = [r.span for r in runs]
        attach_agents(files, s, root.span, spans, run_agents, _read_agent(sink), sink)
    meta: dict[str, Any] = {}
    if s.slug:
        meta["slug"] = s.slug
    if s.version:
        meta["version"] = s.version
    if len(s.session_ids) > 1:
        meta["session_ids"] = list(s.session_ids)
    session = Session(
        id=sid,
        agent="claude-code",
        files=[str(p) for p in files],
        timeline=Timeline(root.span, name=s.title() or ""),
        cwd=s.cwd,
        title=s.title(),
        model=s.model,
        started_at=parse_timestamp(s.started),
        warnings=list(sink.warnings[first_warning:]),
        meta=meta,
        bodies=_bodies(files, s, tree.main.active) if hollow else None,
    )
    return session, s


def _plan(s: Scan, span: TimelineSpan, layout: Layout, sid: str, owner: dict[int, Any]) -> _Plan:
    plan = _Plan(span, layout)
    for nid in layout.active:
        owner[nid] = plan.messages
    for fork, sub in layout.branches:
        first = s.uuids[sub.active[0]] if sub.active else ""
        branch = TimelineSpan(f"{sid}@{first}", f"branch@{first}", "branch")
        branch.branched_from = s.uuids[fork] if fork != NO_PARENT else None
        plan.branches.append((fork, _plan(s, branch, sub, sid, owner)))
    return plan


def _finish(s: Scan, plan: _Plan) -> None:
    """Turn a plan's messages into events and slot each branch in after its fork."""
    content: list[TimelineEvent | TimelineSpan] = []
    keys: list[tuple[int, int]] = []
    for m in attach_summaries(plan.messages):
        kind: EventKind = "compaction" if m.compaction is not None else "message"
        content.append(
            TimelineEvent(m.id, kind, message=m, compaction=m.compaction, timestamp=m.timestamp)
        )
        keys.append((m.file_index, m.entry_index))
    for fork, sub in plan.branches:
        _finish(s, sub)
        at = bisect_right(keys, s.where(fork)) if fork != NO_PARENT else 0
        content.insert(at, sub.span)
        keys.insert(at, s.where(fork) if fork != NO_PARENT else (-1, -1))
    plan.span.content = content
