"""``index`` and ``search`` as a user runs them, and the commands that keep the index current."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from click.testing import CliRunner

from opencode_restore.cli import cli
from opencode_restore.search.index import index_path
from opencode_restore.store.store import Store
from tests.search.helpers import CLAUDE_ID, CODEX_ID, claude_session, codex_session
from tests.store.builders import CLAUDE_COMPACT, HOOKS, copy_to, fake_home


def invoke(*args: str, color: bool = False) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), color=color)
    return result.exit_code, result.stdout, result.stderr


def test_search_on_no_index_builds_it_and_prints_a_line_per_hit(
    store: Store, data_dir: Path, tmp_path: Path
) -> None:
    claude_session(store, tmp_path / "logs")
    codex_session(store, tmp_path / "logs")
    code, out, err = invoke("search", "git", "--limit", "3")
    assert code == 0
    assert "building the search index" in err
    lines = out.splitlines()
    assert len(lines) == 3
    # session id prefix, agent, project, time, label, snippet
    assert lines[0].split()[0] in (CLAUDE_ID[:8], CODEX_ID[:8])
    assert "greet-cli" in out
    assert " 2026-11-21 " in lines[0]
    assert "[M" in lines[0]
    assert "\x1b" not in out  # plain off a terminal
    code, out, err = invoke("search", "git", "--limit", "3")
    assert "building" not in err


def test_matches_are_bold_with_color_and_escapes_of_a_log_never_print(
    store: Store, data_dir: Path, tmp_path: Path
) -> None:
    log = claude_session(store, tmp_path / "logs")
    text = log.read_text(encoding="utf-8").replace("Show diff stat", "Show \\u001b[2J diff stat")
    log.write_text(text, encoding="utf-8")
    code, out, _ = invoke("--color", "search", '"diff stat"', color=True)
    assert code == 0
    assert "\x1b[1mdiff stat\x1b[0m" in out
    assert "\x1b[2J" not in out


def test_json_format(store: Store, data_dir: Path, tmp_path: Path) -> None:
    codex_session(store, tmp_path / "logs")
    code, out, _ = invoke("search", "readme", "--agent", "codex", "--format", "json")
    assert code == 0
    hits = json.loads(out)["hits"]
    assert hits
    assert {h["session_id"] for h in hits} == {CODEX_ID}
    first = hits[0]
    assert set(first) >= {"session_id", "agent", "cwd", "time", "label", "kind", "snippet"}
    start, end = first["highlights"][0]
    assert first["snippet"][start:end].lower() == "readme"


def test_filters_as_options(store: Store, data_dir: Path, tmp_path: Path) -> None:
    claude_session(store, tmp_path / "logs")
    codex_session(store, tmp_path / "logs")
    code, out, _ = invoke("search", "git", "--kind", "command", "--cwd", "other-project")
    assert code == 0
    assert out
    assert {line.split()[0] for line in out.splitlines()} == {CODEX_ID[:8]}
    code, out, _ = invoke("search", "git", "--since", "2030-01-01")
    assert (code, out) == (0, "")


def test_no_hits_says_how_to_register_sessions_when_the_store_knows_none(
    store: Store, data_dir: Path, tmp_path: Path
) -> None:
    code, out, err = invoke("search", "shout")
    assert (code, out) == (0, "")
    assert err.splitlines()[-1].startswith("no hits: no session is registered yet; run ")
    claude_session(store, tmp_path / "logs")
    code, out, err = invoke("search", "zzzunmatchedzzz")
    assert err.splitlines()[-1] == "no hits"


def test_a_bad_query_is_one_line_and_exit_2(data_dir: Path) -> None:
    for query in ['"open', "kind:nope x", "... !!"]:
        code, out, err = invoke("search", query)
        assert code == 2
        assert out == ""
        assert len(err.strip().splitlines()) == 1
    assert not index_path(data_dir).exists()  # said before any indexing


def test_index_and_rebuild(store: Store, data_dir: Path, tmp_path: Path) -> None:
    claude_session(store, tmp_path / "logs")
    code, out, _ = invoke("index")
    assert code == 0
    assert "1 session indexed" in out
    code, out, _ = invoke("index")
    assert "0 sessions indexed" in out
    code, out, _ = invoke("index", "--rebuild")
    assert code == 0
    assert out.startswith("rebuilt ")
    assert "1 session indexed" in out


def _rows(data_dir: Path) -> int:
    with sqlite3.connect(index_path(data_dir)) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0])


def test_sessions_scan_indexes_what_it_found(data_dir: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    fake_home(home)
    code, _, _ = invoke("sessions", "scan", "--root", str(home))
    assert code == 0
    assert _rows(data_dir) > 0


def test_a_session_a_hook_recorded_is_found_by_the_next_search(data_dir: Path) -> None:
    payload = json.loads((HOOKS / "tui-compact/hooks_stdin.jsonl").read_text().splitlines()[0])
    # Where Claude Code writes it: the hook takes no transcript from elsewhere.
    log = copy_to(CLAUDE_COMPACT, Path.home() / ".claude/projects/-home-dev-src-greet-cli")
    payload["transcript_path"] = str(log)
    invoke("index")  # an index that exists, then the hook
    assert CliRunner().invoke(cli, ["hook"], input=json.dumps(payload)).exit_code == 0
    code, out, _ = invoke("search", '"Show diff stat"')
    assert code == 0
    assert out.startswith(CLAUDE_ID[:8])
