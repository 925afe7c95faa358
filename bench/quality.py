"""Summary quality: restore every devset recording offline and score it against its facts.

Prints `opencode-restore eval`'s table (facts kept, cited correctly, contradictions, summary
tokens without the references appendix, citations that resolve) per recording. Targets:
kept >= 90%, cited >= 85%, 0 contradictions, 100% resolve, <= 1,200 tokens.

    python bench/quality.py [--facts FILE] [-m provider:model] [--smoke]

``--smoke`` scores one small recording (pi), for CI: it only shows the bench still runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from opencode_restore.cli.eval_cmd import evaluate, table  # noqa: E402
from opencode_restore.evaluate.facts_file import load_facts  # noqa: E402

FACTS = ROOT / "fixtures" / "devset" / "facts.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=Path, default=FACTS)
    parser.add_argument("-m", "--model", default="offline")
    parser.add_argument("--smoke", action="store_true", help="one small recording only")
    args = parser.parse_args()
    facts = load_facts(args.facts)
    names = ["pi"] if args.smoke and "pi" in facts.recordings else list(facts.recordings)
    if args.smoke:
        names = names[:1]
    start = time.perf_counter()
    scores, _ = evaluate(
        facts, names, model=args.model, base_url=None, config_path=None, judge=None
    )
    sys.stdout.write(table(scores, {}))
    print(f"({len(names)} recordings in {time.perf_counter() - start:.1f} s, model {args.model})")


if __name__ == "__main__":
    main()
