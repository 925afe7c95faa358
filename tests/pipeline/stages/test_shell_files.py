"""Files read, written and deleted through the shell (turn_parser via shell_files)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Message
from opencode_restore.pipeline.stages.shell_files import (
    _lex,
    _tokens,
    shell_file_ops,
    strip_heredocs,
)
from opencode_restore.pipeline.stages.turn_parser import parse_turns
from opencode_restore.sources import open_session

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"


@pytest.mark.parametrize(
    ("command", "ops"),
    [
        ("cat > new.py <<EOF\nprint(1)\nrm -rf /\nEOF", [("new.py", "write")]),
        ("cat <<'EOF' > t.txt\nhello $X\n  EOF\nEOF\nrm z", [("t.txt", "write"), ("z", "deleted")]),
        ("cat <<-END >> log.txt\n\tbody\n\tEND", [("log.txt", "write")]),
        ("echo hi > out.log", [("out.log", "write")]),
        ("printf '%s' x >> out.log 2>&1", [("out.log", "write")]),
        ("make 2> err.txt >/dev/null", [("err.txt", "write")]),
        ("ls &> all.txt", [("all.txt", "write")]),
        ("python3 x.py < input.txt", [("input.txt", "read")]),
        ("echo x | tee a.txt -a b.txt", [("a.txt", "write"), ("b.txt", "write")]),
        ("cp src.py dst.py", [("src.py", "read"), ("dst.py", "write")]),
        ("cp -r a b dir", [("a", "read"), ("b", "read"), ("dir/a", "write"), ("dir/b", "write")]),
        ("cp a.py backup/", [("a.py", "read"), ("backup/a.py", "write")]),
        ("cp x.py .", [("x.py", "read"), ("./x.py", "write")]),
        ("cp only.py", []),
        ("mv a.py b.py", [("a.py", "deleted"), ("b.py", "write")]),
        ("mv -t d x y", [("x", "deleted"), ("y", "deleted"), ("d/x", "write"), ("d/y", "write")]),
        ("git mv old.py new.py", [("old.py", "deleted"), ("new.py", "write")]),
        ("git mv -n a b", []),
        ("git rm -q legacy.py", [("legacy.py", "deleted")]),
        ("git rm --cached secret.env", []),
        ("rm -f old.txt build/*.o", [("old.txt", "deleted"), ("build/*.o", "deleted")]),
        ("unlink f.txt", [("f.txt", "deleted")]),
        ("sed -i 's/a/b/' conf.ini", [("conf.ini", "edited")]),
        ("sed -i.bak -e s/a/b/ x.cfg y.cfg", [("x.cfg", "edited"), ("y.cfg", "edited")]),
        ("sed -i '' 's|a|b|g' m.ts", [("m.ts", "edited")]),
        ("sed --in-place=.orig s/a/b/ z.txt", [("z.txt", "edited")]),
        ("sed -n '1,80p' greet.py", [("greet.py", "read")]),
        ("sed -ne s/x/y/p f.txt", [("f.txt", "read")]),
        ("sed --expression=s/a/b/ -- g.txt", [("g.txt", "read")]),
        ("touch empty.txt", [("empty.txt", "touch")]),
        ("touch -r ref.txt stamp.txt", [("stamp.txt", "touch")]),
        ("cat f.txt | head -n 5", [("f.txt", "read")]),
        ("head -n 50 a.py && tail -c 10 b.py", [("a.py", "read"), ("b.py", "read")]),
        ("cat Makefile # just a look", [("Makefile", "read")]),
        (
            "less -p pat notes.md; bat -l py s.py; nl -b a n.txt",
            [("notes.md", "read"), ("s.py", "read"), ("n.txt", "read")],
        ),
        ("cd sub && cat x.py 2>/dev/null", [("sub/x.py", "read")]),
        ("cd /abs/dir; rm y", [("/abs/dir/y", "deleted")]),
        ("FOO=1 sudo -E rm -rf build", [("build", "deleted")]),
        ("timeout -s 9 10 sed -i s/a/b/ f", [("f", "edited")]),
        ("env -i PATH=/bin touch t", [("t", "touch")]),
        ("rm \"$TMPDIR/x\" `pwd`/y - ''", []),
        ("ls | grep x", []),
        ("python3 -c 'open(\"f.txt\",\"w\")'", []),
        ("git status --short && git diff --stat", []),
        ("echo 'unterminated", []),
        ("echo a > two.txt\ncat 'open", [("two.txt", "write")]),
        ("cat one.txt\necho 'dangling", [("one.txt", "read")]),
        ("exec > log 2>&1", [("log", "write")]),
        ("(cd d && touch a) ; touch b", [("d/a", "touch"), ("d/b", "touch")]),
        ("rm -- -odd.txt", [("-odd.txt", "deleted")]),
        ("cp --target-directory=out a.py", [("a.py", "read"), ("out/a.py", "write")]),
        ("sed --debug -n p q.txt", [("q.txt", "read")]),
        ("cat > ''", []),
    ],
)  # fmt: skip
def test_shell_file_ops(command: str, ops: list[tuple[str, str]]) -> None:
    assert shell_file_ops(command) == ops


def test_heredoc_bodies_are_dropped_but_not_the_lines_after_them() -> None:
    text = "cat > a <<'X'\nrm everything\nX\ncat <<\"Y\" <<Z\n1\nY\n2\nZ\necho done"
    assert strip_heredocs(text) == "cat > a <<'X'\ncat <<\"Y\" <<Z\necho done"
    # A here-string is not a heredoc; an unterminated heredoc runs to the end.
    assert strip_heredocs("cat <<< word\nrm x") == "cat <<< word\nrm x"
    assert strip_heredocs("cat <<EOF\nrm x") == "cat <<EOF"


_n = 0


def bash(command: str, *, exit_code: int | None = 0, **inp: Any) -> list[Message]:
    global _n
    _n += 1
    call = f"c{_n}"
    use = Message(
        f"u{_n}",
        "assistant",
        "tool_use",
        "",
        tool_name="Bash",
        tool_call_id=call,
        tool_input={"command": command, **inp},
        entry_index=_n,
    )
    meta = {} if exit_code is None else {"exit_code": exit_code}
    res = Message(
        f"r{_n}",
        "tool",
        "tool_result",
        "",
        tool_call_id=call,
        is_error=bool(exit_code),
        meta=meta,
        entry_index=_n,
    )
    return [use, res]


def test_writes_create_new_files_and_edit_known_ones() -> None:
    msgs = [
        Message("q", "user", "text", "go"),
        *bash("cat known.py"),
        *bash("echo x > known.py && echo y > fresh.py"),
        *bash("touch known.py fresh.py brand.py"),  # touching a known file changes nothing
        *bash("rm fresh.py && echo z > fresh.py"),  # replaced: an edit, not delete + create
        *bash("cat > w/a.py <<EOF\nx\nEOF", workdir="/repo/pkg"),
        *bash("sed -i s/a/b/ known.py; sed -i s/c/d/ known.py"),  # one call, one citation
    ]
    (turn,) = parse_turns(msgs, cwd="/repo")
    assert [(a.file_path, a.action) for a in turn.artifacts] == [
        ("known.py", "read"),
        ("known.py", "edited"),
        ("fresh.py", "created"),
        ("brand.py", "created"),
        ("fresh.py", "edited"),
        ("pkg/w/a.py", "created"),
        ("known.py", "edited"),
    ]


def test_qa_shell_log() -> None:
    session = open_session([FIXTURES / "pipeline" / "qa" / "cmds.jsonl"], WarningSink())
    (turn,) = parse_turns(session)
    assert [(a.file_path, a.action) for a in turn.artifacts] == [
        ("old.txt", "deleted"),
        ("build/*.o", "deleted"),
        ("legacy.py", "deleted"),
        ("a.py", "deleted"),
        ("b.py", "created"),
        ("new.py", "created"),
        ("out.log", "created"),
        ("conf.ini", "edited"),
        ("empty.txt", "created"),
        ("src.py", "read"),
        ("dst.py", "created"),
        ("m.py", "edited"),
        ("n.ipynb", "edited"),
    ]
    # The Read of a file that does not exist is a failed attempt, not a read.
    assert [(a.file_path, a.action) for a in turn.failed_artifacts] == [("/etc/x", "read")]
    assert len(turn.commands) == 10


_PIECES = [
    *"ab./ -'\"\\$`#<>|&;()\n\t=*~\r",
    *("EOF", "cat", "sed", "-i", "cp", "mv", "rm", "tee", "cd", "git", "touch"),
    *("<<", "<<-", "2>&1", "<<<", "&&", "||"),
]
_SHELLISH = st.lists(st.sampled_from(_PIECES), max_size=40).map("".join)


@settings(max_examples=400, deadline=None)
@given(_SHELLISH)
def test_shell_file_ops_never_raises(command: str) -> None:
    ops = shell_file_ops(command)
    assert all(path and op in ("read", "edited", "write", "touch", "deleted") for path, op in ops)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.one_of(_SHELLISH, st.text(max_size=40)), st.sampled_from([0, 1, None])),
        max_size=6,
    )
)
def test_parse_turns_never_raises_on_odd_commands(calls: list[tuple[str, int | None]]) -> None:
    msgs = [Message("q", "user", "text", "go")]
    for command, code in calls:
        msgs += bash(command, exit_code=code)
    (turn,) = parse_turns(msgs, cwd="/w")
    assert len(turn.commands) == sum(1 for c, _ in calls if c)
    assert all(a.file_path not in ("", ".") for a in turn.artifacts + turn.failed_artifacts)


@given(st.text(alphabet="ab /-.$~#*=\t\r\n();<>|&12\u00a0é", max_size=40))
def test_unquoted_commands_split_as_shlex_splits_them(text: str) -> None:
    # The regex fast path for commands without quotes or backslashes.
    assert _tokens(text) == _lex(text)
