"""Search patterns from a model or an MCP client: checked on their parse, run in a bounded worker.

A text check of a pattern missed what the engine reads differently: an escaped backslash
repeated (``\\\\{9999999}``), spaces in a verbose-mode count (``(?x)(?:ab){ 9999999 }``)
took 2.7-11.7 GB to compile, and recursion (``((?R)|a)*``) ran out of memory matching.
So `check_pattern` parses the pattern with the `regex` engine's own parser (the one
`Matcher` compiles with; the standard library's parser reads those braces, and fuzzy
counts such as ``{e<=1}``, as text) and checks the tree: no recursion or group calls, no
fuzzy matching, no unbounded repeat inside another, and counted repeats whose expansion
(nested counts multiply, siblings add) stays under `MAX_EXPANSION`.

What passes still runs in `bounded`: a forked child with its address space capped
(``RLIMIT_AS``, Linux) and a deadline after which it is killed, so a pattern the checks
did not foresee, or a search that fails in any way, ends as a tool error the model reads,
never as a failed restore. A linear-time engine (RE2) would bound matching without a
process, but it drops look-around and backreferences that models use, and its wheel is
one more native dependency; the `regex` engine's timeout already stops backtracking.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import resource
import select
import signal
import time
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, cast

import regex
from regex import _regex_core as core

from .sandbox import MAX_PATTERN_CHARS, MAX_REPEAT_PRODUCT, Refused

#: Characters a counted repeat may expand to, over the whole pattern.
MAX_EXPANSION = MAX_REPEAT_PRODUCT
#: Address space a search worker may add to what it inherits.
WORKER_MEMORY = 512 << 20
#: What a worker may take past its search's own time limit (forking, reading the log's
#: lines, redacting what it shows) before it is killed.
WORKER_GRACE = 10.0
# Deeper nesting than this in a pattern of 200 characters is no search anyone writes.
_MAX_DEPTH = 64

T = TypeVar("T")


def check_pattern(pattern: str, *, literal: bool = False, ignore_case: bool = False) -> str | None:
    """Refuse a pattern that could exhaust memory or time; return why it is no valid regex.

    Raises `Refused` (the reason for the caller) for an empty or over-long pattern and for
    a regex whose parse holds recursion, fuzzy matching, nested unbounded repeats or
    counted repeats expanding past `MAX_EXPANSION`. Returns the parser's message when the
    pattern is not a valid regex (a search falls back to the literal text), else None.
    """
    if not pattern:
        raise Refused("empty pattern")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise Refused(f"pattern is {len(pattern)} characters; the limit is {MAX_PATTERN_CHARS}")
    if literal:
        return None
    try:
        tree = _parse(pattern, regex.IGNORECASE if ignore_case else 0)
    except regex.error as exc:
        return str(exc)
    except (AttributeError, TypeError) as exc:
        # The engine's parser is not public API: if a release changes it, no pattern goes
        # unchecked; the caller can still search for the text as it is.
        raise Refused(f"regex patterns cannot be checked here ({exc}); use literal=true") from None
    size = _expansion(tree, outer_unbounded=False, depth=0)
    if size > MAX_EXPANSION:
        raise Refused(
            f"repeat counts expand the pattern to {size} characters; the limit is {MAX_EXPANSION}"
        )
    return None


def _parse(pattern: str, flags: int) -> Any:
    """The engine's parse tree of ``pattern``, as `regex.compile` makes it before compiling."""
    global_flags = flags
    while True:
        source = core.Source(pattern)
        info = core.Info(global_flags, source.char_type, {})
        source.ignore_space = bool(info.flags & regex.VERBOSE)
        try:
            tree = core._parse_pattern(source, info)
        except core._UnscopedFlagSet:
            # A flag such as (?x) set mid-pattern applies to all of it: parsed again with it.
            global_flags = info.global_flags
            continue
        if not source.at_end():
            raise regex.error("unbalanced parenthesis")
        return tree


def _children(node: Any) -> list[Any]:
    out: list[Any] = []
    for value in vars(node).values():
        if isinstance(value, core.RegexBase):
            out.append(value)
        elif isinstance(value, list | tuple):
            out.extend(v for v in value if isinstance(v, core.RegexBase))
    return out


def _expansion(node: Any, *, outer_unbounded: bool, depth: int) -> int:
    """How many characters ``node`` compiles to with its counted repeats expanded.

    Raises `Refused` for what no count bounds: recursion or a group call, fuzzy matching,
    an unbounded repeat inside another.
    """
    if depth > _MAX_DEPTH:
        raise Refused(f"the pattern nests deeper than {_MAX_DEPTH} levels")
    if isinstance(node, core.CallGroup | core.CallRef):
        raise Refused("recursion and group calls ((?R), (?1), (?&name)) are not allowed")
    if isinstance(node, core.Fuzzy):
        raise Refused("fuzzy matching ({e<=n}) is not allowed")
    children = _children(node)
    if isinstance(node, core.GreedyRepeat):  # lazy and possessive repeats are subclasses
        unbounded = node.max_count is None
        if unbounded and outer_unbounded:
            raise Refused(
                "an unbounded repeat inside another (like (a+)+) backtracks without end; "
                "repeat one of them a fixed number of times"
            )
        count = max(int(node.min_count), int(node.max_count or 0), 1)
        inner = sum(
            _expansion(c, outer_unbounded=outer_unbounded or unbounded, depth=depth + 1)
            for c in children
        )
        return count * max(inner, 1)
    inner = sum(_expansion(c, outer_unbounded=outer_unbounded, depth=depth + 1) for c in children)
    return max(inner, 1)


class WorkerFailed(Refused):
    """A bounded search ran out of memory or time, or failed; the message says which."""


def bounded(work: Callable[[], T], seconds: float, memory: int = WORKER_MEMORY) -> T:
    """``work()`` run in a forked child with ``memory`` bytes more address space than it
    inherits, killed after ``seconds``; its result (or its `Refused`) comes back pickled.

    Any other failure of the child (out of memory, killed, an exception) is `WorkerFailed`.
    """
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():
        # Python warns that a child forked from a threaded process may deadlock on a lock
        # another thread held: this child only searches and exits, and one that hangs is
        # killed at the deadline below.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child; its result is what the tests check
        os.close(read_fd)
        _child(work, write_fd, memory)
    os.close(write_fd)
    data, finished = b"", False
    try:
        data, finished = _read_all(read_fd, time.monotonic() + seconds)
    finally:
        os.close(read_fd)
        status = _end(pid, kill=not finished)
    if not finished:
        raise WorkerFailed(f"the search was stopped after {seconds:g} s")
    if not data:
        raise WorkerFailed(f"the search failed ({_exit_reason(status)})")
    ok, value = pickle.loads(data)  # written by our own child, above
    if ok:
        return cast(T, value)
    raise value


def _child(work: Callable[[], Any], write_fd: int, memory: int) -> None:  # pragma: no cover
    """Run ``work`` under the memory cap, write its pickled outcome and exit at once."""
    try:
        try:
            _cap_memory(memory)
            payload = pickle.dumps((True, work()))
        except Refused as exc:
            payload = pickle.dumps((False, exc))
        except MemoryError:
            payload = pickle.dumps((False, WorkerFailed("the search ran out of memory")))
        except Exception as exc:
            payload = pickle.dumps((False, WorkerFailed(f"the search failed ({exc!r:.200})")))
        view = memoryview(payload)
        while view:
            view = view[os.write(write_fd, view) :]
    finally:
        # No atexit handler, buffer flush or finally of the parent's runs in the child.
        os._exit(0)


def _cap_memory(memory: int) -> None:  # pragma: no cover - runs in the child
    """Cap the address space at what this process maps now plus ``memory`` (Linux)."""
    try:
        with open("/proc/self/statm") as fh:
            mapped = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return  # no /proc (macOS, which does not enforce RLIMIT_AS): the deadline bounds it
    resource.setrlimit(resource.RLIMIT_AS, (mapped + memory, resource.RLIM_INFINITY))


def _read_all(fd: int, deadline: float) -> tuple[bytes, bool]:
    """What the child writes up to its end of file, and whether that came by ``deadline``."""
    parts: list[bytes] = []
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            break
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(parts), True
        parts.append(chunk)
    return b"".join(parts), False


def _end(pid: int, *, kill: bool) -> int:
    """Kill the child if asked, reap it, and return its wait status (0 when another
    handler of SIGCHLD reaped it first, as an event loop's child watcher may)."""
    with contextlib.suppress(ProcessLookupError):
        if kill:
            os.kill(pid, signal.SIGKILL)
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return 0


def _exit_reason(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"
