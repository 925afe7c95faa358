"""Peak RSS and wall time of the CLI on each hostile input of issues 14 and 31.

Every case (tests/security/hostile_corpus.py) is generated in a temporary folder, then
read by the real CLI in its own process; the peak RSS comes from ``wait4`` (that child's
``ru_maxrss``). Children run under a 4 GB address-space limit and are killed as runaways
after ``RUNAWAY_S``, so a regression cannot take the machine.

Target: every case under 1.5 GB peak RSS and 60 s, ending in output or a one-line error.
The bench fails on the memory, a traceback or a runaway; the time is a printed figure with
its verdict (wall time on a loaded machine is slow, not wrong).
For the sized inputs the ratio of peak RSS to input size shows the streaming: a reader
that holds its input whole has a ratio of 2 to 20, a streamed one well under 1.

Issue 31, before -> after (2 shared cores; peak RSS, wall time):

    opencode-600mb (one 600 MB part)     3.5 GB, 17 s          -> 57 MB, 1 s (part skipped)
    opencode-generated-session-id        7-300 s, 0.2-1.8 GB   -> refused at once
    gemini-185mb-json (1M tiny records)  845 MB, 12 s (96 MB)  -> 541 MB, 9 s, capped
    claude-deep-100k / claude-deep-1000  RecursionError        -> a warning, the line skipped
    claude-10k-branches (restore)        21-100 s              -> 5.7 s, 20 model calls at most
    claude-10k-branches-tree             36-100 s              -> 1.9 s
    terminal-cursor-30000 (2.4 KB)       393 s of CPU          -> 1.4 s
    terminal-script-20000 (1.8 KB)       112 s                 -> 1.5 s
    eval-120mb-member-restore            > 130 s               -> 30 s to a one-line error
                                                                  (140,000 turns > 2,000)
    terminal-full-screen-60mb            ~60 s (1 MB/s, pyte)  -> 27 s, the last 16.8 MB
                                                                  replayed, with a warning

    python bench/hostile.py [--full] [--smoke] [--case NAME]

``--full`` grows the sized cases to the sizes the issues reported (1 GB zip member,
900 MB line, 50 MB request, 600 MB opencode.db, 185 MB Gemini session); by default they
are a third or so. The generated column stays at 200 MB a row: building a bigger one
costs the generator itself gigabytes.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "security"))

from hostile_corpus import CASES, FULL_SCALE  # noqa: E402

from common import RUNAWAY_S  # noqa: E402

#: The wall-time target of a case, seconds.
TARGET_SECONDS = 60.0
ADDRESS_SPACE = 4 << 30
TARGET_RSS_MB = 1536
#: Default scale of the cases whose full size takes a while to generate.
DEFAULT_SCALE = {
    "opencode-600mb": 0.3,
    "gemini-185mb-json": 0.3,
    "eval-120mb-member": 0.3,
    "eval-120mb-member-restore": 0.3,
    "terminal-full-screen-60mb": 0.5,
}


def _limit() -> None:  # runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def run_case(name: str, scale: float) -> tuple[float, float, int, str, float]:
    """(peak RSS in MB, seconds, exit code, last stderr line, input MB) of one case."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        args = CASES[name](root, scale)
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1e6
        env = {**os.environ, "OPENCODE_RESTORE_DATA_DIR": str(root / "data")}
        started = time.monotonic()
        with open(root / "stderr", "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "opencode_restore", *args],
                stdout=subprocess.DEVNULL,
                stderr=err,
                preexec_fn=_limit,
                env=env,
                cwd=root,
            )
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() - started > RUNAWAY_S:
                    proc.kill()
                    pid, status, usage = os.wait4(proc.pid, 0)
                    break
                time.sleep(0.05)
        seconds = time.monotonic() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        lines = (root / "stderr").read_text(errors="replace").strip().splitlines()
        last = lines[-1] if lines else ""
        return usage.ru_maxrss / 1024, seconds, proc.returncode, last, size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the sizes issue 14 reported")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, to check it runs")
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    opts = parser.parse_args()
    worst = 0.0
    failed = False
    for name in opts.case or CASES:
        scale = DEFAULT_SCALE.get(name, 1.0)
        scale = FULL_SCALE.get(name, 1.0) if opts.full else 0.05 if opts.smoke else scale
        rss, seconds, code, last, size = run_case(name, scale)
        worst = max(worst, rss)
        runaway = seconds > RUNAWAY_S
        failed |= rss >= TARGET_RSS_MB or runaway or last.startswith("Traceback")
        ratio = f"{rss / size:6.2f}x" if size >= 1 else "      -"
        late = " (over the 60 s target)" if seconds >= TARGET_SECONDS else ""
        print(
            f"{name:30} {size:8.1f} MB in {rss:7.0f} MB {ratio} {seconds:6.1f} s{late} exit {code}"
            + (" (killed: runaway)" if runaway else "")
        )
        if last:
            print(f"{'':30} {last[:100]}")
    print(f"largest peak RSS: {worst:.0f} MB (target < {TARGET_RSS_MB} MB)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
