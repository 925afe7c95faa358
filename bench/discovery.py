"""Session discovery benchmark: ``sessions list`` over a home holding N sessions.

Lays out (under a temporary HOME) N session files where the agents write them: Claude
Code (real recorded transcript, a fresh sessionId per copy, spread over 20 projects),
Codex rollouts, pi sessions and Gemini chats, in the proportions 70/15/10/5. Then runs
the listing the CLI runs (scan of the default locations into the store, then one page
of the store with titles) in-process:

* cold: the store is empty (first ``sessions list`` on a machine);
* warm: the store already knows every file (every later ``sessions list``);
* lookup: ``restore <prefix>`` resolution of one session id prefix, warm.

Target: warm listing of 1,000 sessions <= 0.5 s (reads only file heads and the store).

    python bench/discovery.py [--sessions 1000] [--repeat 5]
    python bench/discovery.py --smoke          # 50 sessions, one run (CI sanity)
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from opencode_restore.diagnostics import WarningSink  # noqa: E402
from opencode_restore.store import open_store  # noqa: E402
from opencode_restore.store.discovery import scan  # noqa: E402
from opencode_restore.store.lookup import find_session  # noqa: E402

FIX = ROOT / "fixtures"
CLAUDE = FIX / "claude-code/recorded/tui-compact/e57fea98-e10e-4cce-a470-5de2e7413154.jsonl"
CODEX = (
    FIX / "codex/recorded/exec-resume/"
    "rollout-2026-11-21T11-41-29-01a1fde9-539c-77f2-9e0a-d405fab49546.jsonl"
)
PI = FIX / "pi/own/tree-v3.jsonl"
GEMINI = FIX / "gemini/own/session-2026-02-04T07-00-gemresum.jsonl"


def build_home(home: Path, n: int) -> list[str]:
    """Write ``n`` sessions under ``home``; returns their ids."""
    claude, codex, pi, gemini = (p.read_text("utf-8") for p in (CLAUDE, CODEX, PI, GEMINI))
    ids: list[str] = []
    rng = random.Random(17)
    for k in range(n):
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        share = k % 20
        if share < 14:
            d = home / f".claude/projects/-home-dev-proj{k % 20}"
            text = claude.replace("e57fea98-e10e-4cce-a470-5de2e7413154", sid)
            # One /clear chain per file: distinct slugs keep every copy a session.
            text = text.replace('"slug":"', f'"slug":"s{k}-')
            name = f"{sid}.jsonl"
        elif share < 17:
            d = home / f".codex/sessions/2026/11/{k % 28 + 1:02d}"
            text = codex.replace("01a1fde9-539c-77f2-9e0a-d405fab49546", sid)
            name = f"rollout-2026-11-21T11-41-29-{sid}.jsonl"
        elif share < 19:
            d = home / f".pi/agent/sessions/--work-p{k % 7}--"
            text = pi.replace("sess-tree-0001", sid)
            name = f"2026-01-05T10-00-00-000Z_{sid}.jsonl"
        else:
            d = home / f".gemini/tmp/p{k % 5}/chats"
            text = gemini.replace("gem-resume", sid)
            name = f"session-2026-02-04T07-00-{sid[-8:]}.jsonl"
        d.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(text, "utf-8")
        ids.append(sid)
    return ids


def listing(data: Path) -> float:
    """Seconds for what ``sessions list`` does: scan, then a page with titles."""
    t0 = time.perf_counter()
    store = open_store(data)
    scan(store, sink=WarningSink())
    rows, total = store.sessions(limit=50)
    store.close()
    elapsed = time.perf_counter() - t0
    assert rows
    assert total > 0
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="50 sessions, one run")
    args = parser.parse_args()
    n, repeat = (50, 1) if args.smoke else (args.sessions, args.repeat)
    with tempfile.TemporaryDirectory(prefix="bench-discovery-") as tmp:
        home, data = Path(tmp) / "home", Path(tmp) / "data"
        ids = build_home(home, n)
        os.environ["HOME"] = str(home)
        os.environ.pop("CODEX_HOME", None)
        cold = listing(data)
        store = open_store(data)
        found = store.sessions(limit=1)[1]
        store.close()
        warm = [listing(data) for _ in range(repeat)]
        store = open_store(data)
        t0 = time.perf_counter()
        target = find_session(store, ids[n // 2][:13], sink=WarningSink())
        lookup = time.perf_counter() - t0
        store.close()
        assert target.id == ids[n // 2]
    print(f"sessions on disk      {n} ({found} listed)")
    print(f"cold listing          {cold:.3f} s (empty store)")
    print(f"warm listing          {statistics.median(warm):.3f} s median of {repeat}")
    print(f"id prefix lookup      {lookup * 1000:.1f} ms")
    print("target: warm listing <= 0.5 s for 1,000 sessions")


if __name__ == "__main__":
    main()
