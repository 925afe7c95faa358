"""The two file lists (changed, read) that the markdown and the prompt show."""

from __future__ import annotations

from opencode_restore.pipeline.restoration import FileRow, Restoration, SessionInfo
from opencode_restore.pipeline.schemas import SessionSummary
from opencode_restore.report.files import file_items, file_lists, shown_path


def _restoration(files: list[FileRow], cwd: str | None = "/w/proj") -> Restoration:
    return Restoration(
        session=SessionInfo(id="s", agent="claude-code", files=[], cwd=cwd),
        provider="offline:rules",
        summary=SessionSummary(goal="g"),
        files=files,
    )


def _row(path: str, actions: list[str], turns: list[int], cites: list[str]) -> FileRow:
    return FileRow(path=path, actions=actions, turns=turns, citations=cites)


def test_read_only_files_and_changed_files_are_two_lists() -> None:
    r = _restoration(
        [
            _row("/w/proj/src/a.py", ["read", "edited"], [1], ["M2", "M5"]),
            _row("/w/proj/README.md", ["read"], [1], ["M3"]),
            _row("/w/proj/new.py", ["created", "edited"], [2], ["M8", "M9"]),
            _row("/w/proj/old.py", ["deleted"], [2], ["M10"]),
        ]
    )
    changed, read = file_items(file_lists(r))
    # Latest first; a changed file's actions without the read; the latest citation.
    assert changed == [
        "`new.py` (created, edited) [M9]",
        "`old.py` (deleted) [M10]",
        "`src/a.py` (edited) [M5]",
    ]
    assert read == ["`README.md` [M3]"]


def test_a_session_that_only_read_has_a_read_list() -> None:
    lists = file_lists(_restoration([_row("/w/proj/a.py", ["read"], [1], ["M2"])]))
    assert lists.changed == []
    assert [f.path for f in lists.read] == ["a.py"]


def test_each_path_once_changed_if_any_spelling_changed_it() -> None:
    r = _restoration(
        [
            _row("src/a.py", ["read"], [1], ["M2"]),
            _row("/w/proj/src/a.py", ["edited"], [3], ["M7"]),
            _row("/elsewhere/b.py", ["read"], [2], ["M4"]),
        ]
    )
    lists = file_lists(r)
    assert [(f.path, f.changes, f.citation) for f in lists.changed] == [
        ("src/a.py", ["edited"], "M7")
    ]
    assert [f.path for f in lists.read] == ["/elsewhere/b.py"]  # not under cwd: as is


def test_long_lists_stop_with_a_count() -> None:
    rows = [_row(f"/w/proj/f{i}.py", ["read"], [i], [f"M{i}"]) for i in range(1, 16)]
    lists = file_lists(_restoration(rows), limit=4)
    assert [f.path for f in lists.read] == ["f15.py", "f14.py", "f13.py", "f12.py"]
    assert lists.read_more == 11
    _, read = file_items(lists)
    assert read[-1] == "(and 11 more)"
    assert len(read) == 5


def test_shown_path_is_relative_to_the_cwd_with_either_separator() -> None:
    assert shown_path("D:\\oh-my-posh\\src\\a.go", "D:\\oh-my-posh") == "src\\a.go"
    assert shown_path("/w/proj/a.py", "/w/proj/") == "a.py"
    assert shown_path("/w/project2/a.py", "/w/proj") == "/w/project2/a.py"
    assert shown_path("/w/proj", "/w/proj") == "/w/proj"
    assert shown_path("a.py", None) == "a.py"


def test_a_path_with_backticks_stays_one_code_span() -> None:
    changed, _ = file_items(file_lists(_restoration([_row("a`b.py", ["edited"], [1], [])])))
    assert changed == ["``a`b.py`` (edited)"]
