"""``restore`` saves its restoration in the store (issue 29): the session is registered
as ``sessions scan`` would, the restoration becomes its latest, the search index (when
there is one) is brought up to date; a store it cannot use costs a warning, not the
restore."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from opencode_restore.cli import cli
from opencode_restore.search.index import index_path
from opencode_restore.search.query import search
from opencode_restore.store import open_store

#: A Claude Code session whose offline restoration records a key decision, cited [M94].
SPOTTER = "claude-code/spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
SPOTTER_ID = "258c7280-ae70-4798-800f-63464d01a85d"
SPOTTER_CWD = "/home/USER/projects/spotter-worktrees/spotter-gqc"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def _log(fixtures: Path, tmp_path: Path) -> Path:
    log = tmp_path / "logs" / Path(SPOTTER).name
    log.parent.mkdir()
    shutil.copyfile(fixtures / SPOTTER, log)
    return log


def test_a_restore_registers_the_session_and_search_finds_its_decision(
    fixtures: Path, tmp_path: Path, data_dir: Path
) -> None:
    log = _log(fixtures, tmp_path)
    code, out, err = _run("restore", str(log), "-o", str(tmp_path / "out.md"))
    assert code == 0, err
    assert "warning" not in err
    store = open_store(data_dir)
    row = store.session(SPOTTER_ID)
    assert row is not None
    assert (row.agent, row.cwd) == ("claude-code", SPOTTER_CWD)
    assert [(f.path, f.source) for f in row.files] == [(str(log.resolve()), "restore")]
    assert row.updated_at.startswith("2026-02-11T21:4")  # the log's last message, not now
    saved = store.latest_restoration(SPOTTER_ID)
    assert saved is not None
    assert saved.redacted  # [restore] redact is on by default
    assert saved.summary["summary"]["key_decisions"]
    assert saved.summary_markdown == (tmp_path / "out.md").read_text()
    store.close()

    code, out, err = _run("search", "alias kind:decision", "--format", "json")
    assert code == 0, err
    hits = json.loads(out)["hits"]
    assert [(h["session_id"], h["kind"], h["label"]) for h in hits] == [
        (SPOTTER_ID, "decision", "M94")
    ]


def test_an_existing_index_is_updated_by_the_restore_itself(
    fixtures: Path, tmp_path: Path, data_dir: Path
) -> None:
    log = _log(fixtures, tmp_path)
    assert _run("index")[0] == 0
    assert _run("restore", str(log), "-q", "-o", str(tmp_path / "out.md"))[0] == 0
    # Read without the catch-up a search command does first: the restore indexed it.
    hits = search(index_path(data_dir), "alias", kinds=frozenset({"decision", "message"}))
    assert {h.kind for h in hits} == {"decision", "message"}


def test_a_file_the_store_knows_keeps_its_session(
    fixtures: Path, tmp_path: Path, data_dir: Path
) -> None:
    log = _log(fixtures, tmp_path)
    store = open_store(data_dir)
    # As a slug chain is stored: under the id of its oldest file, not this file's own.
    store.register(
        "chain-of-two", "claude-code", str(log.resolve()), cwd="/as/the/hook/said", source="hook"
    )
    assert _run("restore", str(log), "-q", "-o", str(tmp_path / "out.md"))[0] == 0
    assert store.latest_restoration("chain-of-two") is not None
    assert store.session(SPOTTER_ID) is None
    row = store.session("chain-of-two")
    assert row is not None
    assert row.cwd == "/as/the/hook/said"  # what the store knew stays
    store.close()


def test_an_unusable_store_costs_a_warning_not_the_restore(
    fixtures: Path, tmp_path: Path, data_dir: Path
) -> None:
    log = _log(fixtures, tmp_path)
    (data_dir / "store.sqlite3").mkdir(parents=True)  # a folder where the file should be
    code, _, err = _run("restore", str(log), "-o", str(tmp_path / "out.md"))
    assert code == 0
    assert (tmp_path / "out.md").read_text().startswith("# SESSION SUMMARY")
    warnings = [line for line in err.splitlines() if line.startswith("warning: the restoration")]
    assert warnings == [
        f"warning: the restoration was not saved in the session store: {data_dir}/store.sqlite3:"
        " cannot use the session store: a directory where the store's file should be (set"
        " OPENCODE_RESTORE_DATA_DIR or [paths] data_dir to a writable directory)"
    ]
    quiet = _run("restore", str(log), "-q", "-o", str(tmp_path / "out.md"))
    assert (quiet[0], quiet[2]) == (0, "")


def test_the_demo_is_no_session_of_the_users(data_dir: Path, tmp_path: Path) -> None:
    assert _run("restore", "--demo", "-q", "-o", str(tmp_path / "demo.md"))[0] == 0
    store = open_store(data_dir)
    assert store.sessions()[1] == 0
    store.close()


def test_a_copy_of_a_stored_sessions_log_is_not_saved_as_that_session(
    fixtures: Path, tmp_path: Path, data_dir: Path
) -> None:
    log = _log(fixtures, tmp_path)
    assert _run("restore", str(log), "-q", "-o", str(tmp_path / "out.md"))[0] == 0
    backup = tmp_path / "backup" / log.name
    backup.parent.mkdir()
    shutil.copyfile(log, backup)
    assert _run("restore", str(backup), "-q", "-o", str(tmp_path / "out.md"))[0] == 0
    store = open_store(data_dir)
    row = store.session(SPOTTER_ID)
    assert row is not None
    assert [f.path for f in row.files] == [str(log.resolve())]  # the copy joined no chain
    count = store.conn.execute("SELECT COUNT(*) FROM restorations").fetchone()[0]
    assert count == 1
    store.close()
