"""Readers, one per log format, and automatic format detection.

Each format is a package whose ``reader`` module exposes ``READER``; this package picks
one by ``--agent`` or by sniffing the first bytes of the first file.
"""

from __future__ import annotations

import importlib
import stat
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TypeGuard

from ..diagnostics import WarningSink
from ..errors import SourceError
from ..model import Message, Session
from .base import SNIFF_BYTES, ContainerReader, HollowReader, Reader
from .ids import IdGuard, unique_ids

#: Reader names and their format packages, in detection order (ties go to the earlier one).
_READER_MODULES = {
    "claude-code": "claude_code",
    "codex": "codex",
    "gemini": "gemini",
    "pi": "pi",
    "opencode": "opencode",
    "inspect": "inspect",
    "terminal": "terminal",
}

_readers: list[Reader] | None = None


def reader_names() -> tuple[str, ...]:
    """The names ``--agent`` accepts, in detection order (no reader module is imported)."""
    return tuple(_READER_MODULES)


def readers() -> list[Reader]:
    """Every available reader, in detection order."""
    global _readers
    if _readers is None:
        found = (_load(mod_name) for mod_name in _READER_MODULES.values())
        _readers = [r for r in found if r is not None]
    return _readers


def _load(mod_name: str) -> Reader | None:
    try:
        mod = importlib.import_module(f"{__name__}.{mod_name}.reader")
    except ModuleNotFoundError as exc:
        if exc.name == f"{__name__}.{mod_name}.reader":
            return None
        raise
    reader: Reader = mod.READER
    return reader


def get_reader(name: str) -> Reader:
    """The reader called ``name``, or a usage error listing the known names."""
    # Only that reader's module is imported: a forced format starts faster.
    reader = _load(_READER_MODULES[name]) if name in _READER_MODULES else None
    if reader is not None and reader.name == name:
        return reader
    known = ", ".join(r.name for r in readers())
    raise SourceError(name, f"unknown agent format; choose one of: {known}")


#: Whether each reader class is a ``ContainerReader`` (`is_container_reader`).
_CONTAINER_TYPES: dict[type, bool] = {}


def is_container(name: str) -> bool:
    """True when inputs of format ``name`` may hold several sessions, chosen by id."""
    reader = _load(_READER_MODULES[name]) if name in _READER_MODULES else None
    return reader is not None and is_container_reader(reader)


def is_container_reader(reader: Reader) -> TypeGuard[ContainerReader]:
    """``isinstance(reader, ContainerReader)``, asked once per reader class: the runtime
    check looks up every member of the protocol (~13 us), and reading a session asks it
    three times (an index build, for every session)."""
    # By class: the protocol's members are class attributes and methods of every reader.
    kind = type(reader)
    known = _CONTAINER_TYPES.get(kind)
    if known is None:
        known = _CONTAINER_TYPES[kind] = isinstance(reader, ContainerReader)
    return known


def _head(path: Path) -> bytes:
    if path.is_dir():
        return b""
    with path.open("rb") as fh:
        return fh.read(SNIFF_BYTES)


def _check_readable(path: Path) -> None:
    """A usage error unless ``path`` is a readable, non-empty regular file or a directory.

    FIFOs, devices and sockets are refused before anything opens them: reading a FIFO
    with no writer blocks forever, and ``/dev/zero`` never ends.
    """
    try:
        st = path.stat()
    except FileNotFoundError:
        raise SourceError(str(path), "no such file or directory") from None
    except OSError as exc:
        raise SourceError(str(path), f"cannot read: {exc.strerror}") from exc
    if stat.S_ISDIR(st.st_mode):
        return
    if not stat.S_ISREG(st.st_mode):
        kind = "a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode) else "a device or socket"
        raise SourceError(str(path), f"{kind}, not a regular file; logs are read from files")
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        raise SourceError(str(path), f"cannot read: {exc.strerror}") from exc
    if st.st_size == 0:
        raise SourceError(str(path), "file is empty")


def detect(path: Path) -> Reader:
    """Choose the reader for ``path`` by asking every reader how sure it is."""
    _check_readable(path)
    head = _head(path)
    best: tuple[float, Reader] | None = None
    for r in readers():
        score = r.sniff(path, head)
        if score > 0 and (best is None or score > best[0]):
            best = (score, r)
    if best is None:
        tried = ", ".join(r.name for r in readers())
        what = "a directory that is no session folder" if path.is_dir() else "unknown log format"
        raise SourceError(str(path), f"{what} (tried {tried}); force one with --agent NAME")
    return best[1]


def resolve(paths: Sequence[Path], agent: str | None) -> Reader:
    """The reader for a chain of files: forced by ``agent`` or detected from the first."""
    if not paths:
        raise SourceError("-", "no input files given")
    for p in paths:
        _check_readable(p)
    if not agent:
        return detect(paths[0])
    reader = get_reader(agent)
    _check_forced(paths[0], reader)
    return reader


def _check_forced(path: Path, reader: Reader) -> None:
    """A format forced with --agent on a file that another reader recognises and the
    forced one does not (a Claude Code JSONL read as a terminal capture summarized raw
    JSON lines): refused. A file no reader recognises may be forced."""
    if reader.sniff(path, _head(path)) > 0:
        return
    other = _looks_like(path, reader)
    if other is not None:
        raise SourceError(str(path), f"not a {reader.name} log: {other}")


def _looks_like(path: Path, reader: Reader) -> str | None:
    """What ``path`` looks like when another reader than the forced one claims it."""
    try:
        detected = detect(path).name
    except SourceError:
        return None
    if detected == reader.name:
        return None
    return f"it looks like a {detected} log (drop --agent, or use --agent {detected})"


def open_session(
    paths: Sequence[Path],
    sink: WarningSink,
    agent: str | None = None,
    session: str | None = None,
    *,
    hollow: bool = False,
) -> Session:
    """Read ``paths`` (one session's chain of files, oldest first) into a ``Session``.

    ``session`` chooses one session of an input that holds several (an opencode store,
    an Inspect log); for a file of one session it must name that session. ``hollow``
    asks for the active conversation's bodies to be left in the files where the format
    allows it (``HollowReader``; ``Session.bodies`` is then set).
    """
    reader = resolve(paths, agent)
    if is_container_reader(reader):
        result = reader.read(paths, sink, session=session)
    else:
        lean = None
        if hollow and isinstance(reader, HollowReader):
            lean = reader.read_hollow(paths, sink)
        result = lean if lean is not None else reader.read(paths, sink)
        if session is not None:
            _check_named(paths, result.id, session)
    if agent and not result.messages():
        _refuse_empty(paths, reader, result.warnings)
    if result.cwd:  # a path, never needed whole to restore: a token in it is redacted always
        from ..redact import redact  # (here: a command that reads no session skips its import)

        result.cwd = redact(result.cwd)[0]
    return unique_ids(result)


def _check_named(paths: Sequence[Path], found: str, wanted: str) -> None:
    """A single-session log chosen with ``--session``: the id (or a prefix) must match."""
    if not found.startswith(wanted):
        raise SourceError(str(paths[0]), f"holds session {found}, not {wanted!r}")


def iter_messages(
    paths: Sequence[Path],
    sink: WarningSink,
    agent: str | None = None,
    session: str | None = None,
) -> Iterator[Message]:
    """Stream the messages of one session's chain of files, oldest first.

    ``session`` as in :func:`open_session`; a single-session log checked against it is
    read whole first (its id may only be known at the end).
    """
    reader = resolve(paths, agent)
    stream: Iterator[Message]
    if is_container_reader(reader):
        stream = reader.iter_messages(paths, sink, session=session)
    elif session is not None:
        chosen = reader.read(paths, sink)
        _check_named(paths, chosen.id, session)
        stream = iter(chosen.messages())
    else:
        stream = reader.iter_messages(paths, sink)
    stream = IdGuard().stream(stream)
    return _checked(paths, reader, sink, stream) if agent else stream


def _checked(
    paths: Sequence[Path], reader: Reader, sink: WarningSink, stream: Iterator[Message]
) -> Iterator[Message]:
    empty = True
    for message in stream:
        empty = False
        yield message
    if empty:
        _refuse_empty(paths, reader, sink.warnings)


def _refuse_empty(paths: Sequence[Path], reader: Reader, warnings: Sequence[object]) -> None:
    """A format forced with --agent found nothing: an error (exit 2) saying what the
    file looks like (or why nothing was read), never an empty summary that resets the
    session's journal."""
    for path in paths:
        other = _looks_like(path, reader)
        if other is not None:
            raise SourceError(str(path), f"read as {reader.name}, nothing found; {other}")
    why = f" ({warnings[0]})" if warnings else ""
    raise SourceError(str(paths[-1]), f"no messages could be read{why}")


def filter_messages(
    messages: Iterator[Message] | Sequence[Message],
    *,
    since: datetime | None = None,
    include_tools: bool = False,
    include_thinking: bool = False,
) -> Iterator[Message]:
    """Apply the messages API filters: time, tool blocks and thinking blocks."""
    return filter(message_filter(since, include_tools, include_thinking), messages)


def message_filter(
    since: datetime | None = None, include_tools: bool = False, include_thinking: bool = False
) -> Callable[[Message], bool]:
    """`filter_messages`'s test of one message: True when it is kept."""
    hidden = set() if include_tools else {"tool_use", "tool_result", "file_changes"}
    if not include_thinking:
        hidden.add("thinking")

    def keep(m: Message) -> bool:
        if m.type in hidden:
            return False
        return since is None or (m.timestamp is not None and m.timestamp > since)

    return keep
