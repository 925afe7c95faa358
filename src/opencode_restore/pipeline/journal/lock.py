"""One restore at a time per journal, across tasks and processes.

A restore reads its session's journal, adds turns and saves it after each one. Two
restores of one session at once (two copies of a log in one batch, a batch and a
nightly run, the Dask workers of two partitions) would each start from the same saved
state and overwrite each other's saves. A lock on ``<journal>.lock`` makes the second
wait; it then continues from the first one's saved journal instead of asking the model
again. The lock is ``filelock``'s (``flock`` on POSIX, ``LockFileEx`` on Windows): it
belongs to the open file, so it also separates two tasks of one process, and it dies
with the process: a killed batch never leaves it held.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from anyio import to_thread
from filelock import FileLock, Timeout

from ...dirs import make_private_dirs
from .store import JournalStore

#: Waiting is polled (a blocking acquire would hold a worker thread and ignore
#: cancellation); the wait doubles from the first to the last value.
_FIRST_WAIT = 0.01
_LONGEST_WAIT = 0.25


def lock_path(store: JournalStore, key: str) -> Path:
    """The lock file next to ``key``'s journal."""
    return store.path_for(key).with_suffix(".lock")


def _try(lock: FileLock) -> bool:
    """One attempt that never waits: True when ``lock`` is now held."""
    try:
        lock.acquire(blocking=False)
    except Timeout:
        return False
    return True


def _first_try(lock: FileLock, path: Path) -> bool:
    make_private_dirs(path.parent)
    return _try(lock)


@asynccontextmanager
async def journal_lock(
    store: JournalStore, key: str, on_wait: Callable[[], object] | None = None
) -> AsyncIterator[Path]:
    """Hold the lock of ``key``'s journal for the ``async with`` block (waiting for it).

    ``on_wait`` is called once if another holder makes this one wait.
    """
    path = lock_path(store, key)
    # Not thread-local: it is taken in a worker thread and released on the event loop.
    lock = FileLock(path, thread_local=False)
    try:
        # Creating the lock file costs about 1 ms on some file systems: not on the loop.
        if not await to_thread.run_sync(_first_try, lock, path):
            if on_wait is not None:
                on_wait()
            wait = _FIRST_WAIT
            await anyio.sleep(wait)
            while not _try(lock):
                wait = min(wait * 2, _LONGEST_WAIT)
                await anyio.sleep(wait)
        yield path
    finally:
        # Also when cancelled after the worker thread took it.
        if lock.is_locked:
            lock.release()
