"""Workspace confinement and resource limits for the evidence-search tools.

A model chooses the paths and patterns these tools see, so both are treated as hostile:

* `Workspace.read_text` resolves a path (symlinks and ``..`` included) and refuses it
  unless it stays under the workspace root. Only regular files under the size cap are
  opened: the type and size come from ``lstat`` before any ``open``, so a FIFO never
  blocks and a sparse 2 GB file is never read; the open itself is ``O_NONBLOCK |
  O_NOFOLLOW`` and ``fstat`` must show the same regular file. Files with a NUL byte in
  their first 8 KB count as binary and are refused.
* `Matcher` bounds a search: pattern length, repetition counts (compiling
  ``(?:x{60000}){60000}`` would exhaust memory), and one deadline for the whole search,
  enforced inside the `regex` engine by its ``timeout`` (catastrophic backtracking such as
  ``(a|aa)+$`` stops there).
"""

from __future__ import annotations

import os
import stat
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import regex

MAX_FILE_BYTES = 1_000_000
BINARY_SNIFF_BYTES = 8192
MAX_PATTERN_CHARS = 200
# Product of every {m,n} bound in a pattern; the engine expands counted repeats at compile.
MAX_REPEAT_PRODUCT = 10_000
SEARCH_SECONDS = 2.0
MAX_PATH_CHARS = 1024
PSEUDO_FILESYSTEMS = (Path("/proc"), Path("/sys"), Path("/dev"))
# Credential stores are never evidence, even inside a workspace (say, a session run in ~).
SECRET_NAMES = frozenset({".ssh", ".gnupg", ".aws", ".docker", ".kube", ".netrc", ".pgpass"})
_COUNT = regex.compile(r"(?<!\\)\{(\d*)(?:,(\d*))?\}")


class Refused(Exception):
    """A tool request the sandbox will not serve; the message is the reason for the model."""


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _kind_refusal(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe); not opened"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device; not opened"
    if stat.S_ISSOCK(mode):
        return "is a socket; not opened"
    return "is not a regular file"


def open_regular(path: Path, max_bytes: int | None) -> int:
    """A read-only descriptor for the regular file at ``path``, checked before and after open.

    Raises `Refused` for anything else (missing, directory, FIFO, device, socket, symlink
    swapped in, over ``max_bytes``). The caller owns the descriptor.
    """
    try:
        before = os.lstat(path)
    except FileNotFoundError:
        raise Refused("no such file") from None
    except OSError as exc:
        raise Refused(exc.strerror or str(exc)) from None
    if stat.S_ISLNK(before.st_mode):
        raise Refused("changed into a symlink while checking; not opened")
    if (why := _kind_refusal(before.st_mode)) is not None:
        raise Refused(why)
    if max_bytes is not None and before.st_size > max_bytes:
        raise Refused(f"{before.st_size} bytes, over the {max_bytes}-byte limit")
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise Refused(exc.strerror or str(exc)) from None
    after = os.fstat(fd)
    if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino) or not stat.S_ISREG(
        after.st_mode
    ):
        os.close(fd)
        raise Refused("changed while opening; not read")
    return fd


@dataclass
class Workspace:
    """The directory the file tools may read, or None with the reason there is none.

    ``recorded_cwd`` is the session's working directory as logged: absolute paths under
    it are rebased onto ``root`` when the workspace stands in for it (``--workspace``).
    """

    root: Path | None
    why_none: str = ""
    recorded_cwd: str | None = None
    max_bytes: int = MAX_FILE_BYTES

    @classmethod
    def choose(cls, session_cwd: str | None, override: str | None) -> Workspace:
        """The session's cwd when it exists here, else ``override`` (--workspace), else none."""
        if session_cwd and os.path.isdir(session_cwd):
            candidate, origin = session_cwd, "the session's working directory"
        elif override:
            if not os.path.isdir(override):
                return cls(None, f"no workspace: {override} is not a directory", session_cwd)
            candidate, origin = override, "--workspace"
        else:
            where = f" ({session_cwd})" if session_cwd else ""
            return cls(
                None,
                f"no workspace: the session's working directory{where} is not on this "
                "machine and no --workspace was given",
                session_cwd,
            )
        root = Path(os.path.realpath(candidate))
        if root == Path(root.anchor) or any(_inside(root, p) for p in PSEUDO_FILESYSTEMS):
            return cls(None, f"no workspace: refusing {root} ({origin}) as a workspace root")
        return cls(root, "", session_cwd)

    def resolve(self, path: str) -> Path:
        """The real path of ``path`` inside the workspace; `Refused` with the reason if not."""
        if self.root is None:
            raise Refused(self.why_none)
        path = path.strip()
        if not path:
            raise Refused("empty path")
        if "\x00" in path or len(path) > MAX_PATH_CHARS:
            raise Refused("not a usable path (NUL byte or too long)")
        if path.startswith("~"):
            raise Refused("home-relative paths are outside the workspace")
        candidate = self._rebased(path)
        real = Path(os.path.realpath(candidate))
        if not _inside(real, self.root):
            lexical = Path(os.path.normpath(candidate))
            why = "a symlink that points" if _inside(lexical, self.root) else "a path"
            raise Refused(f"{why} outside the workspace ({self.root}); not read")
        if SECRET_NAMES.intersection(real.relative_to(self.root).parts):
            raise Refused("a credentials file or directory; not read")
        return real

    def _rebased(self, path: str) -> Path:
        assert self.root is not None
        p = Path(path)
        if not p.is_absolute():
            return self.root / p
        recorded = self.recorded_cwd
        if recorded and PurePosixPath(recorded).is_absolute():
            try:
                rest = PurePosixPath(os.path.normpath(path)).relative_to(recorded)
            except ValueError:
                return p
            return self.root / rest
        return p

    def relative(self, real: Path) -> str:
        """``real`` as a path relative to the root, for messages to the model."""
        assert self.root is not None
        rel = real.relative_to(self.root)
        return str(rel) if str(rel) != "." else "."

    def read_text(self, path: str) -> tuple[Path, str]:
        """Resolve and read a text file of the workspace (decoded leniently as UTF-8)."""
        real = self.resolve(path)
        fd = open_regular(real, self.max_bytes)
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(self.max_bytes + 1)
        if len(data) > self.max_bytes:
            raise Refused(f"grew past the {self.max_bytes}-byte limit while reading")
        if b"\x00" in data[:BINARY_SNIFF_BYTES]:
            raise Refused("a binary file (NUL byte in the first 8 KB); not shown")
        return real, data.decode("utf-8", errors="replace")


class SearchTimeout(Exception):
    """The search's time budget ran out (the results so far are partial)."""


@dataclass
class Matcher:
    """A bounded search pattern: literal or regex, one deadline for the whole search.

    An invalid regex falls back to a literal search; ``note`` says so.
    """

    pattern: str
    literal: bool = False
    ignore_case: bool = False
    seconds: float = SEARCH_SECONDS
    clock: Callable[[], float] = time.monotonic
    note: str = ""
    compiled: regex.Pattern[str] = field(init=False)
    deadline: float = field(init=False)

    def __post_init__(self) -> None:
        if not self.pattern:
            raise Refused("empty pattern")
        if len(self.pattern) > MAX_PATTERN_CHARS:
            raise Refused(
                f"pattern is {len(self.pattern)} characters; the limit is {MAX_PATTERN_CHARS}"
            )
        flags = regex.IGNORECASE if self.ignore_case else 0
        source = regex.escape(self.pattern) if self.literal else self.pattern
        if not self.literal:
            _check_repeats(self.pattern)
        try:
            self.compiled = regex.compile(source, flags)
        except regex.error as exc:
            self.note = f"invalid regex ({exc}); searched for the literal text instead"
            self.literal = True
            self.compiled = regex.compile(regex.escape(self.pattern), flags)
        self.deadline = self.clock() + self.seconds

    def search(self, text: str) -> regex.Match[str] | None:
        """The first match in ``text``; `SearchTimeout` once the deadline has passed."""
        left = self.deadline - self.clock()
        if left <= 0:
            raise SearchTimeout
        try:
            return self.compiled.search(text, timeout=left)
        except TimeoutError:
            raise SearchTimeout from None


def _check_repeats(pattern: str) -> None:
    product = 1
    for low, high in _COUNT.findall(pattern):
        bound = max(int(low or 0), int(high or 0))
        product *= max(bound, 1)
    if product > MAX_REPEAT_PRODUCT:
        raise Refused(f"repetition counts multiply to {product}; the limit is {MAX_REPEAT_PRODUCT}")


@dataclass(frozen=True, slots=True)
class GrepLine:
    """One output line of a search: a match (with its span) or context."""

    number: int
    text: str
    span: tuple[int, int] | None = None

    @property
    def is_match(self) -> bool:
        return self.span is not None


@dataclass
class GrepResult:
    """The lines of a search (matches with context, in order) and why it stopped."""

    lines: list[GrepLine] = field(default_factory=list)
    hits: int = 0
    hit_cap: bool = False
    timed_out: bool = False
    stopped_at: int = 0


def grep(
    lines: Iterable[tuple[int, str]], matcher: Matcher, context: int, max_hits: int
) -> GrepResult:
    """Search numbered ``lines`` like ``grep -n -C context``, stopping at ``max_hits``.

    Context lines shared by neighbouring hits appear once. The deadline covers the whole
    scan; when it passes, the lines found so far are returned with ``timed_out`` set.
    """
    out = GrepResult()
    before: deque[tuple[int, str]] = deque(maxlen=max(context, 0))
    after_left = 0
    last = 0
    for number, text in lines:
        if out.hits >= max_hits and after_left <= 0:
            out.hit_cap = True
            break
        out.stopped_at = number
        if out.hits >= max_hits:
            out.lines.append(GrepLine(number, text))
            after_left -= 1
            continue
        try:
            match = matcher.search(text)
        except SearchTimeout:
            out.timed_out = True
            break
        if match is not None:
            out.lines.extend(GrepLine(n, t) for n, t in before if n > last)
            out.lines.append(GrepLine(number, text, match.span()))
            out.hits += 1
            after_left = context
            last = number
        elif after_left > 0:
            out.lines.append(GrepLine(number, text))
            after_left -= 1
            last = number
        before.append((number, text))
    return out


def clip_line(text: str, span: tuple[int, int] | None, width: int) -> str:
    """At most ``width`` characters of a line, centred on the match when there is one."""
    if len(text) <= width:
        return text
    if span is None:
        return text[: width - 1] + "…"
    start = span[0]
    lead = max(0, min(start - width // 3, len(text) - width))
    piece = text[lead : lead + width]
    head = "…" if lead > 0 else ""
    tail = "…" if lead + width < len(text) else ""
    return f"{head}{piece}{tail}"
