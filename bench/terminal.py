"""Terminal-log read speed: `opencode-restore messages --agent terminal` end to end.

Builds (once, under bench/_data/) line-oriented terminal logs of at least 50 MB by
replicating the bundled captures: the seed-sketch opencode logs (ANSI coloured, ``\\r``
spinner redraws) and the Claude Code TUI captures of marot/spotter (plain text). Each is
read by the CLI in a child process (``messages --include-tools --include-thinking
--format jsonl``, output counted and dropped) and by the bare ANSI stripper in this
process, for comparison. Each figure is the best of ``--runs``; the child's own peak RSS
comes from ``os.wait4``. The load average is printed since other jobs may share the CPUs.

Targets: >= 50 MB/s end to end, peak RSS < 200 MB.

    python bench/terminal.py [--mb 50] [--runs 3] [--only seed_single,...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "_data"
FIXTURES = ROOT / "fixtures" / "terminal"
SOURCES: dict[str, list[Path]] = {
    "seed_single": [FIXTURES / "seed_single.log"],
    "seed_multi": [FIXTURES / "seed_multi.log"],
    "spotter": sorted((FIXTURES / "real" / "spotter").glob("*.terminal.txt")),
}


def build(name: str, target_mb: int) -> Path:
    """Concatenate whole copies of the sources until the file holds ``target_mb`` MB."""
    out = DATA / f"terminal_{name}_{target_mb}mb.log"
    if out.exists() and out.stat().st_size >= target_mb * 1_000_000:
        return out
    blobs = [p.read_bytes() for p in SOURCES[name]]
    blobs = [b if b.endswith(b"\n") else b + b"\n" for b in blobs if b]
    if not blobs:
        sys.exit(f"no fixtures for {name}")
    DATA.mkdir(parents=True, exist_ok=True)
    written = 0
    tmp = out.with_suffix(".tmp")
    with tmp.open("wb") as fh:
        while written < target_mb * 1_000_000:
            for blob in blobs:
                fh.write(blob)
                written += len(blob)
    tmp.replace(out)
    return out


def run_cli(path: Path) -> tuple[float, float, int, int]:
    """Wall seconds, CPU seconds, JSON lines printed and peak RSS (bytes) of the child."""
    cmd = [sys.executable, "-m", "opencode_restore", "messages", str(path), "--agent", "terminal"]
    cmd += ["--include-tools", "--include-thinking", "--format", "jsonl"]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    count = 0
    while chunk := proc.stdout.read(1 << 20):
        count += chunk.count(b"\n")
    # wait4 gives this child's own rusage, so each run's peak RSS is its own.
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"messages exited with {os.waitstatus_to_exitcode(status)} on {path}")
    return elapsed, usage.ru_utime + usage.ru_stime, count, usage.ru_maxrss * 1024


def run_stripper(path: Path) -> tuple[float, float, int, int]:
    """The bare stripper (``ansi.iter_lines``) over the same file, in this process."""
    from opencode_restore.sources.ansi import iter_lines

    start, cpu = time.perf_counter(), time.process_time()
    n = 0
    with path.open("rb") as fh:
        for _ in iter_lines(fh):
            n += 1
    return time.perf_counter() - start, time.process_time() - cpu, n, 0


def best(
    fn: Callable[[Path], tuple[float, float, int, int]], path: Path, runs: int
) -> tuple[float, float, int, int]:
    results = [fn(path) for _ in range(runs)]
    return min(results, key=lambda r: r[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=50)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default=",".join(SOURCES), help="comma-separated data sets")
    args = ap.parse_args()

    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average before: "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    for name in args.only.split(","):
        path = build(name, args.mb)
        size_mb = path.stat().st_size / 1e6
        with path.open("rb") as fh:
            lines = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
        print(f"{name}: {size_mb:.1f} MB, {lines} lines ({path.relative_to(ROOT)})")
        wall, cpu, _, _ = best(run_stripper, path, args.runs)
        print(
            f"  bare stripper       : {size_mb / wall:7.1f} MB/s  {lines / wall:10.0f} lines/s"
            f"  (cpu {size_mb / cpu:6.1f} MB/s)"
        )
        wall, cpu, msgs, rss = best(run_cli, path, args.runs)
        print(
            f"  messages end to end : {size_mb / wall:7.1f} MB/s  {lines / wall:10.0f} lines/s"
            f"  (cpu {size_mb / cpu:6.1f} MB/s)  peak RSS {rss / 1e6:6.1f} MB  {msgs} messages"
        )
    print("load average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
