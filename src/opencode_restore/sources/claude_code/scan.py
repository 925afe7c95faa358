"""First pass over a Claude Code transcript chain: ids, links and header facts only.

Every line is parsed once, but only small facts are kept per entry (its uuid, its
parent, where it is, what kind of entry it is), in compact arrays (~90 bytes per entry
with its uuid's text; a dict and lists of them took ~200), so memory grows with the
number of entries, never with the text of the log. The second pass re-reads only the
lines the conversation tree says are wanted.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import msgspec
import orjson

from ...diagnostics import WarningSink
from ..base import LINE_BUFFER, MAX_JSON_DEPTH, iter_lines, loads_capped
from ..strindex import StrIndex
from .line import DECODER, NOISE, SYSTEM, TOOL_RESULT, Line, classify, coerce

#: Root marker in ``Scan.parent``.
NO_PARENT = -1
_UNRESOLVED = -2
_AGENT_ID_RE = re.compile(r"agentId: ([\w-]+)")
_CONVERSATION_TYPES = ("user", "assistant", "system")


@dataclass(slots=True)
class Boundary:
    """A compact boundary's links: its logical parent and the preserved tail, if any."""

    logical_parent: str | None
    preserved: list[str]


@dataclass(slots=True)
class Scan:
    """What the first pass learnt. Entries are numbered in file order (oldest file first)."""

    #: each entry's uuid, numbered by entry (``get`` finds an entry, -1 when absent)
    uuids: StrIndex = field(default_factory=StrIndex)
    parent: array[int] = field(default_factory=lambda: array("i"))
    #: each entry's file (its place in the chain) and line number
    file: array[int] = field(default_factory=lambda: array("i"))
    line: array[int] = field(default_factory=lambda: array("q"))
    #: byte offset of each entry's line in its file: the second pass seeks to it
    offset: array[int] = field(default_factory=lambda: array("q"))
    kind: bytearray = field(default_factory=bytearray)
    side: bytearray = field(default_factory=bytearray)
    boundaries: dict[int, Boundary] = field(default_factory=dict)
    #: parentless entries -> (newest main-line conversation entry before it, newest of any)
    roots: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: conversation entries outside side chains
    main_messages: int = 0
    session_id: str | None = None
    session_ids: list[str] = field(default_factory=list)
    cwd: str | None = None
    slug: str | None = None
    model: str | None = None
    version: str | None = None
    started: str | None = None
    summaries: list[tuple[str | None, str]] = field(default_factory=list)
    custom_title: str | None = None
    #: agentId -> the tool_use id of the Task call that started it.
    agent_links: dict[str, str] = field(default_factory=dict)
    #: side-chain entry -> the agentId written on it (older builds interleave sub-agents).
    side_agents: dict[int, str] = field(default_factory=dict)

    def where(self, nid: int) -> tuple[int, int]:
        """Entry ``nid``'s (file index, line number): its place in the chain's order."""
        return self.file[nid], self.line[nid]

    def subset(self, entries: Sequence[int]) -> Scan:
        """Only the positions of ``entries`` (renumbered from 0, in that order): what
        ``read_entries`` needs to read them again, without the rest of the log's ids."""
        out = Scan()
        for n in entries:
            out.uuids.add(self.uuids[n])
        out.file = array("i", (self.file[n] for n in entries))
        out.line = array("q", (self.line[n] for n in entries))
        out.offset = array("q", (self.offset[n] for n in entries))
        return out

    def title(self) -> str | None:
        """A user-set title, else the summary tied to one of our entries, else any summary."""
        if self.custom_title:
            return self.custom_title
        for leaf, text in self.summaries:
            if leaf is not None and leaf in self.uuids:
                return text
        return self.summaries[0][1] if self.summaries else None


def scan(files: Sequence[Path], sink: WarningSink, agents: bool = True) -> Scan:
    """Run the first pass over a chain of files, oldest first; ``agents``: also note
    which Task call started each sub-agent (``Scan.agent_links``, which re-parses the
    tool results that name one)."""
    sc = _Scanner(agents)
    for fi, path in enumerate(files):
        try:
            fh = path.open("rb", buffering=LINE_BUFFER)
        except OSError as exc:
            sink.warn(path, 0, f"cannot read: {exc.strerror}; skipped")
            continue
        with fh:
            sc.scan_file(fh, fi, path, sink)
    return sc.finish()


class _Scanner:
    """The first pass's state while files are read."""

    __slots__ = ("agents", "last_any", "last_main", "pending", "s")

    def __init__(self, agents: bool) -> None:
        self.s = Scan()
        self.agents = agents
        self.pending: dict[int, str] = {}
        self.last_main = NO_PARENT
        self.last_any = NO_PARENT

    def repeat(
        self, seen: int, fi: int, lineno: int, offset: int, is_side: bool, kind: int
    ) -> None:
        """A uuid seen before (a resume repeats lines into a new file): the first copy
        wins, unless it had nothing to show and this one has."""
        s = self.s
        if kind and not s.kind[seen] and s.side[seen] == is_side:
            s.kind[seen], s.offset[seen] = kind, offset
            s.file[seen], s.line[seen] = fi, lineno
            s.main_messages += not is_side
            self.last_any = seen
            if not is_side:
                self.last_main = seen

    def finish(self) -> Scan:
        s = self.s
        for nid, puid in self.pending.items():
            p = s.uuids.get(puid)
            s.parent[nid] = p
            if p != NO_PARENT:
                del s.roots[nid]
        return s

    def scan_file(self, fh: IO[bytes], fi: int, path: Path, sink: WarningSink) -> None:
        """Record the entries of one file (``fi`` is its place in the chain)."""
        s = self.s
        decode = DECODER.decode
        uuids, roots, pending = s.uuids, s.roots, self.pending
        add_uuid, find_uuid = uuids.add, uuids.get
        parent_append = s.parent.append
        file_append, line_append, offset_append = s.file.append, s.line.append, s.offset.append
        side_append, kind_append = s.side.append, s.kind.append
        # The entry added last: most lines hang under it, found without a lookup.
        last_uid, last_nid = None, NO_PARENT
        last_sid: str | None = None
        header_missing = True
        end = 0
        for lineno, raw, size in iter_lines(fh, path, sink):
            start = end
            end += size
            if not raw:
                continue
            try:
                line = decode(raw)
                if not raw.isascii():
                    raw.decode()  # msgspec does not check the UTF-8 of fields it skips
            except RecursionError:
                # msgspec recurses, even over the fields it skips (tool input): a line
                # nested ~1,000 deep overflows it. Such a line is skipped, as any line
                # nested deeper than the readers follow.
                sink.warn(path, lineno, f"JSON nested more than {MAX_JSON_DEPTH} deep; skipped")
                continue
            except ValueError:  # bad JSON, bad UTF-8, or fields of unexpected types
                found = _fallback(raw, path, lineno, sink)
                if found is None:
                    continue
                line = found
            typ = line.type
            uid = line.uuid
            is_side = line.isSidechain is True
            if typ == "progress" and uid is not None:
                k = NOISE  # most lines of a real log: hook and tool progress
            else:
                if uid is None:
                    if typ not in _CONVERSATION_TYPES:
                        _note_other(s, line, path, lineno, sink)
                        continue
                    # A conversation line without a uuid still belongs to the story.
                    uid = f"{fi}:{lineno}"
                k = classify(line)
            nid = len(uuids)
            seen = add_uuid(uid)
            if seen != nid:
                self.repeat(seen, fi, lineno, start, is_side, k)
                continue
            puid = line.parentUuid
            if puid is None:
                p = NO_PARENT
            elif puid == last_uid:
                p = last_nid
            else:
                p = find_uuid(puid)
                if p == NO_PARENT:
                    p = _UNRESOLVED
                    pending[nid] = puid
            last_uid, last_nid = uid, nid
            if p < 0:
                roots[nid] = (self.last_main, self.last_any)
            parent_append(p)
            file_append(fi)
            line_append(lineno)
            offset_append(start)
            side_append(is_side)
            kind_append(k)
            if k:
                self.last_any = nid
                if not is_side:
                    self.last_main = nid
                    s.main_messages += 1
            elif typ == "progress":
                data = line.data
                if data is not None and data.type == "agent_progress":
                    _link(s, data.agentId, line.parentToolUseID)
                continue
            if line.sessionId != last_sid or header_missing:
                last_sid = line.sessionId
                _note_session(s, line)
                header_missing = s.cwd is None or s.started is None or s.version is None
            if s.slug is None and line.slug is not None:
                s.slug = line.slug
            if is_side and line.agentId is not None:
                s.side_agents[nid] = line.agentId
            if k == SYSTEM and line.subtype == "compact_boundary":
                s.boundaries[nid] = _boundary(line)
            elif k == TOOL_RESULT and self.agents and b'"agentId' in raw:
                _note_agent_result(s, loads_capped(raw))
            elif s.model is None and typ == "assistant" and line.message is not None:
                model = line.message.model
                if model and not model.startswith("<"):
                    s.model = model


def _fallback(raw: bytes, path: Path, lineno: int, sink: WarningSink) -> Line | None:
    """A line the typed decoder refused: report it, or keep the fields that fit."""
    try:
        obj = loads_capped(raw)
    except orjson.JSONDecodeError as exc:
        if not raw.strip():
            return None
        what = "truncated last line" if not raw.endswith(b"\n") else "invalid JSON"
        sink.warn(path, lineno, f"{what} ({exc.msg}); skipped")
        return None
    if type(obj) is not dict:
        sink.warn(path, lineno, f"JSON {type(obj).__name__} is not an object; skipped")
        return None
    return coerce(obj)


def _note_session(s: Scan, line: Line) -> None:
    sid = line.sessionId
    if sid is not None and sid not in s.session_ids:
        s.session_ids.append(sid)
        if s.session_id is None:
            s.session_id = sid
    if s.cwd is None:
        s.cwd = line.cwd
    if s.version is None:
        s.version = line.version
    if s.started is None:
        s.started = line.timestamp


def _note_other(s: Scan, line: Line, path: Path, lineno: int, sink: WarningSink) -> None:
    if line.type == "summary" and line.summary is not None:
        s.summaries.append((line.leafUuid, line.summary))
    elif line.type == "custom-title" and line.customTitle:
        s.custom_title = line.customTitle
    elif line.type is None:
        sink.warn(path, lineno, "object without a type; skipped")


def _boundary(line: Line) -> Boundary:
    meta = _raw_dict(line.compactMetadata)
    preserved: list[str] = []
    pm = meta.get("preservedMessages")
    ps = meta.get("preservedSegment")
    if isinstance(pm, dict) and isinstance(pm.get("uuids"), list):
        preserved = [u for u in pm["uuids"] if isinstance(u, str)]
    elif isinstance(ps, dict):
        preserved = [u for u in (ps.get("headUuid"), ps.get("tailUuid")) if isinstance(u, str)]
    return Boundary(line.logicalParentUuid, preserved)


def _raw_dict(raw: msgspec.Raw) -> dict[str, Any]:
    try:
        value = loads_capped(bytes(raw))
    except orjson.JSONDecodeError:  # pragma: no cover - msgspec checked it already
        return {}
    return value if isinstance(value, dict) else {}


def _note_agent_result(s: Scan, obj: dict[str, Any]) -> None:
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return
    result = obj.get("toolUseResult")
    agent = result.get("agentId") if isinstance(result, dict) else None
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "tool_result":
            continue
        call_id = block.get("tool_use_id")
        if agent is None:
            inner = block.get("content")
            texts = [inner] if isinstance(inner, str) else inner if isinstance(inner, list) else []
            for t in texts:
                t = t.get("text") if isinstance(t, dict) else t
                if isinstance(t, str) and "agentId: " in t:
                    found = _AGENT_ID_RE.search(t)
                    if found:
                        _link(s, found.group(1), call_id)
        else:
            _link(s, agent, call_id)
        return


def _link(s: Scan, agent: Any, call_id: Any) -> None:
    if isinstance(agent, str) and isinstance(call_id, str):
        s.agent_links.setdefault(agent, call_id)
