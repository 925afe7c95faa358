"""Every benchmark at its ``--smoke`` size, so a bench that no longer runs is seen in CI.

Runs each ``bench/*.py`` (but this file and ``common.py``) as ``python bench/X.py --smoke``
in its own process, as many at once as there are CPUs, and fails when one exits non-zero,
prints no figures, or outlives its deadline. The figures at smoke size mean nothing and
are not checked against any target; the elapsed time of each is printed.

    python bench/smoke.py [--deadline 300] [--jobs N] [NAME ...]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

BENCH = Path(__file__).resolve().parent
NOT_BENCHES = {"common.py", "smoke.py"}
#: A printed figure: a number with a decimal point or of two digits or more.
_FIGURE = re.compile(r"\d+\.\d+|\d\d+")


def benches() -> list[Path]:
    """The benchmark scripts, by name."""
    return sorted(p for p in BENCH.glob("*.py") if p.name not in NOT_BENCHES)


def run(path: Path, deadline: float) -> tuple[bool, float, str]:
    """(passed, seconds, what to show) for one bench at smoke size."""
    start = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, str(path), "--smoke"],
            cwd=BENCH.parent,
            capture_output=True,
            text=True,
            timeout=deadline,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False, time.monotonic() - start, f"no result within {deadline:.0f} s"
    elapsed = time.monotonic() - start
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
    if proc.returncode != 0:
        return False, elapsed, f"exit code {proc.returncode}\n{tail}"
    if not _FIGURE.search(proc.stdout):
        return False, elapsed, f"printed no figures\n{tail}"
    return True, elapsed, ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--deadline", type=float, default=300, help="seconds per bench")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="benches at once")
    parser.add_argument("names", nargs="*", help="only these benches (file stems)")
    args = parser.parse_args(argv)
    chosen = [p for p in benches() if not args.names or p.stem in args.names]
    failed = []
    start = time.monotonic()
    # At smoke size the figures mean nothing, so benches may share the CPUs.
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        runs = {pool.submit(run, path, args.deadline): path for path in chosen}
        for done in as_completed(runs):
            path = runs[done]
            ok, elapsed, detail = done.result()
            print(f"{path.name:<16} {'ok' if ok else 'FAILED':<7} {elapsed:6.1f} s", flush=True)
            if not ok:
                failed.append(path.name)
                print("  " + detail.replace("\n", "\n  "), flush=True)
    total = time.monotonic() - start
    print(f"{len(chosen)} benches at smoke size in {total:.1f} s; {len(failed)} failed")
    return 1 if failed or not chosen else 0


if __name__ == "__main__":
    sys.exit(main())
