"""The two short file lists of the summaries: the files the session changed, and the files
it only read (as pi's compaction keeps them: ``modified-files`` and ``read-files``).

What the agent looked at and what it changed is what the next agent needs first, so the
markdown and the prompt format both show them, whatever else the session did. Built from
the restoration's files table (the parser's file actions, never a model's claim):

* changed: every file with an ``edited``, ``created`` or ``deleted`` action;
* read: every file that was read and never changed.

Each path is listed once: a path under the session's working directory is shown relative
to it, and two spellings of one file (absolute and relative) are one entry, changed if
either was. The most recently touched files come first (the last turn that touched them,
then the log's order); each list stops at ``FILE_LIST`` entries with an "(and N more)"
line. Each entry cites the latest message that touched the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..pipeline.restoration import FileRow, Restoration
from .markdown_text import Markdown, code

#: Entries shown per list; the JSON's ``files`` keeps every file.
FILE_LIST = 12
#: The actions that change a file, in the order they are named.
CHANGES = ("created", "edited", "deleted")


@dataclass(slots=True)
class FileLine:
    """One entry of a list: the path as shown, what was done to it, its latest citation."""

    path: str
    changes: list[str] = field(default_factory=list)
    last_turn: int = 0
    citation: str | None = None
    order: int = 0


@dataclass(slots=True)
class FileLists:
    """The two lists, each capped; ``*_more`` counts the entries left out."""

    changed: list[FileLine]
    read: list[FileLine]
    changed_more: int = 0
    read_more: int = 0


def shown_path(path: str, cwd: str | None) -> str:
    """``path`` relative to ``cwd`` when it is under it (either separator), else as is."""
    if cwd:
        base = cwd.rstrip("/\\")
        for sep in ("/", "\\"):
            if base and path.startswith(base + sep) and len(path) > len(base) + 1:
                return path[len(base) + 1 :]
    return path


def _merge(rows: list[FileRow], cwd: str | None) -> list[FileLine]:
    lines: dict[str, FileLine] = {}
    for order, row in enumerate(rows):
        path = shown_path(row.path, cwd)
        line = lines.setdefault(path, FileLine(path, order=order))
        for action in row.actions:
            if action in CHANGES and action not in line.changes:
                line.changes.append(action)
        last = max(row.turns, default=0)
        if last >= line.last_turn and row.citations:
            line.citation = row.citations[-1]
        line.last_turn = max(line.last_turn, last)
    for line in lines.values():
        line.changes.sort(key=CHANGES.index)
    return list(lines.values())


def file_lists(r: Restoration, limit: int = FILE_LIST) -> FileLists:
    """The changed and the read-only files of ``r``, latest first, at most ``limit`` each."""
    lines = _merge(r.files, r.session.cwd)
    lines.sort(key=lambda f: (-f.last_turn, f.order))
    changed = [f for f in lines if f.changes]
    read = [f for f in lines if not f.changes]
    return FileLists(
        changed[:limit],
        read[:limit],
        max(0, len(changed) - limit),
        max(0, len(read) - limit),
    )


def _entry(line: FileLine) -> Markdown:
    changes = f" ({', '.join(line.changes)})" if line.changes else ""
    cite = f" [{line.citation}]" if line.citation else ""
    return Markdown(f"{code(line.path)}{changes}{cite}")


def _more(n: int) -> list[Markdown]:
    return [Markdown(f"(and {n} more)")] if n else []


def file_items(lists: FileLists) -> tuple[list[Markdown], list[Markdown]]:
    """The list items (changed, read) as markdown: the path in a code span, what changed,
    the citation; an "(and N more)" item closes a capped list."""
    return (
        [*map(_entry, lists.changed), *_more(lists.changed_more)],
        [*map(_entry, lists.read), *_more(lists.read_more)],
    )
