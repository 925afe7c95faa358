"""Reading a long Claude Code log keeps a few compact bytes per entry, never the log's
text, and never Python objects per entry (a 1 GB log took 308 MB; bench/parse.py)."""

from __future__ import annotations

import tracemalloc
import uuid
from pathlib import Path

import orjson

from opencode_restore.diagnostics import WarningSink
from opencode_restore.sources.claude_code.scan import scan
from opencode_restore.sources.claude_code.tree import build_tree

from .tree_helpers import entry

ENTRIES = 30_000


def _long_log(path: Path) -> Path:
    """A conversation of prompts, replies and hook progress, with a tool result hanging
    off an earlier reply now and then (a side subtree folded into the live path)."""
    uids = [str(uuid.UUID(int=n + 1)) for n in range(ENTRIES)]
    kinds = ("user", "assistant", "progress", "assistant", "progress")
    with path.open("wb") as fh:
        last: str | None = None
        for n, uid in enumerate(uids):
            kind = kinds[n % len(kinds)]
            if n % 7 == 6 and kind != "user":  # a leaf: a prompt there would be a rewind
                line = entry(uid, uids[n - 3], kind)
            else:
                line, last = entry(uid, last, kind), uid
            fh.write(orjson.dumps(line) + b"\n")
    return path


def test_the_first_pass_and_the_tree_keep_under_100_bytes_per_entry(tmp_path: Path) -> None:
    path = _long_log(tmp_path / "long.jsonl")
    sink = WarningSink()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        s = scan([path], sink)
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.reset_peak()
        tree = build_tree(s, [path], sink)
        peak = tracemalloc.get_traced_memory()[1] - before - held
    finally:
        tracemalloc.stop()
    assert len(tree.main.active) > ENTRIES // 2
    # A dict and lists of uuid strings and ints took ~180 bytes per entry, and laying
    # out the tree ~80 more (sets and dicts of entry ids).
    assert held / ENTRIES < 100, held / ENTRIES
    assert peak / ENTRIES < 30, peak / ENTRIES
