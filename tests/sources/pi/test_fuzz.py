"""Fuzzing the pi reader and tree: any input is read or reported, never raised."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import TimelineSpan
from opencode_restore.sources.pi import tree as pi_tree
from opencode_restore.sources.pi.reader import READER, context_messages
from opencode_restore.sources.pi.tree import PiBranch

IDS = st.sampled_from(["a", "b", "c", "d", "e", "f", "g"])
TEXT = st.text(max_size=12)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
BLOCK = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": TEXT}),
    st.fixed_dictionaries({"type": st.just("thinking"), "thinking": TEXT}),
    st.fixed_dictionaries(
        {"type": st.just("toolCall"), "id": TEXT, "name": TEXT, "arguments": JSON}
    ),
    JSON,
)
MESSAGE = st.fixed_dictionaries(
    {
        "role": st.sampled_from(
            [
                "user",
                "assistant",
                "toolResult",
                "bashExecution",
                "custom",
                "hookMessage",
                "branchSummary",
                "compactionSummary",
                "alien",
            ]
        ),
    },
    optional={
        "content": TEXT | st.lists(BLOCK, max_size=3) | JSON,
        "timestamp": st.integers(-(10**15), 10**15) | JSON,
        "usage": st.dictionaries(st.sampled_from(["input", "output", "cacheRead"]), JSON),
        "command": TEXT | JSON,
        "exitCode": st.integers(-(2**31), 2**31) | JSON,
        "summary": TEXT | JSON,
        "errorMessage": TEXT,
        "model": TEXT | JSON,
    },
)
ENTRY = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            [
                "message",
                "compaction",
                "branch_summary",
                "custom",
                "custom_message",
                "label",
                "session_info",
                "model_change",
                "thinking_level_change",
                "weird",
            ]
        ),
    },
    optional={
        "id": IDS | JSON,
        "parentId": IDS | st.none() | JSON,
        "timestamp": st.sampled_from(["2026-01-01T00:00:00Z", "nope"]) | JSON,
        "message": MESSAGE | JSON,
        "summary": TEXT | JSON,
        "firstKeptEntryId": IDS | JSON,
        "firstKeptEntryIndex": st.integers(-2, 12) | JSON,
        "tokensBefore": st.integers(-(2**31), 2**31) | JSON,
        "targetId": IDS,
        "label": TEXT | JSON,
        "content": TEXT | JSON,
        "name": TEXT | JSON,
        "thinkingLevel": TEXT | JSON,
        "modelId": TEXT | JSON,
    },
)
HEADER = st.fixed_dictionaries(
    {"type": st.just("session"), "id": TEXT | JSON},
    optional={"version": st.sampled_from([1, 2, 3, 4]) | JSON, "cwd": TEXT | JSON},
)


def _branch_ids(branches: list[PiBranch]) -> list[str]:
    out: list[str] = []
    for b in branches:
        out.extend(e.id for e in b.entries)
        out.extend(_branch_ids(b.branches))
    return out


def _write(tmp: str, header: Any, lines: list[bytes]) -> Path:
    path = Path(tmp) / "session.jsonl"
    head = [orjson.dumps(header)] if header is not None else []
    path.write_bytes(b"\n".join(head + lines) + b"\n")
    return path


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    header=HEADER | st.none(),
    lines=st.lists(ENTRY.map(orjson.dumps) | st.binary(max_size=10), max_size=20),
)
def test_reader_never_raises(header: Any, lines: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(tmp, header, lines)
        sink = WarningSink()
        session = READER.read([path], sink)
        n_lines = len(path.read_bytes().splitlines())
        assert all(w.path == str(path) and 1 <= w.line <= n_lines for w in sink.warnings)
        every = [m for span in session.timeline.root.walk() for m in span.messages()]
        assert len({m.id for m in every}) == len(every)
        assert all(1 <= m.entry_index <= n_lines for m in every)
        assert list(READER.iter_messages([path], WarningSink())) == session.messages()
        assert all(
            isinstance(s, TimelineSpan) and s.span_type == "branch"
            for s in session.timeline.root.walk()
            if s is not session.timeline.root
        )
        context_messages(pi_tree.load(path, WarningSink()))


@settings(max_examples=300, deadline=None)
@given(
    edges=st.lists(st.tuples(IDS, IDS | st.none()), max_size=12),
    leaf=IDS | st.none(),
)
def test_path_and_branches_partition_the_reachable_tree(
    edges: list[tuple[str, str | None]], leaf: str | None
) -> None:
    header = {"type": "session", "version": 3, "id": "s"}
    lines = [
        orjson.dumps({"type": "message", "id": i, "parentId": p, "message": {"role": "user"}})
        for i, p in edges
    ]
    with tempfile.TemporaryDirectory() as tmp:
        pi = pi_tree.load(_write(tmp, header, lines), WarningSink())
    by_id = pi_tree.index_by_id(pi)

    def reachable(entry_id: str) -> bool:
        seen: set[str] = set()
        current: str | None = entry_id
        while current is not None and current in by_id:
            if current in seen:
                return False
            seen.add(current)
            current = by_id[current].parent_id
        return True

    path = pi_tree.active_path(pi, leaf)
    if path:
        assert path[0].parent_id not in by_id or not reachable(path[0].id)
        assert all(b.parent_id == a.id for a, b in itertools.pairwise(path))
    if path and reachable(path[-1].id):
        covered = [e.id for e in path] + _branch_ids(pi_tree.abandoned_branches(pi, path))
        assert len(covered) == len(set(covered))
        assert set(covered) == {i for i in by_id if reachable(i)}
    ctx = pi_tree.build_context(path)
    assert {e.id for e in ctx.entries} <= {e.id for e in path}
