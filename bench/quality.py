"""Summary quality: restore devset sessions offline and score each against its facts.

Two sets, each printed as `opencode-restore eval`'s table:

* recorded: ``fixtures/devset/facts.json`` (scripted sessions of five agents): facts kept,
  cited correctly, contradictions, summary tokens without the references appendix,
  citations that resolve. Targets: kept >= 90%, cited >= 85%, 0 contradictions, 100%
  resolve, <= 1,200 tokens.
* real: the real devset's ``facts-*.json`` (sessions real people had; not in this repo,
  default ``../shared/samples/real-devset``, or ``--real-devset`` /
  ``$OPENCODE_RESTORE_REAL_DEVSET``): per session its agent, kept, cited, ``must_not`` hits
  and tokens, then the ``overall:`` line as the set's ``check.py`` prints it. Targets (issue
  25): kept >= 75%, cited >= 65%, 0 must_not hits. When the folder has ``check.py``, it
  scores the very same restorations too and the bench fails if the figures differ. A
  missing folder is a note, not a failure (a clean clone has no ``../shared``).

    python bench/quality.py [--set recorded|real|both] [--real-devset DIR] [--facts FILE]
                            [-m provider:model] [--keep DIR] [--smoke]

``--smoke`` scores one small recording of each set (pi; the smallest real log), for CI:
it only shows the bench still runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from opencode_restore.cli.eval_cmd import evaluate, table  # noqa: E402
from opencode_restore.evaluate.facts_file import FactsFile, load_facts  # noqa: E402
from opencode_restore.evaluate.score import RecordingScore  # noqa: E402

FACTS = ROOT / "fixtures" / "devset" / "facts.json"
REAL_ENV = "OPENCODE_RESTORE_REAL_DEVSET"
REAL_DEFAULT = ROOT.parent / "shared" / "samples" / "real-devset"


def real_devset_dir(arg: Path | None) -> Path:
    """The real devset's folder: the flag, else the environment, else ``../shared/...``."""
    if arg is not None:
        return arg
    env = os.environ.get(REAL_ENV)
    return Path(env) if env else REAL_DEFAULT


def run_recorded(facts_path: Path, model: str, smoke: bool) -> None:
    """The recorded devset's table, as before the real devset existed."""
    facts = load_facts(facts_path)
    names = ["pi"] if smoke and "pi" in facts.recordings else list(facts.recordings)
    if smoke:
        names = names[:1]
    start = time.perf_counter()
    scores, _ = evaluate(facts, names, model=model, base_url=None, config_path=None, judge=None)
    sys.stdout.write(table(scores, {}))
    print(f"({len(names)} recordings in {time.perf_counter() - start:.1f} s, model {model})")


def _log_size(facts: FactsFile) -> int:
    sizes = [facts.log_path(n).stat().st_size for n in facts.recordings]
    return sum(sizes)


def real_facts(folder: Path, smoke: bool) -> list[FactsFile]:
    """The folder's facts files whose logs exist; ``smoke``: the one with the smallest log."""
    files = [load_facts(p) for p in sorted(folder.glob("facts*.json"))]
    files = [f for f in files if all(f.log_path(n).is_file() for n in f.recordings)]
    if smoke and files:
        files = [min(files, key=_log_size)]
    return files


def load_check(folder: Path) -> ModuleType | None:
    """The set's reference scorer ``check.py`` as a module, if the folder has one."""
    path = folder / "check.py"
    spec = importlib.util.spec_from_file_location("real_devset_check", path)
    if not path.is_file() or spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cross_check(check: ModuleType, facts: FactsFile, score: RecordingScore, kept: Path) -> str:
    """'' when ``check.py`` finds the same facts kept/cited and items hit, else the difference."""
    assert facts.path is not None
    data: Any = orjson.loads((kept / f"{score.recording}.json").read_bytes())
    raw: Any = orjson.loads(facts.path.read_bytes())
    theirs = check.score(data, raw, score.recording)
    ours = {
        "kept": sorted(f.id for f in score.facts if f.kept),
        "cited": sorted(f.id for f in score.facts if f.cited),
        "must_not": score.must_not_hit_ids,
    }
    ref = {
        "kept": sorted(r["id"] for r in theirs["facts"] if r["kept"]),
        "cited": sorted(r["id"] for r in theirs["facts"] if r["cited"]),
        "must_not": theirs["must_not_hit_ids"],
    }
    diff = [f"{k}: ours {ours[k]} check.py {ref[k]}" for k in ours if ours[k] != ref[k]]
    return "; ".join(diff)


def run_real(folder: Path, model: str, smoke: bool, keep: Path | None) -> int:
    """The real devset's table; 1 when check.py disagrees with our figures, else 0."""
    if not folder.is_dir():
        print(f"real devset: skipped, no folder {folder} (set --real-devset or ${REAL_ENV})")
        return 0
    files = real_facts(folder, smoke)
    if not files:
        print(f"real devset: skipped, no facts*.json with its log in {folder}")
        return 0
    check = load_check(folder)
    start = time.perf_counter()
    scores: list[RecordingScore] = []
    with tempfile.TemporaryDirectory(prefix="quality-") as tmp:
        out = keep or Path(tmp)
        disagree: list[str] = []
        for facts in files:
            got, _ = evaluate(
                facts,
                list(facts.recordings),
                model=model,
                base_url=None,
                config_path=None,
                judge=None,
                keep=out,
            )
            scores += got
            if check is not None:
                disagree += [
                    f"{s.recording}: {d}" for s in got if (d := cross_check(check, facts, s, out))
                ]
    elapsed = time.perf_counter() - start
    sys.stdout.write(table(scores, {}))
    print(f"({len(scores)} real sessions from {folder} in {elapsed:.1f} s, model {model})")
    if check is None:
        print("check.py: not in the folder, not cross-checked")
        return 0
    if disagree:
        print("check.py DISAGREES on the same restorations:")
        print("\n".join("  " + d for d in disagree))
        return 1
    print("check.py: same facts kept and cited, same must_not hits on the same restorations")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--set", choices=["recorded", "real", "both"], default="both")
    parser.add_argument("--facts", type=Path, default=FACTS, help="the recorded set's facts")
    parser.add_argument(
        "--real-devset",
        type=Path,
        default=None,
        help=f"the real devset's folder (default ${REAL_ENV}, else {REAL_DEFAULT})",
    )
    parser.add_argument("-m", "--model", default="offline")
    parser.add_argument("--keep", type=Path, default=None, help="keep the real restorations")
    parser.add_argument("--smoke", action="store_true", help="one small recording per set")
    args = parser.parse_args(argv)
    status = 0
    if args.set in ("recorded", "both"):
        print("== recorded devset")
        run_recorded(args.facts, args.model, args.smoke)
    if args.set in ("real", "both"):
        print("== real devset")
        status = run_real(real_devset_dir(args.real_devset), args.model, args.smoke, args.keep)
    return status


if __name__ == "__main__":
    sys.exit(main())
