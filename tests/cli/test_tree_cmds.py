"""The tree commands as a user runs them: migrate, export-branch, report, tree, restore --leaf."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from click.testing import CliRunner

from opencode_restore.cli import cli

TREE_V3 = Path("pi") / "own" / "tree-v3.jsonl"
SMALL_V1 = Path("pi") / "own" / "small-v1.jsonl"


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_migrate_writes_a_copy_then_says_nothing_to_do(fixtures: Path, tmp_path: Path) -> None:
    src = tmp_path / "s.jsonl"
    shutil.copyfile(fixtures / SMALL_V1, src)
    code, out, err = invoke("migrate", str(src))
    assert code == 0
    dest = tmp_path / "s.v3.jsonl"
    assert out.strip() == f"{src}: v1 -> v3, 5 entries, written to {dest}"
    assert "invalid JSON" in err  # the bad line is reported
    code, out, _ = invoke("migrate", str(dest))
    assert code == 0
    assert out.strip() == f"{dest}: already version 3; nothing written"
    code, _, err = invoke("migrate", str(src))
    assert code == 2
    assert "exists; pass --force" in err


def test_migrate_in_place_keeps_a_backup(fixtures: Path, tmp_path: Path) -> None:
    src = tmp_path / "s.jsonl"
    shutil.copyfile(fixtures / SMALL_V1, src)
    code, out, _ = invoke("migrate", str(src), "--in-place", "-q")
    assert code == 0
    assert out.strip().endswith(f"written to {src} (backup {src}.bak)")
    assert (tmp_path / "s.jsonl.bak").read_bytes() == (fixtures / SMALL_V1).read_bytes()
    assert json.loads(src.read_text().splitlines()[0])["version"] == 3


def test_export_branch(fixtures: Path, tmp_path: Path) -> None:
    out_file = tmp_path / "a.jsonl"
    code, out, _ = invoke(
        "export-branch", str(fixtures / TREE_V3), "--leaf", "b2000003", "-o", str(out_file)
    )
    assert code == 0
    assert out.strip() == f"{out_file}: 7 entries on the path to b2000003"
    code, out, _ = invoke("messages", str(out_file), "--format", "json")
    ids = [m["id"] for m in json.loads(out)["messages"]]
    assert ids[-2:] == ["b2000001", "b2000003"]
    code, _, err = invoke(
        "export-branch", str(fixtures / TREE_V3), "--leaf", "zz", "-o", str(tmp_path / "b.jsonl")
    )
    assert code == 2
    assert "no entry with id 'zz'" in err


def test_tree_prints_branches_labels_and_the_leaf(fixtures: Path) -> None:
    code, out, _ = invoke("tree", str(fixtures / TREE_V3))
    assert code == 0
    lines = out.splitlines()
    assert lines[3] == "a1000004 message Which approach do you want? (2 branches)"
    assert lines[4] == "  b2000001 message try approach A [approach-a] (2 branches)"
    assert lines[5] == "    b2000002 message A, first attempt"
    assert lines[-1] == "  c300000f message Fixed; all tests pass. <- leaf"
    assert len(lines) == 22


def test_report_writes_a_self_contained_page(fixtures: Path, tmp_path: Path) -> None:
    page = tmp_path / "r.html"
    code, _, err = invoke("report", str(fixtures / TREE_V3), "-o", str(page))
    assert code == 0
    assert err.strip() == f"{page}: 22 entries, 2 branch points"
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert "SESSION SUMMARY" not in html  # the raw session, no summary
    code, out, _ = invoke("report", str(fixtures / TREE_V3), "--label", "approach-a")
    assert code == 0
    assert '"leaf":"b2000003"' in out


def test_restore_html_along_a_chosen_leaf(fixtures: Path, tmp_path: Path) -> None:
    page = tmp_path / "r.html"
    code, _, _ = invoke(
        "restore",
        str(fixtures / TREE_V3),
        "-q",
        "--format",
        "html",
        "--leaf",
        "b2000002",
        "-o",
        str(page),
    )
    assert code == 0
    html = page.read_text()
    assert '"leaf":"b2000002"' in html
    assert "## Abandoned branches" in html
    assert re.search(r'"refs":\{"M1":"a1000001"', html)


def test_restore_markdown_by_label_and_unknown_branches(fixtures: Path) -> None:
    code, out, _ = invoke("restore", str(fixtures / TREE_V3), "-q", "--label", "approach-a")
    assert code == 0
    assert "- Turn 2: try approach A [M7]" in out
    assert "None pending: the last request was answered [M8]." in out
    # The agent's question was answered by turn 2: the user's choice, not an open question.
    assert "## Open questions" not in out
    assert "The user chose “try approach A” [M7] when asked: Which approach do you want?" in out
    assert "## Abandoned branches" in out
    code, _, err = invoke("restore", str(fixtures / TREE_V3), "-q", "--label", "nope")
    assert code == 2
    assert "no entry is labelled 'nope'" in err
