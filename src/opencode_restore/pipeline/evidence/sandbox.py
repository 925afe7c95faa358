"""Workspace confinement and resource limits for the evidence-search tools.

A model chooses the paths and patterns these tools see, so both are treated as hostile:

* `Workspace.choose` never lets the log pick the root: an explicit ``--workspace`` wins,
  the recorded cwd is used only with ``--workspace auto`` or when the command runs in it
  (or above it), and ``/``, system folders, home folders themselves, their settings and
  data folders (``~/.config``, ``~/.local/share``) and credential stores are never roots.
* `Workspace.read_text` resolves a path (symlinks and ``..`` included) and refuses it
  unless it stays under the workspace root, then opens the resolved path again one
  component at a time from a descriptor of the root (``openat`` with ``O_NOFOLLOW``): a
  directory swapped for a symlink between the check and the open fails the open instead
  of escaping. Only regular files under the size cap, with a single link (a hard link may
  be the other name of a file outside), are read; a FIFO is never opened for reading
  (``O_NONBLOCK``, type checked before the read). Files with a NUL byte in their first
  8 KB count as binary and are refused. Every `OSError` becomes a refusal. Credential
  stores are refused by name anywhere on the real path and by what a file holds
  (`credentials`), so nothing that reads workspace files through here returns one.
* `Matcher` bounds a search: pattern length, repetition counts (compiling
  ``(?:x{60000}){60000}`` would exhaust memory), and one deadline for the whole search,
  enforced inside the `regex` engine by its ``timeout`` (catastrophic backtracking such as
  ``(a|aa)+$`` stops there).
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import regex

from .credentials import credential_signature, is_credential_path

MAX_FILE_BYTES = 1_000_000
BINARY_SNIFF_BYTES = 8192
MAX_PATTERN_CHARS = 200
# Product of every {m,n} bound in a pattern; the engine expands counted repeats at compile.
MAX_REPEAT_PRODUCT = 10_000
SEARCH_SECONDS = 2.0
MAX_PATH_CHARS = 1024
# Folders whose whole tree is the system's, never a project's.
SYSTEM_TREES = tuple(
    Path(p)
    for p in (
        "/proc", "/sys", "/dev", "/run", "/boot", "/etc", "/bin", "/sbin", "/lib", "/lib32",
        "/lib64", "/libx32", "/usr", "/var/lib", "/var/log", "/var/run", "/var/spool",
        "/var/mail", "/var/cache", "/var/db", "/private/etc", "/System", "/Library",
    )
)  # fmt: skip
# Folders that hold projects but are no project themselves (nor is a home folder).
SYSTEM_FOLDERS = frozenset(
    Path(p)
    for p in (
        "/home", "/Users", "/root", "/var", "/opt", "/srv", "/tmp", "/mnt", "/media",
        "/private", "/private/var", "/private/tmp", "/Volumes",
    )
)  # fmt: skip
HOME_PARENTS = frozenset({Path("/home"), Path("/Users")})
# Folders of a home folder that hold applications' data: no root is in them.
HOME_DATA_TREES = (
    ".local/share", ".local/state", ".cache", "Library/Application Support",
    "Library/Keychains", "AppData",
)  # fmt: skip
# Folders of a home folder that hold settings: never a root themselves (a project may sit
# below one, as ``~/.config/nvim`` does), nor is any hidden folder directly in the home.
HOME_SETTINGS_FOLDERS = (".local", ".local/lib", "Library", "Library/Preferences")
# Environment variables naming such folders elsewhere (trees, then settings folders).
DATA_TREE_VARS = ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")
SETTINGS_FOLDER_VARS = ("XDG_CONFIG_HOME",)
_COUNT = regex.compile(r"(?<!\\)\{(\d*)(?:,(\d*))?\}")


#: ``--workspace auto``: trust the session's recorded cwd wherever the command runs.
AUTO = "auto"


class Refused(Exception):
    """A tool request the sandbox will not serve; the message is the reason for the model."""


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _runs_in(session_cwd: str, here: str | None) -> bool:
    """True when ``session_cwd`` is ``here`` (default: this process's cwd) or below it."""
    try:
        base = Path(os.path.realpath(here if here is not None else os.getcwd(), strict=True))
        return _inside(Path(os.path.realpath(session_cwd, strict=True)), base)
    except OSError:
        return False


def _home() -> Path | None:
    try:
        return Path(os.path.realpath(Path.home()))
    except (OSError, RuntimeError, KeyError):
        return None


def _env_folders(names: tuple[str, ...], home: Path | None) -> list[Path]:
    """The folders the variables ``names`` set; one that is ``/``, the home folder or above
    it (``XDG_DATA_HOME=/`` would refuse every root) is no application's folder."""
    found = []
    for name in names:
        value = os.environ.get(name)
        if not value or not os.path.isabs(value):
            continue
        folder = Path(os.path.realpath(value))
        if folder != Path(folder.anchor) and not (home is not None and _inside(home, folder)):
            found.append(folder)
    return found


def _settings_or_data_folder(root: Path, home: Path | None) -> bool:
    """True when ``root`` is an application's settings or data folder (see the constants)."""
    trees = _env_folders(DATA_TREE_VARS, home)
    folders = _env_folders(SETTINGS_FOLDER_VARS, home)
    if home is not None:
        if root.parent == home and root.name.startswith("."):
            return True
        trees += [home / p for p in HOME_DATA_TREES]
        folders += [home / p for p in HOME_SETTINGS_FOLDERS]
    return root.name == ".config" or root in folders or any(_inside(root, t) for t in trees)


def root_refusal(root: Path) -> str | None:
    """Why the real path ``root`` may not be a workspace root, or None when it may.

    Besides system folders: a home folder, anything in a credential store, a settings
    folder (every hidden folder directly in the home folder, any ``.config``) and
    anything in a data folder (``~/.local/share``, ``~/.cache``, the XDG ones). A restore
    run from the home folder (cron, systemd) would otherwise take a session's cwd of
    ``~/.config`` as its root.
    """
    if root == Path(root.anchor):
        return "the filesystem root"
    if root in SYSTEM_FOLDERS or any(_inside(root, p) for p in SYSTEM_TREES):
        return "a system folder"
    home = _home()
    if root == home or root.parent in HOME_PARENTS:
        return "a home folder (it holds shell histories and credentials)"
    if is_credential_path(root.parts):
        return "a credential store"
    if _settings_or_data_folder(root, home):
        return "a settings or data folder of the home folder (it holds credentials)"
    return None


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


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC


def open_beneath(root: Path, parts: tuple[str, ...], max_bytes: int | None) -> int:
    """A read-only descriptor for the regular file ``root/parts``, no symlink followed.

    Each directory is opened from its parent's descriptor with ``O_NOFOLLOW |
    O_DIRECTORY`` and the file with ``O_NOFOLLOW | O_NONBLOCK``, so a component swapped
    for a symlink after the path was checked fails the open. Raises `Refused` for
    anything but a single-link regular file within ``max_bytes``; the caller owns the
    descriptor.
    """
    if not parts or any(p in ("", ".", "..") for p in parts):
        raise Refused("is a directory" if not parts else "not a plain path; not read")
    opened: list[int] = []
    name = str(root)
    try:
        try:
            opened.append(os.open(root, _DIR_FLAGS))
            for name in parts[:-1]:
                opened.append(os.open(name, _DIR_FLAGS, dir_fd=opened[-1]))
            name = parts[-1]
            # Type and size before the open: a device or FIFO is never opened at all.
            before = os.stat(name, dir_fd=opened[-1], follow_symlinks=False)
            if stat.S_ISLNK(before.st_mode):
                raise Refused("changed into a symlink while checking; not opened")
            _check_kind(before, max_bytes)
            fd = os.open(name, _FILE_FLAGS, dir_fd=opened[-1])
        except OSError as exc:
            raise _open_refusal(exc, name, opened[-1] if opened else None) from None
    finally:
        for dir_fd in opened:
            os.close(dir_fd)
    try:
        after = os.fstat(fd)
        if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
            raise Refused("changed while opening; not read")
        _check_kind(after, max_bytes)
    except OSError as exc:
        os.close(fd)
        raise Refused(exc.strerror or str(exc)) from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_refusal(exc: OSError, name: str, dir_fd: int | None) -> Refused:
    """The refusal for a failed open of ``name``: a symlink swapped in, or the OS's reason."""
    if exc.errno == errno.ENOENT:
        return Refused("no such file")
    if exc.errno in (errno.ELOOP, errno.ENOTDIR) and dir_fd is not None:
        try:
            swapped = stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
        except OSError:
            swapped = False
        if swapped or exc.errno == errno.ELOOP:
            return Refused("changed into a symlink while checking; not opened")
    return Refused(exc.strerror or str(exc))


def _check_kind(st: os.stat_result, max_bytes: int | None) -> None:
    if (why := _kind_refusal(st.st_mode)) is not None:
        raise Refused(why)
    if st.st_nlink > 1:
        raise Refused(
            f"has {st.st_nlink} hard links (another may be outside the workspace); not read"
        )
    if max_bytes is not None and st.st_size > max_bytes:
        raise Refused(f"{st.st_size} bytes, over the {max_bytes}-byte limit")


@dataclass
class Workspace:
    """The directory the file tools may read, or None with the reason there is none.

    ``recorded_cwd`` is the session's working directory as logged: absolute paths under
    it are rebased onto ``root`` when the workspace stands in for it (``--workspace``).
    ``refused`` is True when a root was found but refused (a home, settings or system
    folder): the restore warns about it, where a missing workspace is no news.
    """

    root: Path | None
    why_none: str = ""
    recorded_cwd: str | None = None
    max_bytes: int = MAX_FILE_BYTES
    refused: bool = False

    @classmethod
    def choose(
        cls, session_cwd: str | None, override: str | None, here: str | None = None
    ) -> Workspace:
        """The workspace of a restore; the log's recorded cwd never overrides the user.

        ``override`` (``--workspace`` or the config) always wins; ``"auto"`` opts in to the
        recorded cwd. Without either, the recorded cwd is used only when it is ``here``
        (the directory the command runs in, by default the process's) or below it.
        """
        if override and override != AUTO:
            override = os.path.expanduser(override)
            if not os.path.isdir(override):
                return cls(None, f"no workspace: {override} is not a directory", session_cwd)
            return cls._checked(override, "--workspace", session_cwd)
        if not session_cwd or not os.path.isdir(session_cwd):
            where = f" ({session_cwd})" if session_cwd else ""
            return cls(
                None,
                f"no workspace: the session's working directory{where} is not on this "
                "machine and no --workspace was given",
                session_cwd,
            )
        if override != AUTO and not _runs_in(session_cwd, here):
            return cls(
                None,
                f"no workspace: the session's working directory ({session_cwd}) is not the "
                "directory this command runs in (or below it); pass --workspace DIR, or "
                "--workspace auto to trust the recorded one",
                session_cwd,
            )
        return cls._checked(session_cwd, "the session's working directory", session_cwd)

    @classmethod
    def _checked(cls, candidate: str, origin: str, session_cwd: str | None) -> Workspace:
        try:
            root = Path(os.path.realpath(candidate, strict=True))
        except OSError as exc:
            return cls(None, f"no workspace: {candidate} ({origin}): {exc.strerror}", session_cwd)
        if (why := root_refusal(root)) is not None:
            message = f"no workspace: refusing {root} ({origin}) as a workspace root: {why}"
            return cls(None, message, session_cwd, refused=True)
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
        try:
            real = Path(os.path.realpath(candidate))
        except (OSError, ValueError) as exc:
            raise Refused(f"not resolvable ({exc})") from None
        lexical = Path(os.path.normpath(candidate))
        if not _inside(real, self.root):
            why = "a symlink that points" if _inside(lexical, self.root) else "a path"
            raise Refused(f"{why} outside the workspace ({self.root}); not read")
        # The whole path, not only the part below the root: a root of ``/backup/.config``
        # must not make ``gh/hosts.yml`` look like any file. The path as named counts too
        # (a link ``.ssh`` to a folder of keys).
        if is_credential_path(real.parts) or is_credential_path(lexical.parts):
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

    def is_file(self, real: Path) -> bool:
        """True when the resolved ``real`` is a regular file (no exception, ever)."""
        try:
            return stat.S_ISREG(os.lstat(real).st_mode)
        except (OSError, ValueError):
            return False

    def read_text(self, path: str) -> tuple[Path, str]:
        """Resolve and read a text file of the workspace (decoded leniently as UTF-8)."""
        real = self.resolve(path)
        assert self.root is not None
        fd = open_beneath(self.root, real.relative_to(self.root).parts, self.max_bytes)
        try:
            with os.fdopen(fd, "rb") as fh:
                data = fh.read(self.max_bytes + 1)
        except OSError as exc:
            raise Refused(exc.strerror or str(exc)) from None
        if len(data) > self.max_bytes:
            raise Refused(f"grew past the {self.max_bytes}-byte limit while reading")
        if b"\x00" in data[:BINARY_SNIFF_BYTES]:
            raise Refused("a binary file (NUL byte in the first 8 KB); not shown")
        text = data.decode("utf-8", errors="replace")
        if (kind := credential_signature(text)) is not None:
            raise Refused(f"holds credentials ({kind}); not read")
        return real, text


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


Span = tuple[int, int]


def grep(
    lines: Iterable[tuple[int, str]],
    matcher: Matcher,
    context: int,
    max_hits: int,
    keep: Callable[[str, Span | None], tuple[str, Span | None]] | None = None,
) -> GrepResult:
    """Search numbered ``lines`` like ``grep -n -C context``, stopping at ``max_hits``.

    Context lines shared by neighbouring hits appear once. The deadline covers the whole
    scan; when it passes, the lines found so far are returned with ``timed_out`` set.
    ``keep`` cuts each kept line (and its match span) to what will be shown: a raw log
    line can be megabytes long, and fifty hits with their context held whole made a
    search of a large log cost tens of megabytes.
    """

    def line(number: int, text: str, span: Span | None = None) -> GrepLine:
        if keep is not None:
            text, span = keep(text, span)
        return GrepLine(number, text, span)

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
            out.lines.append(line(number, text))
            after_left -= 1
            continue
        try:
            match = matcher.search(text)
        except SearchTimeout:
            out.timed_out = True
            break
        if match is not None:
            out.lines.extend(line(n, t) for n, t in before if n > last)
            out.lines.append(line(number, text, match.span()))
            out.hits += 1
            after_left = context
            last = number
        elif after_left > 0:
            out.lines.append(line(number, text))
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
