"""``event_loop.run`` returns the job's result without asyncio ever formatting it."""

from __future__ import annotations

import anyio

from opencode_restore import event_loop


class Loud:
    """A result whose repr is costly (a long restoration's is tens of megabytes)."""

    reprs = 0

    def __repr__(self) -> str:
        Loud.reprs += 1
        return "Loud()"


async def _make(tag: str) -> tuple[str, Loud]:
    await anyio.sleep(0)
    return tag, Loud()


def test_the_result_comes_back_and_is_never_formatted() -> None:
    Loud.reprs = 0
    tag, result = event_loop.run(_make, "x")
    assert tag == "x"
    assert isinstance(result, Loud)
    assert Loud.reprs == 0
