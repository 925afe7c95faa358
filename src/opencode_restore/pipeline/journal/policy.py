"""What the journal shows a provider: pruning after the prompt cache expired, and rendering.

The request is laid out for the provider's prompt cache by `prompting.render` (stable
parts first, cache breakpoints at the end of the stream and of the turn's shared part).
While the cache is warm the rendered stream is never changed, so each call reads the
prefix the previous one wrote. Once the provider's cache TTL has passed (less a buffer)
that prefix is gone anyway: the bulky blocks older than the last few turns are then
shown truncated, once, with a system note that says so.
Folding earlier blocks into a range summary is the context budget's choice
(`pipeline.budget`); `Journal.compact` does the edit.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...llm.base import LLMRequest
from ..prompting import render as layout
from .data import Journal

#: Blocks older than the last few turns, this long or longer, are cut when the cache expired.
PRUNE_KEEP_TURNS = 4
PRUNE_MIN_CHARS = 600


def touch(journal: Journal, ttl_seconds: int) -> None:
    """The provider's cache was just written or read."""
    journal.cache.last_touch_at = journal.clock()
    journal.cache.last_ttl_seconds = ttl_seconds


def prune_expired(journal: Journal, ttl_seconds: int, buffer_seconds: int) -> None:
    """Truncate old bulky blocks when the cache outlived its TTL (the caller holds the lock).

    The first check after a load uses the TTL saved with the journal.
    """
    cache = journal.cache
    ttl = ttl_seconds
    if cache.loaded and cache.last_ttl_seconds:
        ttl = cache.last_ttl_seconds
    cache.loaded = False
    touched = cache.last_touch_at
    if ttl <= 0 or touched is None or journal.clock() - touched < ttl - buffer_seconds:
        return
    recent = {r.number for r in journal.turns[-PRUNE_KEEP_TURNS:]}
    pruned = 0
    for block in journal.blocks:
        bulky = block.kind in ("turn.summary", "evidence") and len(block.text) > PRUNE_MIN_CHARS
        if bulky and block.turn not in recent and not block.meta.get("pruned"):
            block.meta["pruned"] = True
            pruned += 1
    # The cache is gone either way; a new touch starts the next TTL window.
    cache.last_touch_at = None
    if not pruned:
        return
    journal.edited()
    idle = int(journal.clock() - touched)
    journal.append(
        "system.message",
        f"Context was pruned because the provider's prompt cache (TTL {ttl}s) expired "
        f"after {idle}s idle: {pruned} older blocks are shown truncated. The full turn "
        "summaries are kept in the restore state and the final restoration.",
    )
    journal.notices.append(f"{pruned} older blocks were truncated after the prompt cache expired.")


async def render(
    journal: Journal,
    base: LLMRequest,
    *,
    system: str,
    header: str,
    task: str,
    turn: str = "",
    ttl_seconds: int = 0,
    prune_buffer_seconds: int = 0,
    announcements: Sequence[str] = (),
    consume: bool = True,
) -> LLMRequest:
    """``base`` filled with the journal's stream, pruned first if the cache expired;
    ``turn`` (the part every call of the current turn shares) follows the stream.

    Pending notices are shown after the stable part and then dropped, unless ``consume``
    is False (the caller may render again and clears ``journal.notices`` itself).
    """
    async with journal.lock:
        prune_expired(journal, ttl_seconds, prune_buffer_seconds)
        notes = [*journal.notices, *announcements]
        if consume:
            journal.notices.clear()
        return layout.build_request(
            system=system,
            header=header,
            stream=journal.stream_messages(),
            announcements=notes,
            task=task,
            base=base,
            turn=turn,
        )
