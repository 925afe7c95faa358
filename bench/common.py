"""What the benchmarks share: byte-compiling the package, timing `messages`, ``--smoke``."""

from __future__ import annotations

import argparse
import compileall
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "_data"
FIXTURES = ROOT / "fixtures"
#: Seconds a bench waits for a server or a child before it calls it a runaway: a loaded CI
#: machine is slow, not wrong (a 20 s server-start wait once failed CI).
RUNAWAY_S = 300.0

#: The line-oriented terminal captures made by real agents (not the seed-sketch toys):
#: Claude Code 2.1 TUI captures of marot/spotter, and the capture-pane snapshots (with and
#: without escapes) of the offline recordings of opencode 1.18, Claude Code 2.1, Codex 0.169.
REAL_TERMINAL = sorted((FIXTURES / "terminal/real/spotter").glob("*.terminal.txt")) + sorted(
    p
    for tui in ("opencode-tui", "claude-tui", "codex-tui")
    for p in (FIXTURES / "terminal/real" / tui).glob("0*.txt")
)


def precompile() -> None:
    """Write the package's bytecode, as a regular ``pip install`` does.

    An editable install compiles nothing, and this environment sets
    PYTHONDONTWRITEBYTECODE, so without this every child would compile ~50 modules
    from source at start-up (~60 ms), which no installed copy pays.
    """
    compileall.compile_dir(ROOT / "src" / "opencode_restore", quiet=1)


def replicate(out: Path, sources: list[Path], target_mb: float) -> Path:
    """Concatenate whole copies of ``sources`` until ``out`` holds ``target_mb`` MB."""
    if out.exists() and out.stat().st_size >= target_mb * 1_000_000:
        return out
    blobs = [p.read_bytes() for p in sources]
    blobs = [b if b.endswith(b"\n") else b + b"\n" for b in blobs if b]
    if not blobs:
        sys.exit(f"no fixtures to build {out.name} from")
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


def run_messages(path: Path, agent: str) -> tuple[float, float, int, int]:
    """Wall seconds, CPU seconds, JSON lines printed and peak RSS (bytes) of
    ``opencode-restore messages --include-tools --include-thinking --format jsonl``
    run as a child process (its output is counted and dropped)."""
    cmd = [sys.executable, "-m", "opencode_restore", "messages", str(path), "--agent", agent]
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


def count_lines(path: Path) -> int:
    """Newlines in a file, read a megabyte at a time."""
    with path.open("rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


def parse_args(
    parser: argparse.ArgumentParser, smoke: dict[str, Any], argv: list[str] | None = None
) -> argparse.Namespace:
    """``parser``'s arguments, plus ``--smoke``: the ``smoke`` sizes as defaults.

    CI runs every bench with ``--smoke`` (``bench/smoke.py``) so a bench that no longer
    runs is seen at once; the figures at that size only show that it ran. Flags given
    explicitly still win over the smoke sizes.
    """
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes: check that the bench runs (CI)"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        parser.set_defaults(**smoke)
        args = parser.parse_args(argv)
    return args
