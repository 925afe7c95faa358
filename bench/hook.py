"""How long an agent waits for ``opencode-restore hook``: a real payload, a fresh process.

Agents run the hook on every prompt and tool call, so its start-up is its cost. Both entry
points are timed alternately in one run (this machine's speed drifts): the CLI's
``opencode-restore hook`` and the lighter ``python -m opencode_restore.hooks``. The target
is a median well under 100 ms on an idle machine.

    python bench/hook.py [--runs 15]
    python bench/hook.py --smoke        # 3 runs each (CI sanity)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from common import ROOT, precompile

PAYLOADS = ROOT / "fixtures" / "hooks" / "claude-code" / "tui-compact" / "hooks_stdin.jsonl"
ENTRIES = {
    "opencode-restore hook": ["-m", "opencode_restore", "hook"],
    "python -m opencode_restore.hooks": ["-m", "opencode_restore.hooks"],
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--smoke", action="store_true", help="3 runs each")
    args = parser.parse_args(argv)
    runs = 3 if args.smoke else args.runs
    precompile()
    payload = PAYLOADS.read_text().splitlines()[0].encode()
    times: dict[str, list[float]] = {name: [] for name in ENTRIES}
    with tempfile.TemporaryDirectory() as data:
        env = dict(os.environ, OPENCODE_RESTORE_DATA_DIR=data, HOME="/home/dev")
        for _ in range(runs):
            for name, entry in ENTRIES.items():
                start = time.perf_counter()
                subprocess.run(
                    [sys.executable, *entry], input=payload, env=env, check=True, timeout=60
                )
                times[name].append(time.perf_counter() - start)
    for name, seconds in times.items():
        print(
            f"{name:<34} median {1000 * statistics.median(seconds):6.1f} ms"
            f"  best {1000 * min(seconds):6.1f} ms  ({runs} runs)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
