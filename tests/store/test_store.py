"""The ``Store`` API: sessions with chains, pagination, restorations and runs."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from opencode_restore.store import Store, open_store
from opencode_restore.store.paths import data_dir as resolve_data_dir
from opencode_restore.store.paths import db_path


def test_open_store_uses_configured_data_dir(data_dir: Path) -> None:
    s = open_store()
    assert s.path == data_dir / "store.sqlite3"
    assert s.path.exists()
    s.close()
    s.close()  # closing twice is harmless


def test_data_dir_precedence(tmp_path: Path) -> None:
    env = {"OPENCODE_RESTORE_PATHS_DATA_DIR": str(tmp_path / "b")}
    assert resolve_data_dir(env) == tmp_path / "b"
    env["OPENCODE_RESTORE_DATA_DIR"] = str(tmp_path / "a")
    assert resolve_data_dir(env) == tmp_path / "a"
    assert db_path(tmp_path) == tmp_path / "store.sqlite3"


def test_data_dir_reads_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    cfg = home / ".config/opencode-restore"
    cfg.mkdir(parents=True)
    (cfg / "config.toml").write_text('[paths]\ndata_dir = "~/restore-data"\n')
    monkeypatch.setenv("HOME", str(home))
    assert resolve_data_dir({}) == home / "restore-data"
    (cfg / "config.toml").write_text("not toml [")
    assert resolve_data_dir({}) == home / ".local/share/opencode-restore"  # packaged default


def test_default_data_dir_matches_packaged_config() -> None:
    """The hook does not parse the packaged config.toml: it must leave the default alone."""
    import tomllib

    from opencode_restore.config import load_config
    from opencode_restore.resources import data_path

    packaged = tomllib.loads(data_path("config.toml").read_text())["paths"]
    assert "data_dir" not in packaged
    assert load_config(env={}).data_dir == resolve_data_dir({})


def test_data_dir_matches_load_config(data_dir: Path) -> None:
    from opencode_restore.config import load_config

    assert load_config().data_dir == data_dir
    assert resolve_data_dir() == data_dir


def _fill(store: Store) -> None:
    for k in range(5):
        store.register(
            f"s{k}",
            "codex" if k % 2 else "claude-code",
            f"/logs/{k}.jsonl",
            updated_at=f"2026-01-0{k + 1}T00:00:00.000000Z",
            created_at=f"2026-01-0{k + 1}T00:00:00.000000Z",
        )


def test_sessions_filter_and_paginate(store: Store) -> None:
    _fill(store)
    rows, total = store.sessions()
    assert total == 5
    assert [r.id for r in rows] == ["s4", "s3", "s2", "s1", "s0"]  # newest first
    assert all(r.file_count == 1 for r in rows)
    rows, total = store.sessions(agent="codex")
    assert (total, [r.id for r in rows]) == (2, ["s3", "s1"])
    rows, total = store.sessions(limit=2, offset=2)
    assert (total, [r.id for r in rows]) == (5, ["s2", "s1"])
    rows, total = store.sessions(since="2026-01-02T00:00:00.000000Z", until="2026-01-04T00:00:00Z")
    assert [r.id for r in rows] == ["s3", "s2"]


def test_session_with_chain(store: Store) -> None:
    store.register("S", "claude-code", "/a.jsonl", cwd="/w", title="T", event="SessionStart")
    store.register("S", "claude-code", "/b.jsonl", source="hook")
    s = store.session("S")
    assert s is not None
    assert [f.path for f in s.files] == ["/a.jsonl", "/b.jsonl"]
    assert [f.position for f in s.files] == [0, 1]
    assert [f.source for f in s.files] == ["scan", "hook"]
    assert (s.native_log_file, s.cwd, s.title, s.last_event) == (
        "/b.jsonl",
        "/w",
        "T",
        "SessionStart",
    )
    assert store.session("missing") is None


def test_restorations_latest_wins(store: Store) -> None:
    store.register("S", "pi", None)
    assert store.latest_restoration("S") is None
    store.add_restoration(
        "S",
        provider="offline:x",
        summary_markdown="# one",
        summary={"a": 1},
        usage=None,
        errors=None,
    )
    rid = store.add_restoration(
        "S",
        provider="offline:x",
        summary_markdown="# two",
        summary={"a": 2},
        usage={"calls": 3},
        errors={"failed_turns": []},
        redacted=True,
    )
    r = store.latest_restoration("S")
    assert r is not None
    assert (r.id, r.summary_markdown, r.summary, r.usage, r.errors, r.redacted) == (
        rid,
        "# two",
        {"a": 2},
        {"calls": 3},
        {"failed_turns": []},
        True,
    )
    store.add_restoration(
        "S", provider=None, summary_markdown=None, summary=None, usage=None, errors=None
    )
    third = store.latest_restoration("S")
    assert third is not None
    assert not third.redacted  # unless said, not redacted


def test_runs_move_through_states(store: Store) -> None:
    run_id = store.create_run("S", "restore")
    run = store.run(run_id)
    assert run is not None
    assert (run.status, run.started_at, run.finished_at) == ("queued", None, None)
    store.update_run(run_id, "running")
    store.update_run(run_id, "failed", error="boom")
    run = store.run(run_id)
    assert run is not None
    assert run.status == "failed"
    assert run.error == "boom"
    assert run.started_at is not None
    assert run.finished_at is not None
    assert store.run("nope") is None


def test_store_connection_per_thread(store: Store) -> None:
    seen = []

    def worker() -> None:
        seen.append(store.conn)
        store.register("T", "codex", "/x")
        store.close()

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen[0] is not store.conn
    assert store.session("T") is not None
