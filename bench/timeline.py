"""Benchmark: extract, number and format N messages spread over N/100 spans.

Run: ``python bench/timeline.py [--sizes 10000,30000,100000] [--repeat 3] [--smoke]``

For each size it builds a synthetic timeline (1,000 spans at 100k messages; a mix of
user text, thinking, tool calls with arguments, long tool results that hit the cap and
summary compaction markers), then times:

* ``scan``: ``timeline_messages`` + one shared ``Numbering.messages_as_str`` per segment
  (what a restore does for every span),
* ``cite``: resolving an LLM answer that cites every 10th label, plus ranges, plus
  unknown labels.

It prints microseconds per message for each size and the ratio to the smallest size: a
linear implementation keeps the per-message cost flat (ratio near 1.0).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable

from common import parse_args
from opencode_restore.model import (
    Compaction,
    Message,
    Timeline,
    TimelineEvent,
    TimelineSpan,
)
from opencode_restore.timeline import Numbering, timeline_messages

MESSAGES_PER_SPAN = 100
COMPACTION_EVERY = 40  # a summary marker every 40 messages splits spans into segments


def make_message(span: int, n: int) -> Message:
    """Message ``n`` of span ``span``: one of five block kinds, in a fixed rotation."""
    mid = f"s{span}-m{n}"
    match n % 5:
        case 0:
            message = Message(mid, "user", "text", f"please handle item {n}")
        case 1:
            message = Message(mid, "assistant", "thinking", "considering " * 20)
        case 2:
            message = Message(mid, "assistant", "tool_use", "", tool_name="Edit")
            message.tool_input = {"file_path": f"src/m{n}.py", "old": "a" * 200, "new": "b" * 200}
        case 3:
            message = Message(mid, "tool", "tool_result", "line of output\n" * 600)
        case _:
            message = Message(mid, "assistant", "text", f"done with {n}")
    message.file_index = span
    message.entry_index = n + 1
    return message


def make_timeline(total: int) -> Timeline:
    spans: list[TimelineEvent | TimelineSpan] = []
    for s in range(total // MESSAGES_PER_SPAN):
        events: list[TimelineEvent | TimelineSpan] = []
        for n in range(MESSAGES_PER_SPAN):
            if n and n % COMPACTION_EVERY == 0:
                marker = Message(
                    id=f"s{s}-c{n}",
                    role="system",
                    type="compaction",
                    text="summary of the work so far",
                    compaction=Compaction(kind="summary", tokens_before=150_000),
                )
                events.append(TimelineEvent(uuid=marker.id, kind="message", message=marker))
            message = make_message(s, n)
            events.append(TimelineEvent(uuid=message.id, kind="message", message=message))
        spans.append(TimelineSpan(id=f"span{s}", name=f"agent{s}", content=events))
    return Timeline(TimelineSpan(id="root", name="root", content=spans))


def citation_text(issued: int) -> str:
    parts = [f"Claim {n} [M{n}]." for n in range(1, issued + 1, 10)]
    parts += [f"Range [M{n}-M{n + 4}, M{n + 7}]." for n in range(3, issued, 50)]
    parts.append(f"Unknown [M{issued + 1}-M{issued + 500}] and [M0].")
    return " ".join(parts)


async def scan(timeline: Timeline) -> tuple[Numbering, int]:
    numbering = Numbering()
    chars = 0
    async for item in timeline_messages(timeline):
        chars += len(await numbering.messages_as_str(item.messages))
    return numbering, chars


def best_of(repeat: int, run: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,30000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parse_args(parser, {"sizes": "1000,3000", "repeat": 1})
    sizes = [int(s) for s in args.sizes.split(",")]

    print(
        f"{'messages':>9} {'spans':>6} {'labels':>7} {'scan s':>8} {'scan µs/msg':>12} "
        f"{'cite s':>8} {'cite µs/msg':>12}"
    )
    baseline: tuple[float, float] | None = None
    rows: list[tuple[int, float, float]] = []
    for size in sizes:
        timeline = make_timeline(size)
        numbering, _ = asyncio.run(scan(timeline))
        text = citation_text(len(numbering))
        scan_s = best_of(args.repeat, lambda: asyncio.run(scan(timeline)))  # noqa: B023
        cite_s = best_of(args.repeat, lambda: numbering.resolve(text))  # noqa: B023
        scan_us, cite_us = scan_s / size * 1e6, cite_s / size * 1e6
        baseline = baseline or (scan_us, cite_us)
        rows.append((size, scan_us, cite_us))
        print(
            f"{size:>9} {size // MESSAGES_PER_SPAN:>6} {len(numbering):>7} {scan_s:>8.3f} "
            f"{scan_us:>12.2f} {cite_s:>8.4f} {cite_us:>12.3f}"
        )
    assert baseline is not None
    print("\nper-message cost relative to the smallest size (1.0 = perfectly linear):")
    for size, scan_us, cite_us in rows:
        print(f"{size:>9}  scan x{scan_us / baseline[0]:.2f}  cite x{cite_us / baseline[1]:.2f}")


if __name__ == "__main__":
    main()
