"""Files replaced whole: readers see the old content or the new, never a torn write.

Every writer of the package that replaces a file (journals, batch outputs,
migrated and exported sessions) goes through `atomic_write`: a temporary file named
after the target and the writing process, written, fsynced, renamed over the target,
and the directory fsynced. A process killed half-way leaves only its temporary file,
which `remove_stale_temporaries` deletes once that process is gone.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from .dirs import make_private_dirs

#: Session logs and journals hold private conversations: readable by their owner only.
SESSION_FILE_MODE = 0o600


#: Bytes per write of a long output.
BLOCK = 1 << 20


def atomic_write(path: Path, data: bytes | Iterable[bytes], *, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` (bytes, or chunks of bytes written in order)."""
    make_private_dirs(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        try:
            for chunk in [data] if isinstance(data, bytes) else data:
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.filename is None:  # os.write names no file: say which one (a full disk)
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)


def backup_path(path: Path) -> Path:
    """``FILE.bak``, or ``FILE.bak.N`` for the first N not taken: a backup is never overwritten."""
    candidate = path.with_name(path.name + ".bak")
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.bak.{n}")
        n += 1
    return candidate


#: Names of this process's own output streams: written directly, whatever they are (a pipe
#: to ``less`` is a FIFO with its reader already there; a file it was redirected to cannot
#: be renamed over).
OWN_STREAMS = frozenset(
    {"/dev/stdout", "/dev/stderr", "/dev/fd/1", "/dev/fd/2", "/proc/self/fd/1", "/proc/self/fd/2"}
)


def output_refusal(path: Path, inputs: Iterable[str | os.PathLike[str]] = ()) -> str | None:
    """Why ``path`` may not be a command's output file, or None when it may.

    Any of ``inputs`` is refused, however named (a symlink or hard link to the log would
    replace the log being restored). Besides regular files and `OWN_STREAMS`, so are a
    FIFO (opening it waits for a reader: ``-o`` onto one hung), devices other than
    ``/dev/null``, and sockets.
    """
    try:
        target = os.stat(path)
    except OSError:
        return None  # a new file (or one the write will report)
    if any(_same_file(target, source) for source in inputs):
        return "is one of the input files; writing would replace it; give another file"
    if stat.S_ISREG(target.st_mode) or os.path.abspath(path) in OWN_STREAMS:
        return None
    if stat.S_ISFIFO(target.st_mode):
        return "is a FIFO (named pipe); writing would wait for a reader; give a file, or -"
    if stat.S_ISSOCK(target.st_mode):
        return "is a socket; give a file, or - for standard output"
    if (stat.S_ISCHR(target.st_mode) or stat.S_ISBLK(target.st_mode)) and not _same_file(
        target, os.devnull
    ):
        return "is a device; give a file, or - for standard output"
    return None


def _same_file(st: os.stat_result, other: str | os.PathLike[str]) -> bool:
    try:
        there = os.stat(other)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (there.st_dev, there.st_ino)


def write_output(
    path: Path, text: str | Iterable[str], inputs: Iterable[str | os.PathLike[str]] = ()
) -> None:
    """Write a command's output file: atomically when it is (or will be) a regular file.

    A full disk leaves the previous file, not a truncated one. ``/dev/null`` and
    `OWN_STREAMS` cannot be renamed over, so they are written directly; a target
    `output_refusal` refuses (a FIFO, another device, one of ``inputs``) raises `OSError`
    naming it. The text
    (or its pieces, in order) is encoded a megabyte at a time: a long session's JSON
    restoration (10 MB at bench/scale.py's 200 MB log) is not held a second time as bytes.
    """
    if (why := output_refusal(path, inputs)) is not None:
        raise OSError(errno.EINVAL, why, str(path))
    pieces = [text] if isinstance(text, str) else text
    if os.path.abspath(path) in OWN_STREAMS or (path.exists() and not path.is_file()):
        with path.open("w", encoding="utf-8") as fh:
            fh.writelines(pieces)
        return
    atomic_write(path, buffered(_encoded(pieces)))


def _encoded(pieces: Iterable[str], step: int = BLOCK) -> Iterator[bytes]:
    for piece in pieces:
        for i in range(0, len(piece), step):
            yield piece[i : i + step].encode("utf-8")


def buffered(chunks: Iterable[bytes], size: int = BLOCK) -> Iterator[bytes]:
    """``chunks`` joined into blocks of about ``size`` bytes (one write each)."""
    block = bytearray()
    for chunk in chunks:
        block += chunk
        if len(block) >= size:
            yield bytes(block)
            block.clear()
    if block:
        yield bytes(block)


def fsync_directory(directory: Path) -> None:
    """Make a rename or a new file in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_stale_temporaries(directory: Path) -> int:
    """Delete the temporary files of writers that died (SIGKILL) in ``directory``."""
    removed = 0
    for stale in directory.glob(".*.tmp"):
        pid = stale.name.rsplit(".", 2)[-2]
        if not alive(pid):
            stale.unlink(missing_ok=True)
            removed += 1
    return removed


def alive(pid: str) -> bool:
    """True when ``pid`` names a running process (its temporary file may be in use)."""
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True
