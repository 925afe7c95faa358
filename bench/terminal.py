"""Terminal-log read speed: `opencode-restore messages --agent terminal` end to end.

Builds (once, under bench/_data/) line-oriented terminal logs of at least 50 MB by
replicating bundled captures, one data set each:

* ``real``: every real line-oriented capture (what bench/parse.py measures): the Claude
  Code TUI captures of marot/spotter and the capture-pane snapshots of the offline
  recordings of opencode 1.18 (two-column screens, with and without escapes), Claude
  Code 2.1 and Codex 0.169;
* ``spotter``: the Claude Code captures alone; ``opencode``: the opencode snapshots alone;
* ``fullscreen``: the raw full-screen recordings of opencode 1.18 and Codex 0.169
  (``tui.typescript``, alternate screen and cursor addressing), replayed through pyte;
  ``--fullscreen-mb`` (default 5) sizes it, as replay runs at about 1 MB/s;
* ``seed_single`` / ``seed_multi``: the synthetic captures of the seed's sketch layout
  (ANSI coloured, ``\r`` spinner redraws). They are toys: a 557-byte session repeated,
  four messages in every 557 bytes, so they measure the cost per message, not a real log.

Each is read by the CLI in a child process (``messages --include-tools
--include-thinking --format jsonl``, output counted and dropped), and in this process by
the reader's own stripper and by the regex baseline (a plain compiled-regex ANSI strip,
line by line, decoded), for comparison. The three run in interleaved rounds and each
figure is the best of ``--runs`` rounds; the child's own peak RSS comes from
``os.wait4``. The load average is printed since other jobs may share the CPUs.

``--stages`` also times, in the same interleaved rounds, the reader's stages in this
process, each including the ones before it (strip; + sidebar cut; + pattern gate; the
whole reader), and prints the CPU seconds each adds, its share of the end-to-end CPU,
and the whole budget at 50 MB/s: where the time goes, and what a stage may cost.

Targets (CPU time): >= 50 MB/s end to end on ``real``, and the ratio to the regex
baseline (printed, measured in the same rounds); peak RSS < 200 MB.

    python bench/terminal.py [--mb 50] [--fullscreen-mb 5] [--runs 3] [--only real,...] [--gate]
                             [--stages] [--smoke]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

from common import (
    DATA,
    FIXTURES,
    REAL_TERMINAL,
    ROOT,
    count_lines,
    parse_args,
    precompile,
    replicate,
    run_messages,
)

SOURCES: dict[str, list[Path]] = {
    "real": REAL_TERMINAL,
    "spotter": sorted((FIXTURES / "terminal/real/spotter").glob("*.terminal.txt")),
    "opencode": sorted((FIXTURES / "terminal/real/opencode-tui").glob("0*.txt")),
    "fullscreen": [
        FIXTURES / f"terminal/real/{tui}/tui.typescript" for tui in ("opencode-tui", "codex-tui")
    ],
    "seed_single": [FIXTURES / "terminal/seed_single.log"],
    "seed_multi": [FIXTURES / "terminal/seed_multi.log"],
}


def build(name: str, target_mb: float) -> Path:
    """The data set ``name``, at least ``target_mb`` MB."""
    return replicate(DATA / f"terminal_{name}_{target_mb}mb.log", SOURCES[name], target_mb)


def run_cli(path: Path) -> tuple[float, float, int, int]:
    """``messages`` on the file as a child process (see ``common.run_messages``)."""
    return run_messages(path, "terminal")


#: The regex baseline: CSI, BEL/ST-ended OSC and two-byte escapes, nothing replayed.
_BASELINE = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def run_baseline(path: Path) -> tuple[float, float, int, int]:
    """A plain compiled-regex ANSI strip of each line, decoded: what a scanner that only
    strips costs, the yardstick of the end-to-end rate."""
    sub = _BASELINE.sub
    start, cpu = time.perf_counter(), time.process_time()
    n = 0
    with path.open("rb") as fh:
        for line in fh:
            sub(b"", line).decode("utf-8", "replace")
            n += 1
    return time.perf_counter() - start, time.process_time() - cpu, n, 0


def run_stripper(path: Path) -> tuple[float, float, int, int]:
    """The bare stripper (``ansi.iter_lines``) over the same file, in this process."""
    from opencode_restore.sources.terminal.ansi import iter_lines

    start, cpu = time.perf_counter(), time.process_time()
    n = 0
    with path.open("rb") as fh:
        for _ in iter_lines(fh):
            n += 1
    return time.perf_counter() - start, time.process_time() - cpu, n, 0


def run_sidebar(path: Path) -> tuple[float, float, int, int]:
    """The stripper and the sidebar cut (``layout.cut_sidebar_blocks``), in this process."""
    from opencode_restore.sources.terminal.ansi import iter_blocks
    from opencode_restore.sources.terminal.layout import cut_sidebar_blocks
    from opencode_restore.sources.terminal.patterns import default_patterns

    patterns = default_patterns()
    start, cpu = time.perf_counter(), time.process_time()
    with path.open("rb") as fh:
        n = sum(len(lines) for _, lines in cut_sidebar_blocks(iter_blocks(fh), patterns))
    return time.perf_counter() - start, time.process_time() - cpu, n, 0


def run_gate(path: Path) -> tuple[float, float, int, int]:
    """The stripper, the sidebar cut and the pattern gate over each block, in this process."""
    from opencode_restore.sources.terminal.ansi import iter_blocks
    from opencode_restore.sources.terminal.layout import cut_sidebar_blocks
    from opencode_restore.sources.terminal.patterns import default_patterns

    patterns = default_patterns()
    gate = patterns.gate
    if gate is None:
        sys.exit("the packaged patterns have no gate")
    start, cpu = time.perf_counter(), time.process_time()
    with path.open("rb") as fh:
        n = sum(len(gate.maybe(ls)) for _, ls in cut_sidebar_blocks(iter_blocks(fh), patterns))
    return time.perf_counter() - start, time.process_time() - cpu, n, 0


def run_reader(path: Path, gated: bool) -> tuple[float, float, int, int]:
    """The terminal reader in this process, with the pattern gate on or off.

    The gate (``sources/terminal/gate.py``) is the one speed trick of this reader:
    ``docs/performance.md`` records what it is worth, from these two lines.
    """
    from dataclasses import replace

    from opencode_restore.diagnostics import WarningSink
    from opencode_restore.sources.terminal.patterns import default_patterns
    from opencode_restore.sources.terminal.reader import TerminalReader

    patterns = default_patterns()
    reader = TerminalReader(patterns if gated else replace(patterns, gate=None))
    start, cpu = time.perf_counter(), time.process_time()
    n = sum(1 for _ in reader.iter_messages([path], WarningSink()))
    return time.perf_counter() - start, time.process_time() - cpu, n, 0


Timing = tuple[float, float, int, int]


def best_interleaved(fns: list[Callable[[Path], Timing]], path: Path, runs: int) -> list[Timing]:
    """Each of ``fns`` on ``path``, one after the other, ``runs`` rounds; the best
    (least CPU) of each. Interleaved, the ratios between them share the machine's load."""
    results: list[list[Timing]] = [[] for _ in fns]
    for _ in range(runs):
        for fn, out in zip(fns, results, strict=True):
            out.append(fn(path))
    return [min(out, key=lambda r: r[1]) for out in results]


STAGES = ("strip", "+ sidebar cut", "+ pattern gate", "+ line scanner (reader)")


def print_stages(size_mb: float, staged: list[Timing], cli: Timing) -> None:
    """The CPU seconds each stage adds, its share of the end-to-end CPU, and the budget:
    ``staged`` are cumulative (each includes the ones before), the rest is the CLI's
    start-up and output."""
    total = cli[1]
    print(f"  stages (cpu s, share of end to end {total:.2f} s; at 50 MB/s: {size_mb / 50:.2f} s)")
    before = 0.0
    for label, (_, cpu, _, _) in zip(STAGES, staged, strict=True):
        print(f"    {label:26}: {cpu - before:6.2f} s  {(cpu - before) / total:5.1%}")
        before = cpu
    rest = total - before
    print(f"    {'+ start-up, CLI output':26}: {rest:6.2f} s  {rest / total:5.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=50)
    ap.add_argument("--fullscreen-mb", type=float, default=5, help="size of the replayed set")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default=",".join(SOURCES), help="comma-separated data sets")
    ap.add_argument(
        "--gate", action="store_true", help="also time the reader in process, gate on and off"
    )
    ap.add_argument(
        "--stages", action="store_true", help="also time the reader's stages in process"
    )
    args = parse_args(ap, {"mb": 0.5, "fullscreen_mb": 0.3, "runs": 1})

    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average before: "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    precompile()
    if args.stages:
        # Compiled once, as the CLI does at start-up: not a cost of the first stage timed.
        from opencode_restore.sources.terminal.patterns import default_patterns

        default_patterns()
    for name in args.only.split(","):
        path = build(name, args.fullscreen_mb if name == "fullscreen" else args.mb)
        size_mb = path.stat().st_size / 1e6
        lines = count_lines(path)
        print(f"{name}: {size_mb:.1f} MB, {lines} lines ({path.relative_to(ROOT)})")
        stages: list[Callable[[Path], Timing]] = []
        if args.stages:
            stages = [run_sidebar, run_gate, lambda p: run_reader(p, True)]
        baseline, stripper, cli, *staged = best_interleaved(
            [run_baseline, run_stripper, run_cli, *stages], path, args.runs
        )
        for label, (wall, cpu, _, _) in (("regex baseline", baseline), ("bare stripper", stripper)):
            print(
                f"  {label:20}: {size_mb / wall:7.1f} MB/s  {lines / wall:10.0f} lines/s"
                f"  (cpu {size_mb / cpu:6.1f} MB/s)"
            )
        wall, cpu, msgs, rss = cli
        print(
            f"  messages end to end : {size_mb / wall:7.1f} MB/s  {lines / wall:10.0f} lines/s"
            f"  (cpu {size_mb / cpu:6.1f} MB/s, {baseline[1] / cpu:4.2f}x the regex baseline)"
            f"  peak RSS {rss / 1e6:6.1f} MB  {msgs} messages"
        )
        if staged:
            print_stages(size_mb, [stripper, *staged], cli)
        if args.gate:
            for gated in (True, False):
                run = [lambda p, g=gated: run_reader(p, g)]
                ((wall, cpu, msgs, _),) = best_interleaved(run, path, args.runs)
                print(
                    f"  reader, gate {'on ' if gated else 'off'}  : {size_mb / wall:7.1f} MB/s"
                    f"  {lines / wall:10.0f} lines/s  (cpu {size_mb / cpu:6.1f} MB/s)"
                    f"  {msgs} messages"
                )
    print("load average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
