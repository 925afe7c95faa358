"""Search relevance: the known-answer queries of ``fixtures/search/relevance.json``.

Registers every session of the set in a fresh store, indexes them (``search.index``), runs
each query through ``search.query.search`` and counts the queries whose answer session is
among the first three distinct sessions of the hits. Prints one line per miss (the query,
the sessions it found instead) and the figure. Target (issue 29): >= 90% in the top 3.

The real devset's sessions live outside this repository (default
``../shared/samples/real-devset``, or ``--real-devset`` / ``$OPENCODE_RESTORE_REAL_DEVSET``);
without them, their queries are left out and the figure is over the bundled sessions.

    python bench/relevance.py [--real-devset DIR] [--top 3] [--smoke]

``--smoke`` indexes the bundled sessions only (CI: it shows the bench still runs).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from common import parse_args  # noqa: E402
from opencode_restore.search.index import index_path, update  # noqa: E402
from opencode_restore.search.query import search  # noqa: E402
from opencode_restore.sources.opencode.reader import list_sessions  # noqa: E402
from opencode_restore.store import open_store  # noqa: E402

FIXTURE = ROOT / "fixtures" / "search" / "relevance.json"
REAL_ENV = "OPENCODE_RESTORE_REAL_DEVSET"
REAL_DEFAULT = ROOT.parent / "shared" / "samples" / "real-devset"
#: Hits looked at per query: enough to find the first three distinct sessions.
HITS = 200


@dataclass
class Outcome:
    """One query's result: the distinct sessions of its hits, best first."""

    id: str
    query: str
    answers: dict[str, list[str]]
    sessions: list[str] = field(default_factory=list)
    error: str | None = None

    def rank(self) -> int | None:
        """1-based rank of the first answer session among the hits' sessions, or None."""
        for at, sid in enumerate(self.sessions, 1):
            if sid in self.answers:
                return at
        return None


def real_devset_dir(flag: Path | None) -> Path:
    """The real devset: the flag, else the environment, else the sibling ``shared`` copy."""
    if flag is not None:
        return flag
    env = os.environ.get(REAL_ENV)
    return Path(env) if env else REAL_DEFAULT


def corpus(data: dict[str, Any], real: Path | None) -> dict[str, tuple[str, Path]]:
    """The sessions that can be indexed: name -> (agent, log); real-devset ones only when
    ``real`` is a folder holding them."""
    found: dict[str, tuple[str, Path]] = {}
    for name, s in data["sessions"].items():
        base = ROOT if s["set"] == "repo" else real
        if base is None:
            continue
        path = base / s["path"]
        if path.is_file():
            found[name] = (s["agent"], path)
    return found


def registered_id(name: str, agent: str, path: Path) -> str:
    """The id to register a session of the set under: its name, but an opencode export
    is read by the id it holds (under another, it reads as no session and is never
    indexed), as ``sessions scan`` registers it."""
    if agent != "opencode":
        return name
    roots = [s["id"] for s in list_sessions(path) if s["parent_id"] is None and s["id"]]
    return str(roots[0]) if roots else name


def evaluate(data_dir: Path, real: Path | None, fixture: Path = FIXTURE) -> list[Outcome]:
    """Index the set's sessions in ``data_dir`` and run every query whose answer sessions
    are all indexed."""
    data = json.loads(fixture.read_text(encoding="utf-8"))
    sessions = corpus(data, real)
    store = open_store(data_dir)
    names: dict[str, str] = {}  # registered id -> the set's name
    try:
        for name, (agent, path) in sessions.items():
            names[registered_id(name, agent, path)] = name
            store.register(registered_id(name, agent, path), agent, str(path))
        index = index_path(data_dir)
        update(store, index)
    finally:
        store.close()
    outcomes = []
    for q in data["queries"]:
        if not set(q["answers"]) <= set(sessions):
            continue
        out = Outcome(q["id"], q["query"], q["answers"])
        try:
            hits = search(index, q["query"], limit=HITS)
        except Exception as exc:  # a query the parser refuses is a miss, said as such
            out.error = str(exc).splitlines()[0]
        else:
            out.sessions = list(dict.fromkeys(names[h.session_id] for h in hits))
        outcomes.append(out)
    return outcomes


def report(outcomes: list[Outcome], top: int) -> float:
    """Print the misses and the figure; returns the share of queries answered in ``top``."""
    good = 0
    for o in outcomes:
        rank = o.rank()
        if rank is not None and rank <= top:
            good += 1
            continue
        found = o.error or (", ".join(o.sessions[:top]) or "no hits")
        print(f"miss  {o.id:24} {o.query!r}: rank {rank or '-'}; top: {found}")
    share = good / len(outcomes) if outcomes else 0.0
    print(
        f"relevance: {good}/{len(outcomes)} queries = {share:.1%} with the right session "
        f"in the top {top} (target >= 90%)"
    )
    return share


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--real-devset", type=Path, default=None, help="the real devset folder")
    parser.add_argument("--top", type=int, default=3, help="ranks that count as found")
    parser.add_argument("--bundled-only", action="store_true", help="leave the real devset out")
    args = parse_args(parser, {"bundled_only": True}, argv)
    real = None if args.bundled_only else real_devset_dir(args.real_devset)
    if real is not None and not real.is_dir():
        print(f"real devset: skipped, no folder {real} (set --real-devset or ${REAL_ENV})")
        real = None
    with tempfile.TemporaryDirectory(prefix="relevance-") as tmp:
        outcomes = evaluate(Path(tmp), real)
    report(outcomes, args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
