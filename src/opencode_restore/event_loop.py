"""Running a coroutine to completion from synchronous code (the CLI, batch).

``anyio.run`` hands the coroutine's result to asyncio as the main task's result. When
asyncio's runner puts the SIGINT handler back, Python 3.11's ``signal.getsignal`` builds
a ``ValueError`` message from the repr of that handler, which holds the task, whose repr
holds the repr of its result: a whole restoration, pydantic's full repr (34 MB at
bench/scale.py's 200 MB log, made and dropped at once, the peak of the restore). Here
the result is carried aside, so the task's own result is None.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar, TypeVarTuple

import anyio

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


def run(job: Callable[[*Ts], Awaitable[T]], *args: *Ts) -> T:
    """``anyio.run(job, *args)``, returning what ``job`` returned."""
    out: list[T] = []

    async def main() -> None:
        out.append(await job(*args))

    anyio.run(main)
    return out[0]
