"""Redaction per sink, on a corpus we did not write: one sample per gitleaks rule (issue 31).

Plants the independent corpus of tests/security/gitleaks_corpus.py (221 kinds, each
generated from its gitleaks rule's own regex; 30 look-alikes) in one Claude Code session,
in ten placements (user text, thinking, a Write, Bash commands with echo and a heredoc, a
tool field named after the rule, tool output, a compaction summary, the workspace file
READ_FILE returns, the hook prompt, a malformed line), then runs every product path
(tests/security/sinks.py: restores offline in every format and against the fake OpenAI
server, batch, the hooks, the API, the MCP tools) and prints, per sink, the kinds
redacted, the kinds the sink held with redaction off (a sink holding a kind only when
unredacted is where redaction did its work; MCP, HTML and hook.log redact either way) and
the look-alikes intact among those it carries. Then the redactor's speed (CPU time) on
every distinct string of the fixture logs with the corpus: with its one Hyperscan pass and
with each literal looked for apart (where hyperscan has no wheel), interleaved rounds.

    python bench/redaction.py [--smoke] [--by-placement] [--ours]

``--by-placement`` adds, per placement, the kinds each sink leaks when the corpus sits
there alone (ten more runs): where the redactor still misses. ``--smoke``: 12 kinds and 8
look-alikes, redaction on only, 0.2 MB of strings (CI: it still runs). ``--ours`` also prints
the table for our own corpus (tests/security/corpus.py, 113 kinds in four placements, the
eight sinks of issue 14), which says 100 % because it was written with our rules.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import tempfile
import time
from collections.abc import Collection
from pathlib import Path
from unittest.mock import patch

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.security.corpus import LOOK_ALIKES, Case, secret_cases  # noqa: E402
from tests.security.gitleaks_corpus import load_samples, look_alikes, provenance  # noqa: E402
from tests.security.sinks import (  # noqa: E402
    EVERY_SINK,
    PLACEMENTS,
    SINKS,
    collect,
    collect_every_sink,
    holding,
    leaks,
    look_alike_cases,
    plant_log,
)

from opencode_restore import redact as redact_module  # noqa: E402
from opencode_restore.redact import Redactor, redact  # noqa: E402
from opencode_restore.redact.gitleaks import rule_set  # noqa: E402
from opencode_restore.redact.prefilter import COMPILE_AFTER, Prefilter  # noqa: E402


class _Env:
    """The one method of pytest's monkeypatch that ``collect_every_sink`` uses."""

    def setenv(self, key: str, value: str) -> None:
        os.environ[key] = value


def _run(
    cases: list[Case],
    others: list[Case],
    *,
    redacted: bool = True,
    placements: Collection[str] = PLACEMENTS,
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(kinds held, look-alikes held) per sink, from one planted session."""
    saved = dict(os.environ)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            sinks = collect_every_sink(
                Path(tmp),
                cases,
                _Env(),
                look_alikes=others,
                redact=redacted,
                placements=placements,
            )
    finally:
        # collect_every_sink sets HOME and the data dir: the next run starts clean.
        os.environ.clear()
        os.environ.update(saved)
    return holding(sinks, cases), holding(sinks, others)


def main() -> None:
    """Print the sink table (and, when asked, the placement table)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--smoke", action="store_true", help="12 kinds, redaction on only")
    parser.add_argument(
        "--by-placement", action="store_true", help="also the leaks per placement (10 runs)"
    )
    parser.add_argument("--ours", action="store_true", help="also our own corpus's table")
    args = parser.parse_args()
    samples = load_samples()[: 12 if args.smoke else None]
    cases = [Case(s.rule, s.text, s.secret) for s in samples]
    others = look_alike_cases(look_alikes())[: 8 if args.smoke else None]
    n, m = len(cases), len(others)
    started = time.perf_counter()
    on_kinds, on_alikes = _run(cases, others)
    off_kinds, off_alikes = (
        (on_kinds, on_alikes) if args.smoke else _run(cases, others, redacted=False)
    )
    source = provenance()
    print(
        f"gitleaks {source.get('version', '?')} ({source.get('commit', '?')[:12]}): "
        f"{n} secret kinds and {m} look-alikes in {len(PLACEMENTS)} placements, "
        f"{time.perf_counter() - started:.1f} s"
    )
    print(f"{'sink':20} | {'kinds redacted':>16} | {'held, off':>9} | {'look-alikes intact':>18}")
    print(f"{'-' * 20}-|-{'-' * 16}-|-{'-' * 9}-|-{'-' * 18}")
    for sink in EVERY_SINK:
        redacted = n - len(on_kinds[sink])
        carried = set(off_alikes[sink])
        intact = len(carried & set(on_alikes[sink]))
        held = "-" if args.smoke else f"{len(off_kinds[sink])}/{n}"
        # At smoke size nothing ran unredacted: the look-alikes held are all it can say.
        alikes = f"{intact}/{m} held" if args.smoke else f"{intact}/{len(carried)} carried"
        print(
            f"{sink:20} | {redacted:>5}/{n} ({100 * redacted / n:3.0f} %) | {held:>9} | "
            f"{alikes:>18}"
        )
    worst = min(EVERY_SINK, key=lambda s: n - len(on_kinds[s]))
    print(f"kinds {worst} leaks: {', '.join(on_kinds[worst]) or '-'}")
    if args.by_placement:
        _by_placement(cases)
    if args.ours:
        _ours(args.smoke)
    _speed([c.text for c in cases + others], 200_000 if args.smoke else None)


def _by_placement(cases: list[Case]) -> None:
    """Kinds leaked per sink (columns) with the corpus in one placement (rows)."""
    short = {s: s.replace("mcp ", "mcp:").replace("api ", "api")[:12] for s in EVERY_SINK}
    print()
    print(f"kinds leaked with the corpus in one placement only ({len(cases)} kinds)")
    print(f"{'placement':20} " + " ".join(f"{short[s]:>12}" for s in EVERY_SINK))
    named: dict[str, set[str]] = {}
    for placement in PLACEMENTS:
        kinds, _ = _run(cases, [], placements=(placement,))
        print(f"{placement:20} " + " ".join(f"{len(kinds[s]):>12}" for s in EVERY_SINK))
        named[placement] = {k for s in EVERY_SINK for k in kinds[s]}
    for placement, leaked in named.items():
        if leaked:
            print(f"  {placement}: {', '.join(sorted(leaked))}")


def _ours(smoke: bool) -> None:
    """Our corpus (issue 14's table): kinds redacted per sink, and held with redaction off."""
    cases = secret_cases()[: 12 if smoke else None]

    def run(redacted: bool) -> dict[str, list[str]]:
        saved = dict(os.environ)
        try:
            with tempfile.TemporaryDirectory() as tmp:
                log = plant_log(Path(tmp) / "session.jsonl", cases)
                return leaks(collect(Path(tmp), log, cases, _Env(), redact=redacted), cases)
        finally:
            os.environ.clear()
            os.environ.update(saved)

    on, off = run(True), run(False)
    n = len(cases)
    print()
    print(f"our corpus: {n} secret kinds; {len(LOOK_ALIKES)} look-alikes")
    print(f"{'sink':10} {'redacted':>9} {'held (redaction off)':>21}  leaked kinds")
    for sink in SINKS:
        print(
            f"{sink:10} {100 * (n - len(on[sink])) / n:8.1f}% {len(off[sink]):>14}/{n}"
            f"  {', '.join(on[sink]) or '-'}"
        )
    survivors = sum(redact(t)[0] == t for t in LOOK_ALIKES)
    print(f"look-alikes unchanged: {survivors}/{len(LOOK_ALIKES)}")


def _log_strings(limit: int | None) -> list[str]:
    """Every distinct string of the fixture logs, in file order, up to ``limit`` characters.

    Prose, tool inputs (JSON documents, commands, code), tool output, titles and ids, as
    a restore redacts them: ~18,700 strings, 4.3 MB, most under 100 characters.
    """
    seen: dict[str, None] = {}

    def walk(value: object) -> None:
        if isinstance(value, str):
            seen.setdefault(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    lines = (
        line
        for path in sorted((ROOT / "fixtures").rglob("*.jsonl"))
        for line in path.read_bytes().splitlines()
    )
    for line in lines:
        with contextlib.suppress(orjson.JSONDecodeError):
            walk(orjson.loads(line))
        if limit is not None and sum(map(len, seen)) >= limit:
            break
    return list(seen)


def _redact_all(texts: list[str]) -> float:
    """CPU seconds to redact ``texts`` with one Redactor, as a session is redacted."""
    redactor = Redactor()
    started = time.process_time()
    for text in texts:
        redactor.redact(text)
    return time.process_time() - started


def _speed(samples: list[str], limit: int | None) -> None:
    """The redactor's speed on distinct text (CPU time; three interleaved rounds): with its
    one Hyperscan pass, and with each literal looked for apart (the path where hyperscan
    has no wheel), both on the same strings."""
    texts = _log_strings(limit) + samples
    size = sum(map(len, texts))
    fast, plain = redact_module._prefilter(), redact_module._prefilter(fast=False)
    rules = rule_set()
    plain_rules = dataclasses.replace(
        rules, keywords=Prefilter(caseless=rules.keywords.caseless, fast=False)
    )
    fast.found("x" * COMPILE_AFTER)  # compiled now, as in a restore past its first MB
    _redact_all(texts)  # (and every gitleaks rule these texts reach)
    times: dict[str, list[float]] = {"one pass": [], "apart": []}
    for _ in range(3):
        times["one pass"].append(_redact_all(texts))
        with (
            patch.object(redact_module, "_prefilter", lambda: plain),
            patch.object(redact_module, "rule_set", lambda: plain_rules),
        ):
            times["apart"].append(_redact_all(texts))
    best = {path: min(seconds) for path, seconds in times.items()}
    print(
        f"redaction speed (CPU, {len(texts):,} distinct log strings, {size / 1e6:.1f} MB; "
        f"hyperscan {'on' if fast.fast else 'missing'}): "
        + ", ".join(f"{path} {size / 1e6 / s:.1f} MB/s" for path, s in best.items())
        + f"; {best['apart'] / best['one pass']:.1f}x"
    )


if __name__ == "__main__":
    main()
