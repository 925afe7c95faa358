"""One restore at a time per saved timeline, across tasks and processes.

A restore reads its session's timeline, adds turns and saves it after each one. Two
restores of one session at once (two copies of a log in one batch, a batch and a
nightly run, the Dask workers of two partitions) would each start from the same saved
state and overwrite each other's saves. ``flock`` on ``<timeline>.lock`` makes the
second wait; it then continues from the first one's saved timeline instead of asking
the model again. The lock belongs to the open file, so it also separates two tasks of
one process, and it dies with the process: a killed batch never leaves it held.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from anyio import to_thread

from .store import TimelineStore

#: Waiting is polled (a blocking flock would hold a worker thread and ignore
#: cancellation); the wait doubles from the first to the last value.
_FIRST_WAIT = 0.01
_LONGEST_WAIT = 0.25


def lock_path(store: TimelineStore, key: str) -> Path:
    """The lock file next to ``key``'s timeline."""
    return store.path_for(key).with_suffix(".lock")


def _open(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)


@asynccontextmanager
async def timeline_lock(
    store: TimelineStore, key: str, on_wait: Callable[[], object] | None = None
) -> AsyncIterator[Path]:
    """Hold the lock of ``key``'s timeline for the ``async with`` block (waiting for it).

    ``on_wait`` is called once if another holder makes this one wait.
    """
    path = lock_path(store, key)
    # Creating the lock file costs about 1 ms on some file systems: not in the loop.
    fd = await to_thread.run_sync(_open, path)
    try:
        wait = _FIRST_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if on_wait is not None and wait == _FIRST_WAIT:
                    on_wait()
                await anyio.sleep(wait)
                wait = min(wait * 2, _LONGEST_WAIT)
        yield path
    finally:
        os.close(fd)  # releases the lock
