"""Cross-session search: index build speed, index size, search latency, incremental update.

Generates SESSIONS Claude Code sessions (under bench/_data/search, once per size) from the
real samples (fixtures/ and ../shared/samples): each a copy of a sample with a fresh
session id and some of its words swapped for others of the samples' vocabulary, so the
index holds many distinct texts. Registers them in a fresh store and prints, all as CPU
time (user+sys of this process):

- index build: MB of log per CPU second (target >= 30);
- index size / the logs' bytes, and / the text indexed (UTF-8 bytes of the messages'
  searchable text, capped as indexed: the target, <= 0.5, is on this one);
- search p95 over a fixed set of queries, warm, each run ROUNDS times (target <= 50 ms);
- an incremental update after one new turn appended to one session (target <= 100 ms).

    python bench/search.py [--sessions 10000] [--rounds 5] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sqlite3
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA, FIXTURES, ROOT, parse_args
from opencode_restore.search.index import index_path, update
from opencode_restore.search.query import search
from opencode_restore.store.store import Store

SHARED = ROOT.parent / "shared" / "samples" / "claude-code"
QUERIES = [
    "test",
    "git status",
    '"diff stat"',
    "read*",
    "error kind:error",
    "greet shout",
    "file:README.md",
    "flag agent:claude-code",
    "kind:command python",
    "summary since:2020-01-01",
]
_WORD = re.compile(r"\b[a-z]{5,12}\b")


def samples() -> list[Path]:
    """Real Claude Code logs of a usual size (the huge ones would dominate the mix)."""
    found = [*FIXTURES.glob("claude-code/**/*.jsonl"), *SHARED.glob("**/*.jsonl")]
    return sorted(p for p in found if 5_000 < p.stat().st_size < 400_000 and "agent-" not in p.name)


def generate(out: Path, sessions: int, seed: int = 29) -> list[tuple[str, Path]]:
    """``sessions`` logs under ``out`` (made once), as (session id, path)."""
    listing = out / "sessions.json"
    if listing.is_file():
        return [(sid, Path(p)) for sid, p in json.loads(listing.read_text())]
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    rng = random.Random(seed)
    sources = [(p, p.read_text(encoding="utf-8", errors="replace")) for p in samples()]
    vocab = sorted({w for _, text in sources for w in _WORD.findall(text)})
    made: list[tuple[str, Path]] = []
    for n in range(sessions):
        _, text = sources[n % len(sources)]
        old = json.loads(text.splitlines()[0]).get("sessionId") or ""
        sid = str(uuid.UUID(int=rng.getrandbits(128)))
        swaps = {w: rng.choice(vocab) for w in rng.sample(vocab, 40)}
        body = _WORD.sub(lambda m, s=swaps: s.get(m.group(0), m.group(0)), text)
        if old:
            body = body.replace(old, sid)
        dest = out / f"{n // 1000:03d}" / f"{sid}.jsonl"
        dest.parent.mkdir(exist_ok=True)
        dest.write_text(body, encoding="utf-8")
        made.append((sid, dest))
        if n % 1000 == 999:
            print(f"  generated {n + 1}/{sessions}", file=sys.stderr, flush=True)
    listing.write_text(json.dumps([[sid, str(p)] for sid, p in made]))
    return made


def cpu() -> float:
    return time.process_time()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parse_args(parser, {"sessions": 6, "rounds": 1}, argv)
    logs = generate(DATA / f"search-{args.sessions}", args.sessions)
    work = DATA / f"search-work-{args.sessions}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    store = Store(work / "store.sqlite3")
    for sid, path in logs:
        store.register(sid, "claude-code", str(path), cwd=f"/home/dev/src/p{hash(sid) % 50}")
    log_bytes = sum(p.stat().st_size for _, p in logs)
    index = index_path(work)

    start = cpu()
    last = [0.0]

    def progress(done: int, total: int) -> None:
        if cpu() - last[0] > 10:
            last[0] = cpu()
            print(f"  indexed {done}/{total}", file=sys.stderr, flush=True)

    built = update(store, index, progress=progress)
    build = cpu() - start
    # The file as a build leaves it (no VACUUM: a user's index gets none).
    with sqlite3.connect(index) as conn:
        text = conn.execute("SELECT SUM(LENGTH(CAST(text AS BLOB))) FROM docs").fetchone()[0] or 0
        messages = conn.execute(
            "SELECT COUNT(DISTINCT sid || ':' || label) FROM entries"
        ).fetchone()[0]
    size = index.stat().st_size
    print(
        f"sessions {len(logs)}, messages {messages}, rows {built.rows},"
        f" log bytes {log_bytes / 1e6:.1f} MB"
    )
    print(f"index build: {log_bytes / 1e6 / build:.2f} MB/s of log ({build:.2f} s CPU)")
    print(
        f"index size: {size / 1e6:.2f} MB = {size / log_bytes:.3f} x the logs,"
        f" {size / max(text, 1):.3f} x the text indexed ({text / 1e6:.1f} MB)"
    )

    for q in QUERIES:  # warm: pages in the cache
        search(index, q)
    times: list[float] = []
    for _ in range(args.rounds):
        for q in QUERIES:
            t = cpu()
            search(index, q)
            times.append(cpu() - t)
    times.sort()
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    print(f"search: p95 {p95 * 1000:.2f} ms, median {times[len(times) // 2] * 1000:.2f} ms CPU")

    sid, path = logs[0]
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    turn = [ln for ln in lines if '"type":"user"' in ln or '"type": "user"' in ln][:1] + [
        ln for ln in lines if '"type":"assistant"' in ln or '"type": "assistant"' in ln
    ][:1]
    with path.open("a", encoding="utf-8") as fh:
        for ln in turn:
            fh.write(re.sub(r'"uuid":\s*"[^"]+"', f'"uuid":"{uuid.uuid4()}"', ln))
    t = cpu()
    grown = update(store, index, [sid])
    print(f"incremental update after one turn: {(cpu() - t) * 1000:.1f} ms CPU ({grown.rows} rows)")
    path.write_text("".join(lines), encoding="utf-8")  # the generated set stays as made
    store.close()
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
