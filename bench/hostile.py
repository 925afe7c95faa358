"""Peak RSS and wall time of the CLI on each hostile input of issue 14 (item 4).

Every case (tests/security/hostile_corpus.py) is generated in a temporary folder, then
read by the real CLI in its own process; the peak RSS comes from ``wait4`` (that child's
``ru_maxrss``). Children run under a 4 GB address-space limit and a 60 s deadline, so a
regression fails fast instead of taking the machine.

Target: every case under 1.5 GB peak RSS and 60 s, ending in output or a one-line error.

    python bench/hostile.py [--full] [--smoke] [--case NAME]

``--full`` grows the sized cases to the sizes the issue reported (1 GB zip member,
900 MB line, 50 MB request); by default they are a third or so. The generated column
stays at 200 MB a row: building a bigger one costs the generator itself gigabytes.
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

DEADLINE = 60.0
ADDRESS_SPACE = 4 << 30
TARGET_RSS_MB = 1536


def _limit() -> None:  # runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def run_case(name: str, scale: float) -> tuple[float, float, int, str]:
    """(peak RSS in MB, seconds, exit code, last stderr line) of one case."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        args = CASES[name](root, scale)
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
                if time.monotonic() - started > DEADLINE:
                    proc.kill()
                    pid, status, usage = os.wait4(proc.pid, 0)
                    break
                time.sleep(0.05)
        seconds = time.monotonic() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        lines = (root / "stderr").read_text(errors="replace").strip().splitlines()
        return usage.ru_maxrss / 1024, seconds, proc.returncode, lines[-1] if lines else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the sizes issue 14 reported")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, to check it runs")
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    opts = parser.parse_args()
    worst = 0.0
    failed = False
    for name in opts.case or CASES:
        scale = FULL_SCALE.get(name, 1.0) if opts.full else 0.05 if opts.smoke else 1.0
        rss, seconds, code, last = run_case(name, scale)
        worst = max(worst, rss)
        ok = rss < TARGET_RSS_MB and seconds < DEADLINE and "Traceback" not in last
        failed |= not ok
        print(f"{name:28} {rss:8.0f} MB {seconds:6.1f} s exit {code}  {last[:90]}")
    print(f"largest peak RSS: {worst:.0f} MB (target < {TARGET_RSS_MB} MB)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
