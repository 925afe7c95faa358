"""pi session tree: in-memory migration, leaf and path, context rebuilding, branches."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson
import pytest

from opencode_restore.diagnostics import WarningSink
from opencode_restore.sources.pi import tree as pi_tree
from opencode_restore.sources.pi.tree import PiEntry, PiFile

PI = Path(__file__).resolve().parents[3] / "fixtures" / "pi"
LARGE = PI / "pi-mono" / "large-session.jsonl"
BEFORE = PI / "pi-mono" / "before-compaction.jsonl"
OWN = PI / "own"


def _load(path: Path) -> PiFile:
    sink = WarningSink()
    pi = pi_tree.load(path, sink)
    assert sink.warnings == []
    return pi


def _role(e: PiEntry) -> str | None:
    message = e.data.get("message")
    return message.get("role") if isinstance(message, dict) else None


def _write(tmp_path: Path, *lines: dict[str, Any] | str) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        b"".join((x.encode() if isinstance(x, str) else orjson.dumps(x)) + b"\n" for x in lines)
    )
    return path


def _entry(kind: str, id_: str, parent: str | None, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "id": id_, "parentId": parent, "timestamp": "2026-01-01T00:00:00Z"} | (
        fields
    )


def _msg(id_: str, parent: str | None, role: str, text: str = "x") -> dict[str, Any]:
    return _entry("message", id_, parent, message={"role": role, "content": text})


HEADER3 = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00Z"}


# --- EXPECTATIONS: large-session.jsonl ---------------------------------------------------


def test_large_session_is_v1_with_the_observed_counts() -> None:
    pi = _load(LARGE)
    assert pi.version == 1
    assert pi.header is not None
    assert pi.header["version"] == 3  # migrated in memory
    assert len(pi.entries) + 1 == 1019
    kinds = [e.type for e in pi.entries]
    roles = [_role(e) for e in pi.entries if e.type == "message"]
    assert (roles.count("assistant"), roles.count("toolResult"), roles.count("user")) == (
        453,
        373,
        88,
    )
    assert (kinds.count("thinking_level_change"), kinds.count("model_change")) == (103, 1)
    assert len(pi.entries) > 100
    assert len(roles) > 100


def test_large_session_context_has_over_100_messages_and_a_model() -> None:
    pi = _load(LARGE)
    ctx = pi_tree.build_context(pi_tree.active_path(pi))
    assert ctx.compaction is None
    assert len(ctx.entries) > 100
    assert len(ctx.entries) == 453 + 373 + 88
    assert ctx.model is not None
    assert ctx.model == ("anthropic", "claude-sonnet-4-5")
    assert ctx.thinking_level in ("off", "minimal", "low", "medium", "high")


# --- EXPECTATIONS: before-compaction.jsonl -----------------------------------------------


def test_before_compaction_has_two_compactions_at_the_observed_indexes() -> None:
    pi = _load(BEFORE)
    assert pi.version == 1
    assert len(pi.entries) + 1 == 1003
    assert pi.header is not None
    assert pi.header["branchedFrom"].endswith("_d97339c6-6c10-4827-846b-9ff1d9c3dc37.jsonl")
    comps = [e for e in pi.entries if e.type == "compaction"]
    assert [(c.index, c.line) for c in comps] == [(359, 360), (628, 629)]
    assert [c.data["tokensBefore"] for c in comps] == [175004, 185014]
    # firstKeptEntryIndex 293 / 551 (header = 0) became ids of those entries
    assert "firstKeptEntryIndex" not in comps[0].data
    by_id = pi_tree.index_by_id(pi)
    kept = [by_id[c.data["firstKeptEntryId"]] for c in comps]
    assert [k.index for k in kept] == [293, 551]
    assert [_role(k) for k in kept] == ["user", "user"]
    roles = [_role(e) for e in pi.entries]
    assert roles.count("bashExecution") == 3


def test_before_compaction_context_follows_only_the_latest_compaction() -> None:
    pi = _load(BEFORE)
    path = pi_tree.active_path(pi)
    ctx = pi_tree.build_context(path)
    assert ctx.compaction is not None
    assert ctx.compaction.index == 628
    assert ctx.entries[0] is ctx.compaction
    assert ctx.entries[1].index == 551
    # kept entries up to the compaction, then everything after it, in order
    rest = [e.index for e in ctx.entries[1:]]
    assert rest == sorted(rest)
    assert all(551 <= i < 628 or i > 628 for i in rest)
    assert rest[-1] == 1001  # line 1003 (index 1002) is a thinking_level_change
    assert ctx.model == ("anthropic", "claude-opus-4-5")


# --- migration (pi's migration.test.ts facts) --------------------------------------------


def test_v1_migration_gives_8_hex_ids_chained_to_the_previous_entry() -> None:
    pi = _load(LARGE)
    ids = [e.id for e in pi.entries]
    assert all(len(i) == 8 and int(i, 16) >= 0 for i in ids)
    assert len(set(ids)) == len(ids)
    assert pi.entries[0].parent_id is None
    assert [e.parent_id for e in pi.entries[1:]] == ids[:-1]
    # deterministic: the same file always gets the same ids
    assert [e.id for e in _load(LARGE).entries] == ids


def test_v1_migration_counts_only_parsed_entries(tmp_path: Path) -> None:
    sink = WarningSink()
    pi = pi_tree.load(OWN / "small-v1.jsonl", sink)
    assert [w.line for w in sink.warnings] == [4]
    assert [(e.index, e.line, e.id) for e in pi.entries] == [
        (1, 2, "00000001"),
        (2, 3, "00000002"),
        (3, 5, "00000003"),
        (4, 7, "00000004"),
        (5, 8, "00000005"),
    ]
    assert pi.entries[3].data["firstKeptEntryId"] == "00000003"


def test_v1_index_pointing_at_the_header_or_nowhere_is_dropped(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {"type": "session", "id": "s", "timestamp": "t"},
        {"type": "compaction", "summary": "a", "firstKeptEntryIndex": 0, "tokensBefore": 1},
        {"type": "compaction", "summary": "b", "firstKeptEntryIndex": 99, "tokensBefore": 1},
    )
    pi = _load(path)
    assert [e.data.get("firstKeptEntryId") for e in pi.entries] == [None, None]
    assert all("firstKeptEntryIndex" not in e.data for e in pi.entries)


def test_v2_ids_are_kept_and_hook_message_becomes_custom() -> None:
    raw = [orjson.loads(line) for line in (OWN / "hook-v2.jsonl").read_bytes().splitlines()]
    pi = _load(OWN / "hook-v2.jsonl")
    assert pi.version == 2
    assert pi.header is not None
    assert pi.header["version"] == 3
    assert [e.id for e in pi.entries] == [r["id"] for r in raw[1:]]
    assert [e.parent_id for e in pi.entries] == [r["parentId"] for r in raw[1:]]
    assert _role(pi.entries[1]) == "custom"


def test_migration_never_touches_the_file() -> None:
    before = hashlib.sha256(BEFORE.read_bytes()).hexdigest()
    _load(BEFORE)
    assert hashlib.sha256(BEFORE.read_bytes()).hexdigest() == before


def test_current_files_are_not_migrated() -> None:
    pi = _load(OWN / "tree-v3.jsonl")
    assert pi_tree.migrate(pi) is False


# --- tree --------------------------------------------------------------------------------


def test_active_path_skips_the_abandoned_branch() -> None:
    pi = _load(OWN / "tree-v3.jsonl")
    path = pi_tree.active_path(pi)
    assert path[0].id == "a1000001"
    assert path[-1].id == "c300000f"
    assert not any(e.id.startswith("b2") for e in path)
    assert len(path) == 22 - 3


def test_a_chosen_leaf_gives_its_own_path() -> None:
    pi = _load(OWN / "tree-v3.jsonl")
    path = pi_tree.active_path(pi, leaf="b2000002")
    assert [e.id for e in path] == [
        "a1000001",
        "a1000002",
        "a1000003",
        "a1000004",
        "b2000001",
        "b2000002",
    ]
    # an unknown leaf falls back to the last entry
    assert pi_tree.active_path(pi, leaf="nope")[-1].id == "c300000f"


def test_abandoned_branches_nest() -> None:
    pi = _load(OWN / "tree-v3.jsonl")
    branches = pi_tree.abandoned_branches(pi, pi_tree.active_path(pi))
    assert len(branches) == 1
    top = branches[0]
    assert top.from_id == "a1000004"
    assert [e.id for e in top.entries] == ["b2000001", "b2000003"]
    assert [(b.from_id, [e.id for e in b.entries]) for b in top.branches] == [
        ("b2000001", ["b2000002"])
    ]


def test_context_at_the_leaf_of_the_v3_tree() -> None:
    pi = _load(OWN / "tree-v3.jsonl")
    ctx = pi_tree.build_context(pi_tree.active_path(pi))
    assert [e.id for e in ctx.entries] == [
        "c300000d",  # the compaction's summary first
        "c3000002",  # kept from firstKeptEntryId…
        "c3000003",
        "c3000007",  # custom_message is in context; label/custom/settings are not
        "c300000c",
        "c300000e",  # …then everything after the compaction
        "c300000f",
    ]
    assert ctx.model == ("openai", "gpt-5.1-codex")
    assert ctx.thinking_level == "high"


def test_context_at_an_abandoned_leaf_has_no_compaction() -> None:
    pi = _load(OWN / "tree-v3.jsonl")
    ctx = pi_tree.build_context(pi_tree.active_path(pi, "b2000003"))
    assert ctx.compaction is None
    assert [e.id for e in ctx.entries] == [
        "a1000001", "a1000002", "a1000003", "a1000004", "b2000001", "b2000003",
    ]  # fmt: skip


def test_labels_are_replayed_and_cleared() -> None:
    pi = _load(OWN / "tree-v3.jsonl")
    assert pi_tree.resolve_labels(pi.entries) == {"b2000001": "approach-a"}


# --- pi's compaction.test.ts "buildSessionContext" (synthetic, inline) --------------------


def _context_ids(tmp_path: Path, *entries: dict[str, Any]) -> list[str]:
    pi = _load(_write(tmp_path, HEADER3, *entries))
    return [e.id for e in pi_tree.build_context(pi_tree.active_path(pi)).entries]


def test_context_without_compaction_is_every_message(tmp_path: Path) -> None:
    ids = _context_ids(
        tmp_path,
        _msg("u1", None, "user"),
        _msg("a1", "u1", "assistant"),
        _entry("branch_summary", "bs", "a1", fromId="x", summary=""),  # empty: skipped
        _msg("u2", "bs", "user"),
    )
    assert ids == ["u1", "a1", "u2"]


def test_context_with_one_compaction(tmp_path: Path) -> None:
    ids = _context_ids(
        tmp_path,
        _msg("u1", None, "user"),
        _msg("a1", "u1", "assistant"),
        _msg("u2", "a1", "user"),
        _msg("a2", "u2", "assistant"),
        _entry("compaction", "c1", "a2", summary="s1", firstKeptEntryId="u2", tokensBefore=10),
        _msg("u3", "c1", "user"),
        _msg("a3", "u3", "assistant"),
    )
    assert ids == ["c1", "u2", "a2", "u3", "a3"]


def test_with_two_compactions_only_the_latest_counts(tmp_path: Path) -> None:
    ids = _context_ids(
        tmp_path,
        _msg("u1", None, "user"),
        _msg("a1", "u1", "assistant"),
        _entry("compaction", "c1", "a1", summary="s1", firstKeptEntryId="u1", tokensBefore=10),
        _msg("u2", "c1", "user"),
        _msg("a2", "u2", "assistant"),
        _entry("compaction", "c2", "a2", summary="s2", firstKeptEntryId="u2", tokensBefore=20),
        _msg("u3", "c2", "user"),
    )
    assert ids == ["c2", "u2", "a2", "u3"]


def test_unknown_first_kept_id_keeps_nothing_before(tmp_path: Path) -> None:
    ids = _context_ids(
        tmp_path,
        _msg("u1", None, "user"),
        _entry("compaction", "c1", "u1", summary="s", firstKeptEntryId="gone", tokensBefore=1),
        _msg("u2", "c1", "user"),
    )
    assert ids == ["c1", "u2"]


# --- robustness -----------------------------------------------------------------------------


def test_bad_entries_are_reported(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {"type": "message", "id": "x1", "parentId": None},
        {"no": "type"},
        {"type": "session", "id": "again"},
        {"type": "message", "id": 5, "parentId": None},
        _msg("u1", None, "user"),
        _msg("u1", None, "assistant"),
    )
    sink = WarningSink()
    pi = pi_tree.load(path, sink)
    pi_tree.index_by_id(pi, sink)
    assert [(w.line, w.message) for w in sink.warnings] == [
        (1, "first line is not a pi session header"),
        (2, "entry has no string 'type'; skipped"),
        (3, "second session header; skipped"),
        (4, "message entry has no string 'id'; skipped"),
        (6, "duplicate entry id 'u1'; the later entry wins"),
    ]
    assert pi.header is None
    assert pi.version == 3  # no header, but ids: read as current, ids kept
    assert [e.id for e in pi.entries] == ["x1", "u1", "u1"]


def test_headerless_file_without_ids_is_read_as_v1(tmp_path: Path) -> None:
    path = _write(tmp_path, {"type": "message", "message": {"role": "user", "content": "hi"}})
    sink = WarningSink()
    pi = pi_tree.load(path, sink)
    assert (pi.version, [e.id for e in pi.entries]) == (1, ["00000000"])


def test_bad_header_version_is_read_as_v1(tmp_path: Path) -> None:
    path = _write(tmp_path, {"type": "session", "id": "s", "version": "3"}, _msg("u", None, "user"))
    sink = WarningSink()
    pi = pi_tree.load(path, sink)
    assert pi.version == 1
    assert [w.message for w in sink.warnings] == [
        "header version '3' is not an integer; read as v1"
    ]


def test_parent_cycles_and_unknown_parents_do_not_loop(tmp_path: Path) -> None:
    pi = _load(
        _write(
            tmp_path,
            HEADER3,
            _msg("r", None, "user"),
            _msg("x", "y", "user"),
            _msg("y", "x", "user"),
            _msg("o", "missing", "user"),
            _msg("z", "z", "user"),
        )
    )
    assert [e.id for e in pi_tree.active_path(pi)] == ["z"]
    path = pi_tree.active_path(pi, "x")
    assert [e.id for e in path] == ["y", "x"]
    # "o" has an unknown parent: it is a second root, so an abandoned branch of its own
    branches = pi_tree.abandoned_branches(pi, pi_tree.active_path(pi, "r"))
    assert [(b.from_id, [e.id for e in b.entries]) for b in branches] == [
        (None, ["o"]),
    ]


def test_empty_file_has_no_path(tmp_path: Path) -> None:
    pi = _load(_write(tmp_path, HEADER3))
    assert pi_tree.active_path(pi) == []
    assert pi_tree.build_context([]).entries == []
    assert pi_tree.abandoned_branches(pi, []) == []


@pytest.mark.parametrize("index", [0, 1, 255, 2**32 - 1])
def test_v1_entry_id_is_8_hex(index: int) -> None:
    value = pi_tree.v1_entry_id(index)
    assert len(value) == 8
    assert int(value, 16) == index


def test_a_shadowed_duplicate_is_not_a_branch(tmp_path: Path) -> None:
    pi = _load(
        _write(
            tmp_path,
            HEADER3,
            _msg("r", None, "user"),
            _msg("d", "r", "user", "first d"),
            _msg("d", "r", "user", "second d"),
            _msg("z", "d", "assistant"),
        )
    )
    path = pi_tree.active_path(pi)
    assert [e.id for e in path] == ["r", "d", "z"]
    assert path[1].data["message"]["content"] == "second d"
    assert pi_tree.abandoned_branches(pi, path) == []
