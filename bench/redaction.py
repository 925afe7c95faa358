"""Redaction per sink: how many of the 113 planted secret kinds each output still holds.

Plants the secret corpus of tests/security/corpus.py (synthetic values in the shapes of
the gitleaks rule families) in a Claude Code log, one turn per kind (the prompt, a Bash
command, a `.env` written with Write, a tool result), restores it (offline: markdown,
JSON, HTML, the saved timeline; openai against the fake server: the provider requests),
registers it through the hook (store titles, hook.log) and reads it through the API.
Prints, per sink, the kinds redacted and the kinds the sink held with redaction off (a
sink that shows a kind only when unredacted is where redaction did its work), then the
redaction speed on a 2 MB mixed text.

    python bench/redaction.py [--smoke]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.security.corpus import LOOK_ALIKES, Case, secret_cases  # noqa: E402
from tests.security.sinks import SINKS, collect, leaks, plant_log  # noqa: E402

from opencode_restore.redact import redact  # noqa: E402


class _Env:
    """The one method of pytest's monkeypatch that ``collect`` uses."""

    def setenv(self, key: str, value: str) -> None:
        os.environ[key] = value


def _run(cases: list[Case], redacted: bool) -> dict[str, list[str]]:
    with tempfile.TemporaryDirectory() as tmp:
        log = plant_log(Path(tmp) / "session.jsonl", cases)
        return leaks(collect(Path(tmp), log, cases, _Env(), redact=redacted), cases)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--smoke", action="store_true", help="12 kinds only (CI: it still runs)")
    args = parser.parse_args()
    cases = secret_cases()[: 12 if args.smoke else None]
    on, off = _run(cases, True), _run(cases, False)
    n = len(cases)
    print(f"{n} secret kinds planted; {len(LOOK_ALIKES)} look-alikes")
    print(f"{'sink':10} {'redacted':>9} {'held (redaction off)':>21}  leaked kinds")
    for sink in SINKS:
        held = len(off[sink])
        print(
            f"{sink:10} {100 * (n - len(on[sink])) / n:8.1f}% {held:>14}/{n}"
            f"  {', '.join(on[sink]) or '-'}"
        )
    survivors = sum(redact(t)[0] == t for t in LOOK_ALIKES)
    print(f"look-alikes unchanged: {survivors}/{len(LOOK_ALIKES)}")
    chunk = "\n".join(c.text for c in cases) + "\n" + "\n".join(LOOK_ALIKES) + "\n"
    text = chunk * (2_000_000 // len(chunk))
    best = min(_timed(text) for _ in range(3))
    print(f"redaction speed: {len(text) / 1e6:.1f} MB mixed text in {best:.2f} s")


def _timed(text: str) -> float:
    started = time.perf_counter()
    redact(text)
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
