"""Token-cost benchmark: turn-by-turn restore vs resending the whole transcript each turn.

Builds a 60-turn session from the real turns of the bundled Claude Code sessions (fresh
ids per copy), restores it with the real Anthropic SDK against the fake server (which
counts prompt tokens as chars/3.5; the fake model answers each turn with the offline
provider's summary of it, so summaries have realistic sizes), and prints:
- total prompt tokens of our turn calls vs a naive baseline that sends the whole
  transcript so far on every turn (target: naive/ours >= 5 at 60 turns; ours linear),
- the cacheable share: input tokens that sit in a prefix identical to the previous call's.
  ``bench/cost.py`` prices the same runs with the server's cache reads and writes.

    python bench/tokens.py [--turns 60] [--smoke]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import sys
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from common import parse_args  # noqa: E402
from fakes.fake_llm_server import FakeLLMServer, tokens  # noqa: E402
from opencode_restore.config import load_config  # noqa: E402
from opencode_restore.diagnostics import WarningSink  # noqa: E402
from opencode_restore.llm.offline import OfflineProvider  # noqa: E402
from opencode_restore.llm.registry import close_provider, get_provider  # noqa: E402
from opencode_restore.llm.settings import ProviderSettings  # noqa: E402
from opencode_restore.model import Message, Session, Timeline, TimelineEvent, TimelineSpan  # noqa: E402
from opencode_restore.pipeline.run import RestoreOptions, restore_session  # noqa: E402
from opencode_restore.pipeline.stages.turn_parser import parse_turns  # noqa: E402
from opencode_restore.sources import open_session  # noqa: E402
from opencode_restore.timeline.numbering import Numbering  # noqa: E402

SOURCES = [
    ROOT / "fixtures/claude-code/spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
    ROOT / "fixtures/claude-code/spotter/tool_heavy.jsonl",
    ROOT / "fixtures/opencode/recorded/tui-compact/export.json",
]


def build_session(n_turns: int) -> Session:
    """``n_turns`` real turns, cycled through the sources, with fresh message ids."""
    pool = []
    for path in SOURCES:
        session = open_session([path], WarningSink())
        pool.extend(t for t in parse_turns(session) if t.user_text)
    messages: list[Message] = []
    for i in range(n_turns):
        turn = pool[i % len(pool)]
        messages += [
            dataclasses.replace(m, id=f"t{i}:{m.id}", meta=dict(m.meta)) for m in turn.messages
        ]
    root = TimelineSpan(
        "root", "main", content=[TimelineEvent(m.id, "message", message=m) for m in messages]
    )
    return Session("bench-60", "claude-code", ["bench.jsonl"], Timeline(root), cwd="/w")


RANGE_TEXT = " ".join(["Earlier turns: the agent edited files and ran the tests [M1]."] * 15)


class BenchServer(FakeLLMServer):
    """Answers turn calls with prepared summaries, range calls with text, others minimally."""

    def __init__(self, summaries: list[dict[str, Any]]) -> None:
        super().__init__()
        self.summaries = list(summaries)

    def handle(
        self, path: str, headers: dict[str, str], body: Any, received: float | None = None
    ) -> tuple[int, dict[str, str], Any]:
        forced = (body.get("tool_choice") or {}).get("name")
        if forced == "emit_turn_summary" and self.summaries:
            self.script = [{"json": self.summaries.pop(0)}]
        elif forced is None:
            self.script = [{"text": RANGE_TEXT}]
        return super().handle(path, headers, body, received)


def offline_summaries(session: Session, budget: int) -> list[dict[str, Any]]:
    """What the offline provider says about each turn: the fake model's answers."""
    config = load_config(env={})
    config.restore.skip_evidence_search = True
    config.llm.context_budget_tokens = budget
    r = anyio.run(
        lambda: restore_session(session, config, OfflineProvider(), options=RestoreOptions())
    )
    return [t.model_dump() for t in r.turns]


def prompt_text(body: dict[str, Any]) -> str:
    """The request's prompt as one string, in the order the provider caches it."""
    parts: list[str] = []
    system = body.get("system") or []
    if isinstance(system, str):
        parts.append(system)
    else:
        parts += [b.get("text", "") for b in system]
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, str):
            parts.append(content)
        else:
            parts += [b.get("text", "") for b in content if isinstance(b, dict)]
    return "\x00".join(parts)


async def naive_tokens(session: Session, system_chars: int) -> list[int]:
    """Prompt tokens per turn if every call resent the whole transcript so far."""
    numbering = Numbering()
    so_far = 0
    out = []
    for turn in parse_turns(session):
        so_far += len(await numbering.messages_as_str(turn.messages))
        out.append(tokens(system_chars + so_far))
    return out


def _common_prefix(a: str, b: str) -> int:
    """Length of the common prefix, by bisection on slice equality (fast in C)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=60)
    args = parse_args(ap, {"turns": 6})
    session = build_session(args.turns)
    config = load_config(env={})
    config.restore.skip_evidence_search = True
    os.environ.setdefault("ANTHROPIC_API_KEY", "bench")
    with BenchServer(offline_summaries(session, config.llm.context_budget_tokens)) as server:
        provider = get_provider("anthropic:bench", ProviderSettings(base_url=server.base_url))

        async def job() -> None:
            try:
                r = await restore_session(session, config, provider, options=RestoreOptions())
            finally:
                await close_provider(provider)
            if r.failed_turns:
                sys.exit(f"{len(r.failed_turns)} turns failed: {r.failed_turns[0].error}")

        anyio.run(job)
        bodies = [r["body"] for r in server.requests]
    turn_bodies = [b for b in bodies if "turn" in str(b.get("tool_choice", {})).lower()] or bodies[
        :-1
    ]
    texts = [prompt_text(b) for b in turn_bodies]
    ours = [tokens(len(t)) for t in texts]
    system_chars = len(texts[0].split("\x00", 1)[0])
    naive = anyio.run(naive_tokens, session, system_chars)[: len(ours)]
    shared = 0
    for prev, cur in itertools.pairwise(texts):
        shared += tokens(_common_prefix(prev, cur))
    total_after_first = sum(ours[1:]) or 1
    print(
        f"session: {len(ours)} turns, {sum(len(m.text) for m in session.messages())} chars of log"
    )
    print("turn   ours/turn  ours cumulative  naive/turn  naive cumulative")
    cum_o = cum_n = 0
    for i, (o, n) in enumerate(zip(ours, naive, strict=False), start=1):
        cum_o += o
        cum_n += n
        if i % 10 == 0 or i == len(ours):
            print(f"{i:4d} {o:10d} {cum_o:16d} {n:11d} {cum_n:17d}")
    print(f"naive/ours at {len(ours)} turns: {cum_n / cum_o:.2f}  (target >= 5)")
    per_turn_first = sum(ours[: len(ours) // 2]) / max(1, len(ours) // 2)
    per_turn_second = sum(ours[len(ours) // 2 :]) / max(1, len(ours) - len(ours) // 2)
    print(
        f"mean prompt tokens/turn: first half {per_turn_first:.0f}, "
        f"second half {per_turn_second:.0f}"
    )
    print(
        f"cacheable share (prefix identical to the previous call): {shared / total_after_first:.1%}"
    )


if __name__ == "__main__":
    main()
