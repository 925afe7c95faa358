"""Restore at scale: `opencode-restore restore` on one session of 1, 10, 50 and 200 MB.

Builds (once, under bench/_data/) a single long Claude Code session per size from the
real spotter sessions in fixtures/claude-code/spotter: each copy gets fresh uuids, keeps
one session id, and its first entry hangs under the previous copy's last one, so the
file reads as one conversation that went on and on (progress lines, tool calls, long
tool results, as a real log has). Each is restored as a user runs it (default offline
provider, evidence search on, timeline saved to a fresh data dir), in a child process,
and the bench prints per size: turns, wall and CPU seconds, CPU seconds per MB, and peak
RSS (from ``wait4``, so each run's own).

Targets: at 200 MB (the largest size), at least 10 MB/s of CPU time and a peak RSS of at
most 150 MB (issue 28); peak RSS under 200 MB at every size; CPU time per MB at the
largest size within 1.15x of that at 10 MB (per-turn cost flat). CPU time is compared
rather than wall time: this VM is shared and its wall clock drifts with the load; both
are printed.

    python bench/scale.py [--sizes 1 10 50 200] [--smoke]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import orjson

from common import DATA, ROOT, parse_args, precompile

#: 40 short tool-heavy sessions, then a long one with big progress and tool-result lines
#: (about 20 turns per MB, so both the bytes and the turns grow with the size).
SOURCES = [
    *[ROOT / "fixtures/claude-code/spotter/tool_heavy.jsonl"] * 40,
    ROOT / "fixtures/claude-code/spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
]
SESSION = "5ca1e000-0000-4000-8000-000000000000"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _copy(lines: list[str], previous: str | None) -> tuple[list[bytes], str | None]:
    """One copy of a source session: fresh uuids, one session id, chained to ``previous``."""
    fresh: dict[str, str] = {}

    def sub(m: re.Match[str]) -> str:
        return fresh.setdefault(m.group(0), str(uuid.uuid4()))

    out = []
    linked = False
    for line in lines:
        entry = orjson.loads(_UUID.sub(sub, line))
        if "sessionId" in entry:
            entry["sessionId"] = SESSION
        if not linked and "parentUuid" in entry and entry["parentUuid"] is None:
            entry["parentUuid"] = previous
            linked = True
        previous = entry.get("uuid", previous)
        out.append(orjson.dumps(entry) + b"\n")
    return out, previous


def build(target_mb: float) -> Path:
    """One Claude Code session of at least ``target_mb`` MB."""
    path = DATA / f"scale_claude_{target_mb:g}mb.jsonl"
    if path.exists() and path.stat().st_size >= target_mb * 1_000_000:
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    sources = [p.read_text(encoding="utf-8").splitlines() for p in SOURCES]
    tmp = path.with_suffix(".tmp")
    written = copies = 0
    previous: str | None = None
    with tmp.open("wb") as fh:
        while written < target_mb * 1_000_000:
            lines = sources[copies % len(sources)]
            copies += 1
            chunk, previous = _copy(lines, previous)
            for line in chunk:
                fh.write(line)
                written += len(line)
    tmp.replace(path)
    return path


def restore(path: Path, data_dir: Path) -> tuple[float, float, int, int]:
    """Wall seconds, CPU seconds, peak RSS (bytes) and turns of one restore in a child."""
    out = data_dir / "summary.json"
    cmd = [sys.executable, "-m", "opencode_restore", "restore", str(path), "--agent"]
    cmd += ["claude-code", "--format", "json", "-o", str(out), "--quiet"]
    # 200 MB is ~3,800 turns, over the default `restore.max_session_turns` (2,000).
    env = dict(
        os.environ,
        OPENCODE_RESTORE_DATA_DIR=str(data_dir),
        OPENCODE_RESTORE_RESTORE_MAX_SESSION_TURNS="1000000",
    )
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"restore exited with {code} on {path}: {err.decode(errors='replace')[-2000:]}")
    turns = int(orjson.loads(out.read_bytes())["turn_count"])
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, turns


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[1, 10, 50, 200], help="MB")
    args = parse_args(ap, {"sizes": [0.5, 1]})
    precompile()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load {os.getloadavg()}")
    print(
        f"{'MB':>6} {'turns':>6} {'wall s':>8} {'cpu s':>8} {'wall s/MB':>10} "
        f"{'cpu s/MB':>9} {'cpu MB/s':>9} {'peak RSS MB':>12}"
    )
    rows = []
    for size in args.sizes:
        path = build(size)
        mb = path.stat().st_size / 1e6
        with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
            wall, cpu, rss, turns = restore(path, Path(tmp))
        rows.append((size, mb, cpu / mb, rss))
        print(
            f"{mb:>6.1f} {turns:>6} {wall:>8.2f} {cpu:>8.2f} {wall / mb:>10.3f} "
            f"{cpu / mb:>9.3f} {mb / cpu:>9.1f} {rss / 1e6:>12.1f}"
        )
    _, mb, per_mb, rss = rows[-1]
    print(
        f"at {mb:.0f} MB: {1 / per_mb:.1f} MB/s CPU (target >= 10 at 200 MB), "
        f"peak RSS {rss / 1e6:.1f} MB (target <= 150 at 200 MB)"
    )
    peak = max(r[3] for r in rows)
    print(f"peak RSS at any size: {peak / 1e6:.1f} MB (target < 200)")
    reference = next((r for r in rows if r[0] == 10), None)
    if reference is not None and rows[-1][0] > 10:
        ratio = rows[-1][2] / reference[2]
        print(f"cpu s/MB at {rows[-1][1]:.0f} MB vs 10 MB: {ratio:.2f}x (target <= 1.15)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
