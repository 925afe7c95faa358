"""The reader protocol and the streaming line helpers every reader shares."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Protocol, runtime_checkable

import orjson

from ..diagnostics import WarningSink
from ..errors import SourceError
from ..model import Message, Session

#: How many bytes of a file ``sniff`` gets to look at.
SNIFF_BYTES = 64 * 1024


@dataclass(slots=True)
class Found:
    """One session found on disk, with what its input says of itself cheaply."""

    agent: str
    session_id: str
    #: The session's file, or the container (database, storage tree, eval log) holding it.
    path: Path
    cwd: str | None = None
    title: str | None = None
    started: datetime | None = None
    updated: datetime | None = None
    #: A name the files of one session share across new session ids (Claude Code's
    #: ``slug`` survives ``/clear``): see :func:`merge_slugs`.
    slug: str | None = None
    #: A sub-agent transcript: part of its parent session, not one itself.
    sidechain: bool = False
    #: Known to a previous store scan unchanged, under this session id.
    registered_id: str | None = None

    def __post_init__(self) -> None:
        # The cwd goes to the store (session lists, the API) as found: redacted here,
        # as ``open_session`` redacts a session's.
        if self.cwd:
            from ..redact import redact

            self.cwd = redact(self.cwd)[0]


class Reader(Protocol):
    """One log format. Readers only normalize; they never summarize.

    Besides reading, a reader knows where its agent keeps sessions
    (:meth:`default_roots`, :meth:`session_files`) and what a session file says of
    itself in its first lines (:meth:`describe`), so discovery needs no format knowledge.
    """

    #: Short name used by ``--agent`` (e.g. ``claude-code``).
    name: str
    #: One line for ``opencode-restore formats``.
    description: str

    def sniff(self, path: Path, head: bytes) -> float:
        """Confidence in 0..1 that ``path`` (whose first bytes are ``head``) is this format."""
        ...

    def iter_messages(self, files: Sequence[Path], sink: WarningSink) -> Iterator[Message]:
        """Stream the active conversation's messages across the chain, oldest first."""
        ...

    def read(self, files: Sequence[Path], sink: WarningSink) -> Session:
        """Read the whole session (timeline with sub-agents and branches)."""
        ...

    def default_roots(self, home: Path) -> list[Path]:
        """Where the agent writes sessions under ``home``; empty when it has no place."""
        ...

    def session_files(self, root: Path) -> list[Path]:
        """The inputs under ``root`` that may hold sessions of this format, sorted."""
        ...

    def describe(self, path: Path) -> Found | None:
        """What a session file says of itself in its first lines (None: nothing to say)."""
        ...

    def list_sessions(self, path: Path, sink: WarningSink) -> list[Found]:
        """The sessions ``path`` holds: for a session file, what :meth:`describe` says."""
        ...


@dataclass(frozen=True, slots=True)
class SessionChoice:
    """One session of a container: an input that holds several (a store, an eval log)."""

    id: str
    title: str | None = None
    #: The session's last activity, when the container records it.
    updated: datetime | None = None
    #: Shorter names that select it too (an Inspect sample's ``id`` or ``id:epoch``).
    aliases: tuple[str, ...] = ()


@runtime_checkable
class ContainerReader(Protocol):
    """A reader whose inputs may hold several sessions; ``session`` names one.

    With ``session=None`` an input holding exactly one session is read; one holding
    several is an error listing them (:func:`choose_session`): nothing is dropped
    without saying so. Its ``list_sessions`` lists the top-level sessions, each
    named by the id ``session`` takes.
    """

    name: str
    #: Whether a session id names the same session in every input of the format (opencode's
    #: database and storage tree hold the same sessions) or only within its own input (an
    #: eval log's sample ids repeat across logs).
    ids_span_inputs: bool

    def sessions(self, files: Sequence[Path], sink: WarningSink) -> list[SessionChoice]:
        """The sessions the input holds, in the container's order."""
        ...

    def iter_messages(
        self, files: Sequence[Path], sink: WarningSink, session: str | None = None
    ) -> Iterator[Message]:
        """Stream the chosen session's active conversation."""
        ...

    def read(self, files: Sequence[Path], sink: WarningSink, session: str | None = None) -> Session:
        """Read the chosen session."""
        ...


@dataclass(slots=True)
class Checkpoint:
    """Where a tail read may start: byte ``offset`` starts line ``lines_before + 1``."""

    offset: int
    lines_before: int


@runtime_checkable
class TailReader(Protocol):
    """A reader of an append-only line format that can read from a checkpoint on.

    ``since`` requests of the session store seek each file to a checkpoint
    (``store.checkpoints``) and read only the lines after it.
    """

    def line_facts(self, raw: bytes) -> tuple[float | None, bool]:
        """``(timestamp as epoch seconds, a tail may start here)`` of one raw line."""
        ...

    def read_tail(
        self, files: Sequence[Path], starts: Sequence[Checkpoint | None], sink: WarningSink
    ) -> Iterator[Message] | None:
        """The messages after ``starts[i]`` of each file (None: skip the file).

        None when the tails are no plain continuation: the chain must be read whole.
        """
        ...


@runtime_checkable
class HollowReader(Protocol):
    """A reader that can leave the bodies of the active conversation in its files.

    ``read_hollow`` reads as ``read`` does, except that the root span's tool calls, tool
    results, thinking and assistant replies come with empty text and no tool input, and
    the session's ``bodies`` streams them back whole, in the same order (a restore takes
    them one turn at a time). None when this input cannot be read that way.
    """

    def read_hollow(self, files: Sequence[Path], sink: WarningSink) -> Session | None:
        """The session with the active conversation's bodies left in the files."""
        ...


@dataclass(slots=True)
class TreeEntry:
    """One entry of a log that keeps the whole session tree (pi), as the file holds it."""

    id: str
    parent_id: str | None
    #: The entry's type in its format (``message``, ``compaction``, ``label``, ...).
    kind: str
    #: Position across the chain's files, for "written last" decisions.
    order: int
    messages: list[Message]
    timestamp: datetime | None
    #: The raw entry, for writing it back to a session file.
    data: dict[str, Any]
    label: str | None = None


@dataclass(slots=True)
class MigrationResult:
    """What a format's ``migrate_file`` did."""

    source: Path
    from_version: int
    to_version: int
    entries: int
    #: The file written, or None when the source was already current.
    written: Path | None = None
    #: The copy of the original kept by an in-place migration.
    backup: Path | None = None


@runtime_checkable
class TreeReader(Protocol):
    """A format whose files keep every entry of the session tree: read it, cut a branch, migrate."""

    def entry_tree(
        self, files: Sequence[Path], sink: WarningSink
    ) -> tuple[list[TreeEntry], str | None]:
        """Every entry of the chain (first copy wins), labels applied, and the leaf's id."""
        ...

    def export_branch(self, source: Path, leaf: str, dest: Path) -> int:
        """Write the root-to-``leaf`` path of ``source`` to ``dest``; the entries written."""
        ...

    def migrate_file(
        self,
        source: Path,
        dest: Path | None = None,
        *,
        in_place: bool = False,
        force: bool = False,
        sink: WarningSink | None = None,
    ) -> MigrationResult:
        """Rewrite ``source`` in the format's current version."""
        ...


def is_complete_line(raw: bytes) -> bool:
    """True for a last line without a newline that is nevertheless whole JSON."""
    try:
        orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    return True


def merge_slugs(found: list[Found]) -> list[Found]:
    """Give the files of one folder that share a slug the id of the oldest of them.

    The reader stitches such a chain into one session (all ids kept in its
    ``session_ids``), so it must be one session in the store and in a batch too.
    """
    groups: dict[tuple[str, Path, str], list[Found]] = {}
    for f in found:
        if f.slug:
            groups.setdefault((f.agent, f.path.parent, f.slug), []).append(f)
    for group in groups.values():
        if len({f.session_id for f in group}) > 1:
            first = min(group, key=found_order)
            for f in group:
                f.session_id = first.session_id
    return found


def found_order(item: Found) -> tuple[str, str]:
    """Oldest first (start time, else last activity), then by path."""
    started = item.started or item.updated
    when = started.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ") if started else ""
    return (when, str(item.path))


#: How many candidates an ambiguity error lists before "... and N more".
_MAX_LISTED = 20
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


_NEVER = datetime.min.replace(tzinfo=UTC)


def _listing(choices: Sequence[SessionChoice]) -> str:
    """One indented line per candidate, newest activity first: id, last activity, title."""
    # A stable sort: sessions of the same time stay in the container's order.
    newest = sorted(choices, key=lambda c: c.updated or _NEVER, reverse=True)
    lines = []
    for c in newest[:_MAX_LISTED]:
        when = c.updated.strftime("%Y-%m-%d %H:%M:%SZ") if c.updated is not None else "-"
        # Titles come from the log: one line, no control characters, cut short.
        title = " ".join(_CONTROL.sub(" ", c.title or "").split())
        title = title if len(title) <= 70 else title[:69] + "…"
        lines.append(f"  {c.id}  {when}  {title}".rstrip())
    if len(newest) > _MAX_LISTED:
        lines.append(f"  ... and {len(newest) - _MAX_LISTED} more")
    return "\n".join(lines)


def choose_session(
    path: str | Path, choices: Sequence[SessionChoice], wanted: str | None
) -> SessionChoice:
    """The session ``wanted`` names among ``choices`` (or the only one when ``None``).

    ``wanted`` matches an id or alias exactly, else a unique prefix of an id. No
    match, several matches, or several sessions and no choice: a ``SourceError``
    that lists the candidates (id, last activity, title), so nothing is silently cut.
    """
    if wanted is None:
        if len(choices) == 1:
            return choices[0]
        if not choices:
            raise SourceError(str(path), "holds no session")
        raise SourceError(
            str(path),
            f"holds {len(choices)} sessions; choose one with --session ID:\n{_listing(choices)}",
        )
    exact = [c for c in choices if wanted == c.id or wanted in c.aliases]
    found = exact or [c for c in choices if c.id.startswith(wanted)]
    if len(found) == 1:
        return found[0]
    if found:
        what = f"--session {wanted!r} matches {len(found)} sessions"
        raise SourceError(str(path), f"{what}; give more of the id:\n{_listing(found)}")
    listing = f"; it holds:\n{_listing(choices)}" if choices else " (it holds none)"
    raise SourceError(str(path), f"no session {wanted!r} here{listing}")


#: Read buffer for files iterated line by line: with the default 8 KB, every line longer
#: than the buffer (tool output, file contents) is assembled from several reads, which
#: made iterating a real 200 MB log 2.5x slower.
LINE_BUFFER = 1 << 20


#: Longest log line read, in bytes (``OPENCODE_RESTORE_MAX_LINE_BYTES``): a longer one is
#: reported and skipped without being held whole (a 4 GB line took 8 GB to read).
MAX_LINE_BYTES = 64 << 20


def max_line_bytes() -> int:
    """The line cap: ``OPENCODE_RESTORE_MAX_LINE_BYTES`` when set to a positive integer."""
    value = os.environ.get("OPENCODE_RESTORE_MAX_LINE_BYTES", "")
    return int(value) if value.isdigit() and int(value) > 0 else MAX_LINE_BYTES


def iter_lines(
    fh: IO[bytes],
    path: str | Path,
    sink: WarningSink,
    limit: int | None = None,
    lines_before: int = 0,
) -> Iterator[tuple[int, bytes, int]]:
    """``(line number, raw line, its size in bytes)`` of ``fh``, numbered after
    ``lines_before`` (the lines before where ``fh`` stands).

    A line over ``limit`` bytes is reported and comes as ``b""`` with its real size (it is
    counted in chunks, never read whole), so sizes still add up to byte offsets.
    """
    cap = max_line_bytes() if limit is None else limit
    readline = fh.readline
    lineno = lines_before
    while raw := readline(cap + 1):
        lineno += 1
        if len(raw) <= cap or raw.endswith(b"\n"):
            yield lineno, raw, len(raw)
            continue
        size = len(raw)
        while (rest := readline(1 << 20)) and not rest.endswith(b"\n"):
            size += len(rest)
        size += len(rest)
        sink.warn(path, lineno, f"line of {size} bytes, over the {cap}-byte limit; skipped")
        yield lineno, b"", size


#: Deepest nesting of a log's JSON values: real logs stay under 30, and deeper values
#: overflow the recursive walks downstream (redaction; orjson dumps 254 levels at most).
MAX_JSON_DEPTH = 128


def too_deep(raw: bytes, value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when ``value`` (parsed from ``raw``) nests containers deeper than ``limit``.

    The walk, without recursion, runs only when ``raw`` has enough brackets to be that
    deep, so ordinary lines cost two byte counts.
    """
    if raw.count(b"{") + raw.count(b"[") <= limit:
        return False
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


def loads_capped(raw: bytes | str, limit: int = MAX_JSON_DEPTH) -> Any:
    """``orjson.loads`` that also refuses a value nested deeper than ``limit``.

    Raises ``orjson.JSONDecodeError`` (message ``nested more than N deep``) for such a
    value, so callers handle it as any bad JSON: nothing deeper ever reaches the
    recursive walks downstream (redaction, text extraction), whose Python recursion
    limit a value ~1,000 deep overflows.
    """
    value = orjson.loads(raw)
    data = raw.encode() if isinstance(raw, str) else raw
    if too_deep(data, value, limit):
        raise orjson.JSONDecodeError(f"nested more than {limit} deep", "", 0)
    return value


def iter_json_lines(path: Path, sink: WarningSink) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each JSON-object line of a JSONL file.

    Streams in binary (a 1 GB file is never held in memory). Blank lines are
    ignored; invalid JSON, invalid UTF-8, non-object values and a truncated last
    line are reported to ``sink`` with the file and line, then skipped.
    """
    loads = orjson.loads
    with path.open("rb", buffering=LINE_BUFFER) as fh:
        for lineno, raw, _ in iter_lines(fh, path, sink):
            if not raw.strip():
                continue
            try:
                obj = loads(raw)
            except orjson.JSONDecodeError as exc:
                truncated = not raw.endswith(b"\n")
                what = "truncated last line" if truncated else f"invalid JSON ({exc.msg})"
                sink.warn(path, lineno, f"{what}; skipped")
                continue
            if not isinstance(obj, dict):
                sink.warn(path, lineno, f"JSON {type(obj).__name__} is not an object; skipped")
                continue
            if too_deep(raw, obj):
                sink.warn(path, lineno, f"JSON nested more than {MAX_JSON_DEPTH} deep; skipped")
                continue
            yield lineno, obj


def load_json(path: Path, sink: WarningSink) -> Any:
    """Load a whole-file JSON document, tolerating junk before the first ``{``.

    Returns ``None`` (after reporting) when the file holds no JSON object.
    """
    data = path.read_bytes()
    start = data.find(b"{")
    if start < 0:
        sink.warn(path, 1, "no JSON object found")
        return None
    if start > 0:
        sink.warn(path, 1, f"skipped {start} bytes before the first '{{'")
    try:
        value = orjson.loads(data[start:])
    except orjson.JSONDecodeError as exc:
        line = data.count(b"\n", 0, start + exc.pos) + 1
        sink.warn(path, line, f"invalid JSON ({exc.msg})")
        return None
    if too_deep(data, value):
        sink.warn(path, 1, f"JSON nested more than {MAX_JSON_DEPTH} deep; not read")
        return None
    return value


def text_of(content: Any) -> str:
    """Flatten a string or a list of text-ish blocks into plain text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                t = block.get("text")
                if isinstance(t, str):
                    parts.append(t)
                elif block.get("type") == "image":
                    parts.append("<image />")
        return "\n".join(parts)
    if isinstance(content, dict):
        t = content.get("text")
        return t if isinstance(t, str) else orjson.dumps(content).decode()
    return str(content)


def token_count(value: Any) -> int:
    """A token count read from a log: a non-negative int, else 0.

    Logs are untrusted: a count may be missing, a string, a bool or negative, and a
    negative one would make totals and costs lie.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return 0
    return int(value)
