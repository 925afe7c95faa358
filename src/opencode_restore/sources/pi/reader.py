"""Reader for pi coding agent sessions (``~/.pi/agent/sessions/--<cwd>--/<ts>_<uuid>.jsonl``).

The tree work (migration, leaf, path, context) lives in ``tree``; this module turns
entries into unified messages. The root span holds the FULL history of the active path,
in order: with a compaction on the path, every entry before it is still there, and the
compaction itself is a ``system``/``compaction`` marker at its position (its text is the
summary). ``context_messages`` gives the narrower model-visible context instead.
Abandoned branches become child spans (``span_type="branch"``) right after the entry
they forked from.

Message ids are entry ids (v1 files get ids derived from the entry's position, see
``tree.v1_entry_id``); an entry that yields several blocks numbers the rest
``<id>.1``, ``<id>.2``…, and all of them share ``group = <id>``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from ...diagnostics import WarningSink
from ...fields import parse_timestamp
from ...model import (
    Compaction,
    Message,
    Session,
    Timeline,
    TimelineEvent,
    TimelineSpan,
    Usage,
)
from ..base import Found, MigrationResult, TreeEntry, text_of, token_count
from ..chain import ChainLink
from ..discover import Discovery
from ..rejections import mark_rejection
from . import discover, migrate, tree
from .chain import chain_link
from .tree import PiBranch, PiEntry, PiFile

#: Entry types that never become messages (settings, extension state, bookmarks).
_SILENT_TYPES = frozenset(
    {"custom", "label", "session_info", "model_change", "thinking_level_change"}
)
_HEADER_RE = re.compile(rb'^\s*\{[^\n]*"type"\s*:\s*"session"')
_ENTRY_RE = re.compile(
    rb'"type"\s*:\s*"message"\s*,[^\n]*"message"\s*:\s*\{\s*"role"\s*:\s*'
    rb'"(user|assistant|toolResult|bashExecution)"'
)


def _timestamp(entry: PiEntry, message: dict[str, Any] | None = None) -> datetime | None:
    # Messages carry unix ms, entries ISO strings; the message's own time is the finer one.
    if message is not None:
        ts = parse_timestamp(message.get("timestamp"))
        if ts is not None:
            return ts
    return parse_timestamp(entry.data.get("timestamp"))


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


class _Blocks:
    """Builds the messages of one entry with ``<id>``, ``<id>.1``… ids."""

    def __init__(self, entry: PiEntry, file_index: int, ts: datetime | None) -> None:
        self.entry, self.file_index, self.ts = entry, file_index, ts
        self.out: list[Message] = []

    def add(self, role: Any, type_: Any, text: str, **fields: Any) -> Message:
        n = len(self.out)
        m = Message(
            id=self.entry.id if n == 0 else f"{self.entry.id}.{n}",
            role=role,
            type=type_,
            text=text,
            timestamp=self.ts,
            file_index=self.file_index,
            entry_index=self.entry.line,
            group=self.entry.id,
            **fields,
        )
        self.out.append(m)
        return m


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None

    return Usage(*(token_count(raw.get(k)) for k in ("input", "output", "cacheRead", "cacheWrite")))


def _assistant(b: _Blocks, message: dict[str, Any]) -> None:
    model = message.get("model") if isinstance(message.get("model"), str) else None
    content = message.get("content")
    for block in content if isinstance(content, list) else [content]:
        if isinstance(block, str):
            block = {"type": "text", "text": block}
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and _str(block.get("text")):
            b.add("assistant", "text", block["text"], model=model)
        elif kind == "thinking" and _str(block.get("thinking")):
            b.add("assistant", "thinking", block["thinking"], model=model)
        elif kind == "toolCall":
            args = block.get("arguments")
            b.add(
                "assistant",
                "tool_use",
                orjson.dumps(args).decode() if args is not None else "",
                model=model,
                tool_name=_str(block.get("name")) or None,
                tool_call_id=_str(block.get("id")) or None,
                tool_input=args if isinstance(args, dict) else {"arguments": args},
            )
    error = _str(message.get("errorMessage"))
    usage = _usage(message.get("usage"))
    if not b.out and (error or (usage is not None and usage.total)):
        # An aborted or failed reply with no content still happened (and may have cost).
        b.add("assistant", "text", error, model=model, is_error=bool(error))
    if b.out:
        first = b.out[0]
        first.usage = usage
        if error:
            first.meta["error"] = error
        stop = message.get("stopReason")
        if stop in ("error", "aborted", "length"):
            first.meta["stop_reason"] = stop


def _bash(b: _Blocks, message: dict[str, Any]) -> None:
    # The user's `!cmd`: a command the person ran, so a synthetic user-side tool call.
    command = _str(message.get("command"))
    exit_code = message.get("exitCode")
    cancelled = message.get("cancelled") is True
    meta: dict[str, Any] = {"synthetic": True, "user_bash": True}
    if message.get("excludeFromContext") is True:
        meta["exclude_from_context"] = True
    b.add(
        "user",
        "tool_use",
        command,
        tool_name="bash",
        tool_call_id=b.entry.id,
        tool_input={"command": command},
        meta=meta,
    )
    result_meta: dict[str, Any] = {"synthetic": True, "user_bash": True}
    if isinstance(exit_code, int) and not isinstance(exit_code, bool):
        result_meta["exit_code"] = exit_code
    if cancelled:
        result_meta["cancelled"] = True
    if message.get("truncated") is True:
        result_meta["truncated"] = True
    b.add(
        "tool",
        "tool_result",
        _str(message.get("output")),
        tool_name="bash",
        tool_call_id=b.entry.id,
        is_error=cancelled or (isinstance(exit_code, int) and exit_code != 0),
        meta=result_meta,
    )


def _message_entry(b: _Blocks, sink: WarningSink, path: Path) -> None:
    message = b.entry.data.get("message")
    if not isinstance(message, dict):
        sink.warn(path, b.entry.line, "message entry without a message object; skipped")
        return
    role = message.get("role")
    if role == "user":
        b.add("user", "text", text_of(message.get("content")))
    elif role == "assistant":
        _assistant(b, message)
    elif role == "toolResult":
        mark_rejection(
            b.add(
                "tool",
                "tool_result",
                text_of(message.get("content")),
                tool_name=_str(message.get("toolName")) or None,
                tool_call_id=_str(message.get("toolCallId")) or None,
                is_error=message.get("isError") is True,
            )
        )
    elif role == "bashExecution":
        _bash(b, message)
    elif role == "custom":
        meta = {
            "synthetic": True,
            "injected": "custom",
            "custom_type": _str(message.get("customType")),
        }
        b.add("user", "text", text_of(message.get("content")), meta=meta)
    elif role in ("branchSummary", "compactionSummary"):
        meta = {"synthetic": True, "summary_of": role}
        b.add("user", "summary", _str(message.get("summary")), meta=meta)
    else:
        sink.warn(path, b.entry.line, f"unknown message role {role!r}; skipped")


def compaction_of(entry: PiEntry) -> Compaction:
    """The ``Compaction`` record of a ``compaction`` entry."""
    data = entry.data
    tokens = data.get("tokensBefore")
    return Compaction(
        kind="summary",
        summary=_str(data.get("summary")),
        first_kept_id=_str(data.get("firstKeptEntryId")) or None,
        tokens_before=tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None,
        trigger="hook" if data.get("fromHook") is True else None,
    )


def entry_messages(entry: PiEntry, file_index: int, sink: WarningSink, path: Path) -> list[Message]:
    """The unified messages of one (migrated) entry; non-message entries give none."""
    message = entry.data.get("message")
    b = _Blocks(
        entry, file_index, _timestamp(entry, message if isinstance(message, dict) else None)
    )
    kind = entry.type
    if kind == "message":
        _message_entry(b, sink, path)
    elif kind == "compaction":
        comp = compaction_of(entry)
        b.add("system", "compaction", comp.summary or "Context compacted", compaction=comp)
    elif kind == "branch_summary" and _str(entry.data.get("summary")):
        meta = {"synthetic": True, "from_id": _str(entry.data.get("fromId")) or None}
        b.add("user", "summary", entry.data["summary"], meta=meta)
    elif kind == "custom_message":
        meta = {
            "synthetic": True,
            "injected": "custom",
            "custom_type": _str(entry.data.get("customType")),
            "display": entry.data.get("display") is not False,
        }
        b.add("user", "text", text_of(entry.data.get("content")), meta=meta)
    elif kind not in _SILENT_TYPES and kind != "branch_summary":
        sink.warn(path, entry.line, f"unknown entry type {kind!r}; skipped")
    return b.out


def _event(m: Message) -> TimelineEvent:
    if m.type == "compaction":
        return TimelineEvent(m.id, "compaction", m, compaction=m.compaction, timestamp=m.timestamp)
    return TimelineEvent(m.id, "message", m, timestamp=m.timestamp)


class _FileReader:
    """Converts one parsed file's entries, applying labels, de-duplicating across files."""

    def __init__(self, pi: PiFile, file_index: int, sink: WarningSink, seen: set[str]) -> None:
        self.pi, self.file_index, self.sink, self.seen = pi, file_index, sink, seen
        self.labels = tree.resolve_labels(pi.entries)

    def messages(self, entries: Sequence[PiEntry]) -> Iterator[Message]:
        for e in entries:
            for m in entry_messages(e, self.file_index, self.sink, self.pi.path):
                if m.id in self.seen:
                    continue  # a fork's file repeats its parent's path
                self.seen.add(m.id)
                if m.id == e.id and e.id in self.labels:
                    m.meta["label"] = self.labels[e.id]
                yield m

    def span_content(
        self, entries: Sequence[PiEntry], branches: Sequence[PiBranch]
    ) -> list[TimelineEvent | TimelineSpan]:
        """Events of ``entries``, each branch's span right after the entry it forked from.

        Built from a work list, not by recursion: branches nest as deep as the file says.
        """
        top: list[TimelineEvent | TimelineSpan] = []
        work: list[tuple[Sequence[PiEntry], Sequence[PiBranch], list[Any]]] = [
            (entries, branches, top)
        ]
        while work:
            path, path_branches, out = work.pop()
            forks: dict[str | None, list[PiBranch]] = {}
            for br in path_branches:
                forks.setdefault(br.from_id, []).append(br)

            for entry in (None, *path):  # None: branches that are second roots
                if entry is not None:
                    out.extend(_event(m) for m in self.messages([entry]))
                for br in forks.get(entry.id if entry is not None else None, ()):
                    span = self._span(br)
                    out.append(span)
                    work.append((br.entries, br.branches, span.content))
        return top

    def _span(self, branch: PiBranch) -> TimelineSpan:
        first = branch.entries[0]
        return TimelineSpan(
            id=f"branch:{first.id}",
            name=self.labels.get(first.id, f"branch {first.id}"),
            span_type="branch",
            branched_from=branch.from_id,
            meta={"leaf_id": branch.entries[-1].id},
        )


def context_messages(pi: PiFile, leaf: str | None = None) -> list[Message]:
    """The model-visible context at ``leaf`` (default: the last entry) as messages.

    With a compaction on the path this is its summary marker, the kept entries from
    ``firstKeptEntryId`` and everything after the compaction (only the latest counts).
    """
    sink = WarningSink()
    ctx = tree.build_context(tree.active_path(pi, leaf))
    return [m for e in ctx.entries for m in entry_messages(e, 0, sink, pi.path)]


def _session_meta(pi: PiFile, path: Sequence[PiEntry], labels: dict[str, str]) -> dict[str, Any]:
    header = pi.header or {}
    meta: dict[str, Any] = {"version": pi.version}
    parent = header.get("parentSession") or header.get("branchedFrom")
    if isinstance(parent, str):
        meta["parent_session"] = parent
    if path:
        meta["leaf_id"] = path[-1].id
    model_changes = [
        {"entry_id": e.id, "provider": e.data.get("provider"), "model": e.data.get("modelId")}
        for e in path
        if e.type == "model_change"
    ]
    if model_changes:
        meta["model_changes"] = model_changes
    if labels:
        meta["labels"] = labels
    return meta


def _title(pi: PiFile) -> str | None:
    title = None
    for e in pi.entries:
        if e.type == "session_info" and isinstance(e.data.get("name"), str):
            title = e.data["name"] or None
    return title


class PiReader(Discovery):
    """Reads pi session files (v1, v2, v3; migrated in memory)."""

    name = "pi"
    description = "pi coding agent session JSONL (v1-v3, tree with branches and compaction)"

    file_patterns = discover.PATTERNS

    def sniff(self, path: Path, head: bytes) -> float:
        """Sure when the first line is a ``type: "session"`` header; likely for pi entries."""
        first = head.lstrip().split(b"\n", 1)[0]
        if _HEADER_RE.match(first):
            try:
                obj = orjson.loads(first)
            except orjson.JSONDecodeError:
                return 0.5  # a header longer than the sniffed head
            return 0.95 if isinstance(obj, dict) and isinstance(obj.get("id"), str) else 0.0
        return 0.4 if _ENTRY_RE.search(head) else 0.0

    def iter_messages(self, files: Sequence[Path], sink: WarningSink) -> Iterator[Message]:
        """The active path's full history across the files, oldest first."""
        seen: set[str] = set()
        for file_index, path in enumerate(files):
            pi = tree.load(path, sink)
            active = tree.path_to_root(*self._leaf(pi, sink))
            yield from _FileReader(pi, file_index, sink, seen).messages(active)

    @staticmethod
    def _leaf(pi: PiFile, sink: WarningSink) -> tuple[dict[str, PiEntry], PiEntry | None]:
        by_id = tree.index_by_id(pi, sink)
        return by_id, tree.leaf_of(pi, by_id)

    def chain_link(self, path: Path) -> ChainLink:
        """What ``path`` records about its session, to check a chain of files."""
        return chain_link(path)

    def read(self, files: Sequence[Path], sink: WarningSink) -> Session:
        """The session: active path in the root span, abandoned branches as child spans."""
        if not files:
            raise ValueError("read() needs at least one file")
        seen: set[str] = set()
        content: list[TimelineEvent | TimelineSpan] = []
        first: PiFile | None = None
        first_path: list[PiEntry] = []
        model: tuple[str, str] | None = None
        for file_index, path in enumerate(files):
            pi = tree.load(path, sink)
            active = tree.path_to_root(*self._leaf(pi, sink))
            reader = _FileReader(pi, file_index, sink, seen)
            content.extend(reader.span_content(active, tree.abandoned_branches(pi, active)))
            model = tree.build_context(active).model or model
            if first is None:
                first, first_path = pi, active
        assert first is not None  # files is not empty
        header = first.header or {}
        if model is None and isinstance(header.get("modelId"), str):
            model = (_str(header.get("provider")), header["modelId"])
        session_id = _str(header.get("id")) or Path(files[0]).stem
        meta = _session_meta(first, first_path, tree.resolve_labels(first.entries))
        if model is not None:
            meta["provider"] = model[0]
        return Session(
            id=session_id,
            agent=self.name,
            files=[str(f) for f in files],
            timeline=Timeline(
                TimelineSpan(id=session_id, name="pi", span_type="agent", content=content)
            ),
            cwd=_str(header.get("cwd")) or None,
            title=_title(first),
            model=model[1] if model is not None else None,
            started_at=parse_timestamp(header.get("timestamp")),
            warnings=list(sink.warnings),
            meta=meta,
        )

    def default_roots(self, home: Path) -> list[Path]:
        """Where the agent writes sessions under ``home`` (see ``discover``)."""
        return discover.default_roots(home)

    def describe(self, path: Path) -> Found | None:
        """What the file's first lines say of its session (see ``discover``)."""
        return discover.describe(path)

    def entry_tree(
        self, files: Sequence[Path], sink: WarningSink
    ) -> tuple[list[TreeEntry], str | None]:
        """Every entry of a pi chain (forks repeat their parent's path: first copy wins).

        The leaf is the last file's leaf; labels are replayed across the whole chain.
        """
        entries: dict[str, TreeEntry] = {}
        label_entries: list[PiEntry] = []
        leaf_id: str | None = None
        order = 0
        for file_index, path in enumerate(files):
            pi = tree.load(path, sink)
            by_id = tree.index_by_id(pi, sink)
            for entry in pi.entries:
                order += 1
                if by_id.get(entry.id) is not entry or entry.id in entries:
                    continue
                if entry.type == "label":
                    label_entries.append(entry)
                entries[entry.id] = TreeEntry(
                    id=entry.id,
                    parent_id=entry.parent_id,
                    kind=entry.type,
                    order=order,
                    messages=entry_messages(entry, file_index, sink, path),
                    timestamp=parse_timestamp(entry.data.get("timestamp")),
                    data=entry.data,
                )
            leaf = tree.leaf_of(pi, by_id)
            leaf_id = leaf.id if leaf is not None else leaf_id
        for target, label in tree.resolve_labels(label_entries).items():
            found = entries.get(target)
            if found is not None:
                found.label = label
                for m in found.messages[:1]:
                    m.meta["label"] = label
        return list(entries.values()), leaf_id

    def export_branch(self, source: Path, leaf: str, dest: Path) -> int:
        """Write the root-to-``leaf`` path of ``source`` as a new pi session file."""
        return migrate.export_pi_branch(source, leaf, dest, force=True).entries

    def migrate_file(
        self,
        source: Path,
        dest: Path | None = None,
        *,
        in_place: bool = False,
        force: bool = False,
        sink: WarningSink | None = None,
    ) -> MigrationResult:
        """Rewrite a v1/v2 pi session file in the current version."""
        return migrate.migrate_file(source, dest, in_place=in_place, force=force, sink=sink)


READER = PiReader()
