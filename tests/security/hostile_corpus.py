"""Small hostile inputs, generated on demand (nothing big is stored in the repository).

Each case is a function writing its file(s) under a directory and returning the CLI
arguments that read them. Shared by the tests (``test_hostile_inputs``) and the peak-RSS
measure (``bench/hostile.py``); ``scale`` grows the cases that have a size to the full
sizes of issues 14 and 31 for the measure. The tests run the sized cases small (the
bench's ratio of peak RSS to input size shows the streaming); the algorithmic ones
(terminal geometry, generated columns, deep nesting, sibling branches) at full size.
"""

from __future__ import annotations

import json
import sqlite3
import zipfile
from collections.abc import Callable
from pathlib import Path

T0 = 1_795_000_000_000
OPENCODE_SCHEMA = """
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text,
  slug text NOT NULL, directory text NOT NULL, title text NOT NULL, version text NOT NULL,
  model text, time_created integer NOT NULL, time_updated integer NOT NULL);
CREATE TABLE message (id text, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE part (id text, message_id text NOT NULL, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
"""


def _claude_line(uuid: str, parent: str | None, role: str, text: str, t: int) -> str:
    content = text if role == "user" else [{"type": "text", "text": text}]
    return json.dumps(
        {
            "type": role,
            "message": {"role": role, "content": content},
            "uuid": uuid,
            "parentUuid": parent,
            "sessionId": "s1",
            "timestamp": f"2025-01-01T00:00:{t:02d}Z",
            "cwd": "/nonexistent/project",
        }
    )


def inspect_deep(root: Path, scale: float = 1.0) -> list[str]:
    """An Inspect JSON log whose one sample nests 100,000 arrays deep (210 KB)."""
    depth = 100_000
    path = root / "deep.json"
    sample = '{"id": 1, "epoch": 1, "messages": [], "events": [], "metadata": '
    path.write_text(
        '{"version": 2, "status": "success", "eval": {"eval_id": "e1", "task": "t"}, '
        f'"samples": [{sample}{"[" * depth}{"]" * depth}}}]}}'
    )
    return ["messages", str(path), "--agent", "inspect"]


def eval_zip_bomb(root: Path, scale: float = 1.0) -> list[str]:
    """An ``.eval`` archive with a sample member unpacking to 300 MB (1 GB at scale 3.4)."""
    path = root / "bomb.eval"
    size = int(300_000_000 * scale)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr("header.json", json.dumps({"eval": {"eval_id": "e1", "task": "t"}}))
        with zf.open("samples/1_epoch_1.json", "w", force_zip64=True) as fh:
            fh.write(b'{"id": 1, "epoch": 1, "messages": [], "x": "')
            chunk = b" " * (1 << 20)
            for _ in range(size >> 20):
                fh.write(chunk)
            fh.write(b'"}')
    return ["messages", str(path), "--agent", "inspect"]


def eval_big_member(root: Path, scale: float = 1.0) -> list[str]:
    """An ``.eval`` archive whose one sample member unpacks to 120 MB of 280,000 messages
    (at scale 1), under the member cap and the zip-bomb ratio."""
    path = root / "big.eval"
    count = max(2, int(280_000 * scale))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr("header.json", json.dumps({"eval": {"eval_id": "e1", "task": "t"}}))
        with zf.open("samples/1_epoch_1.json", "w", force_zip64=True) as fh:
            fh.write(b'{"id": 1, "epoch": 1, "events": [], "messages": [')
            for n in range(count):
                role = "user" if n % 2 == 0 else "assistant"
                msg = {"role": role, "content": f"message {n} " + "z" * 400}
                fh.write((b"," if n else b"") + json.dumps(msg).encode())
            fh.write(b"]}")
    return ["messages", str(path), "--agent", "inspect"]


def eval_big_member_restore(root: Path, scale: float = 1.0) -> list[str]:
    """``restore`` of that archive: 140,000 tiny turns (at scale 1) ran past 130 s; a
    session over ``restore.max_session_turns`` is refused with one line after reading."""
    return ["restore", *eval_big_member(root, scale)[1:], "--fresh", "-q"]


def _opencode_db(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path)
    conn.executescript(OPENCODE_SCHEMA)
    return conn


def _session(conn: sqlite3.Connection, sid: str) -> None:
    conn.execute(
        "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version,"
        " model, time_created, time_updated) VALUES (?, 'p', NULL, 's', '/r', 't', '1', NULL,"
        " ?, ?)",
        (sid, T0, T0),
    )


def opencode_generated_column(root: Path, scale: float = 1.0) -> list[str]:
    """An opencode.db whose ``session`` rows each compute a 200 MB generated column."""
    path = root / "opencode.db"
    big = int(200_000_000 * scale)
    conn = _opencode_db(path)
    for n in range(20):
        _session(conn, f"ses_{n:03d}")
    # Added after the rows: an INSERT computes a generated column (seconds per row at this
    # size), ALTER TABLE does not; the schema ends up the same as a CREATE holding it.
    conn.execute(
        f"ALTER TABLE session ADD COLUMN big text GENERATED ALWAYS AS (printf('%.*c', {big}, 'x'))"
        " VIRTUAL"
    )
    user = json.dumps({"role": "user", "time": {"created": T0}})
    conn.execute("INSERT INTO message VALUES ('msg_1', 'ses_000', ?, ?, ?)", (T0, T0, user))
    part = json.dumps({"type": "text", "text": "hello"})
    conn.execute("INSERT INTO part VALUES ('prt_1', 'msg_1', 'ses_000', ?, ?, ?)", (T0, T0, part))
    conn.commit()
    conn.close()
    return ["messages", str(path), "--agent", "opencode", "--session", "ses_000"]


def opencode_generated_session_id(root: Path, scale: float = 1.0) -> list[str]:
    """A 70 KB opencode.db whose ``message.session_id`` is a generated column building a
    60 MB string per row (past 300 s at 1.8 GB before)."""
    path = root / "opencode.db"
    cheap = "'ses_1'"
    schema = OPENCODE_SCHEMA.replace(
        "CREATE TABLE message (id text, session_id text NOT NULL,",
        f"CREATE TABLE message (id text, session_id text GENERATED ALWAYS AS ({cheap}) VIRTUAL,",
    )
    conn = sqlite3.connect(path)
    conn.executescript(schema)
    _session(conn, "ses_1")
    user = json.dumps({"role": "user", "time": {"created": T0}})
    conn.executemany(
        "INSERT INTO message (id, time_created, time_updated, data) VALUES (?, ?, ?, ?)",
        [(f"msg_{n:04d}", T0 + n, T0, user) for n in range(1000)],
    )
    # The costly expression goes into the schema after the rows (an INSERT computes it);
    # a VIRTUAL column is stored in no row, so the rows stay valid.
    costly = "substr(replace(printf('%.*c', 20000000, 'x'), 'x', 'xxx'), 1, 0) || 'ses_1'"
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute(
        "UPDATE sqlite_master SET sql = replace(sql, ?, ?) WHERE name = 'message'",
        (f"({cheap})", f"({costly})"),
    )
    conn.commit()
    conn.close()
    return ["messages", str(path), "--agent", "opencode", "--session", "ses_1"]


def opencode_duplicate_ids(root: Path, scale: float = 1.0) -> list[str]:
    """An opencode.db with 3,000 messages sharing one id, and 3,000 parts of that id."""
    path = root / "opencode.db"
    conn = _opencode_db(path)
    _session(conn, "ses_1")
    copies = int(3000 * scale)
    user = json.dumps({"role": "user", "time": {"created": T0}})
    part = json.dumps({"type": "text", "text": "x" * 100})
    conn.executemany(
        "INSERT INTO message VALUES ('msg_1', 'ses_1', ?, ?, ?)",
        [(T0 + n, T0, user) for n in range(copies)],
    )
    conn.executemany(
        "INSERT INTO part VALUES (?, 'msg_1', 'ses_1', ?, ?, ?)",
        [(f"prt_{n:06d}", T0, T0, part) for n in range(copies)],
    )
    conn.commit()
    conn.close()
    return ["messages", str(path), "--agent", "opencode", "--session", "ses_1"]


def opencode_big_db(root: Path, scale: float = 1.0) -> list[str]:
    """A 600 MB opencode.db (at scale 1): one session of 1 MB tool outputs and one 40 MB
    part (segfaulted ``messages`` and ``turns`` at 3.5 GB RSS before)."""
    path = root / "opencode.db"
    conn = _opencode_db(path)
    _session(conn, "ses_1")
    count = max(2, int(560 * scale))
    user = json.dumps({"role": "user", "time": {"created": T0}})
    assistant = json.dumps({"role": "assistant", "time": {"created": T0}})
    conn.execute("INSERT INTO message VALUES ('msg_0', 'ses_1', ?, ?, ?)", (T0, T0, user))
    text = json.dumps({"type": "text", "text": "run the tests"})
    conn.execute("INSERT INTO part VALUES ('prt_0', 'msg_0', 'ses_1', ?, ?, ?)", (T0, T0, text))
    output = "test output line\n" * (1 << 16)
    for n in range(1, count + 1):
        conn.execute(
            "INSERT INTO message VALUES (?, 'ses_1', ?, ?, ?)",
            (f"msg_{n:05d}", T0 + n, T0, assistant),
        )
        state = {"status": "completed", "input": {"command": "pytest"}, "output": output}
        if n == 1:
            state["output"] = "x" * int(40_000_000 * scale)
        tool = json.dumps({"type": "tool", "tool": "bash", "callID": f"c{n}", "state": state})
        conn.execute(
            "INSERT INTO part VALUES (?, ?, 'ses_1', ?, ?, ?)",
            (f"prt_{n:05d}", f"msg_{n:05d}", T0 + n, T0, tool),
        )
    conn.commit()
    conn.close()
    return ["messages", str(path), "--agent", "opencode", "--session", "ses_1"]


def long_line(root: Path, scale: float = 1.0) -> list[str]:
    """A Claude Code log with one 200 MB line (900 MB at scale 4.5) between good ones."""
    path = root / "long.jsonl"
    size = int(200_000_000 * scale)
    with path.open("w") as fh:
        fh.write(_claude_line("u1", None, "user", "first request", 1) + "\n")
        head = _claude_line("a1", "u1", "assistant", "@@", 2)
        before, after = head.split("@@")
        fh.write(before)
        chunk = "y" * (1 << 20)
        for _ in range(size >> 20):
            fh.write(chunk)
        fh.write(after + "\n")
        fh.write(_claude_line("u2", "u1", "user", "after the long line", 3) + "\n")
    return ["messages", str(path), "--agent", "claude-code"]


def huge_user_message(root: Path, scale: float = 1.0) -> list[str]:
    """A Claude Code log whose request is 20 MB (50 MB at scale 2.5), restored offline."""
    path = root / "big-request.jsonl"
    text = "please fix the failing test " * int(20_000_000 * scale / 28)
    path.write_text(
        _claude_line("u1", None, "user", text, 1)
        + "\n"
        + _claude_line("a1", "u1", "assistant", "fixed", 2)
        + "\n"
    )
    return ["restore", str(path), "--agent", "claude-code", "--fresh", "-q"]


def claude_deep_json(root: Path, scale: float = 1.0) -> list[str]:
    """A Claude Code log whose tool input nests 900 objects deep (a traceback before)."""
    path = root / "deep.jsonl"
    line = _claude_line("a1", "u1", "assistant", "@@", 2)
    deep = '{"a": ' * 900 + "1" + "}" * 900
    tool = f'{{"type": "tool_use", "id": "t1", "name": "Bash", "input": {deep}}}'
    line = line.replace('{"type": "text", "text": "@@"}', tool)
    path.write_text(_claude_line("u1", None, "user", "go", 1) + "\n" + line + "\n")
    return ["restore", str(path), "--agent", "claude-code", "--fresh"]


def _claude_deep(root: Path, deep: str) -> Path:
    path = root / "deep.jsonl"
    line = _claude_line("a1", "u1", "assistant", "@@", 2)
    tool = f'{{"type": "tool_use", "id": "t1", "name": "Bash", "input": {{"a": {deep}}}}}'
    line = line.replace('{"type": "text", "text": "@@"}', tool)
    path.write_text(_claude_line("u1", None, "user", "go", 1) + "\n" + line + "\n")
    return path


def claude_deep_100k(root: Path, scale: float = 1.0) -> list[str]:
    """A 200 KB Claude Code line whose tool input nests 100,000 arrays deep (a
    ``RecursionError`` traceback in every command before); 49,000 at a scale under 1, so
    the line stays under the suite's lowered line cap."""
    depth = 100_000 if scale >= 1 else 49_000
    path = _claude_deep(root, "[" * depth + "]" * depth)
    return ["messages", str(path), "--agent", "claude-code"]


def claude_deep_1000(root: Path, scale: float = 1.0) -> list[str]:
    """A Claude Code line whose tool input nests 1,000 objects deep: past the typed
    decoder's recursion, short of orjson's limit (a traceback in every command before)."""
    path = _claude_deep(root, '{"a": ' * 1000 + "1" + "}" * 1000)
    return ["tree", str(path), "--agent", "claude-code"]


def claude_branches(root: Path, scale: float = 1.0) -> list[str]:
    """A 6.8 MB Claude Code log whose first request has 10,000 sibling branches, each an
    answer and a follow-up (``restore`` and ``tree`` took ~100 s before)."""
    path = root / "branches.jsonl"
    count = max(2, int(10_000 * scale))
    pad = "and so on " * 20
    lines = [_claude_line("u0", None, "user", "start the work", 1)]
    for n in range(count):
        lines.append(_claude_line(f"a{n}", "u0", "assistant", f"attempt {n} {pad}", 2))
        lines.append(_claude_line(f"u{n + 1}", f"a{n}", "user", f"retry {n} {pad}", 3))
    path.write_text("\n".join(lines) + "\n")
    return ["restore", str(path), "--agent", "claude-code", "--fresh", "-q"]


def claude_branches_tree(root: Path, scale: float = 1.0) -> list[str]:
    """The 10,000 sibling branches printed by ``tree`` (36-100 s before)."""
    return ["tree", *claude_branches(root, scale)[1:4]]


def gemini_big_json(root: Path, scale: float = 1.0) -> list[str]:
    """A 185 MB legacy Gemini CLI session (at scale 1): 120,000 messages and one of 40 MB
    (2.2-3.3 GB and 68-120 s before)."""
    path = root / "session-big.json"
    count = max(2, int(120_000 * scale))
    pad = "the build failed again, trying another flag " * 25
    with path.open("w") as fh:
        fh.write('{"sessionId": "g1", "startTime": "2025-01-01T00:00:00Z", "messages": [')
        for n in range(count):
            kind = "user" if n % 2 == 0 else "gemini"
            text = "x" * int(40_000_000 * scale) if n == 1 else f"{n} {pad}"
            rec = {"id": f"m{n}", "timestamp": "2025-01-01T00:00:01Z", "type": kind}
            fh.write(("," if n else "") + json.dumps({**rec, "content": text}))
        fh.write("]}")
    return ["messages", str(path), "--agent", "gemini"]


def bad_lines(root: Path, scale: float = 1.0) -> list[str]:
    """A Claude Code log of one good line and a million bad ones."""
    path = root / "bad.jsonl"
    count = int(1_000_000 * scale)
    path.write_text(_claude_line("u1", None, "user", "hi", 1) + "\n" + "{bad\n" * count)
    return ["messages", str(path), "--agent", "claude-code"]


def dev_zero(root: Path, scale: float = 1.0) -> list[str]:
    """``/dev/zero`` read as a Claude Code log."""
    return ["messages", "/dev/zero", "--agent", "claude-code"]


def terminal_cursor_bomb(root: Path, scale: float = 1.0) -> list[str]:
    """A 2.4 KB full-screen capture addressing row and column 30,000 (393 s of CPU before)."""
    path = root / "cursor.typescript"
    frame = b"\x1b[2J\x1b[30000;30000Hx\x1b[?2026l"
    body = b"\x1b[?1049h\xe2\x96\xa3  hi\n" + frame * 80
    path.write_bytes(body[:2400])
    return ["messages", str(path), "--agent", "terminal"]


def terminal_script_geometry(root: Path, scale: float = 1.0) -> list[str]:
    """A 1.8 KB ``script`` capture whose header announces 20,000 x 20,000 (112 s before)."""
    path = root / "geometry.typescript"
    header = b'Script started on 2025-01-01 [COMMAND="opencode" COLUMNS="20000" LINES="20000"]\n'
    body = header + b"\x1b[?1049h\xe2\x96\xa3  hi\n" + b"\x1b[2Jx\x1b[?2026l" * 120
    path.write_bytes(body[:1800])
    return ["messages", str(path), "--agent", "terminal"]


#: A real full-screen capture (opencode 1.18's TUI, recorded for the fixtures).
OPENCODE_TUI = Path(__file__).resolve().parents[2] / "fixtures/terminal/real/opencode-tui"


def terminal_full_screen(root: Path, scale: float = 1.0) -> list[str]:
    """A 60 MB full-screen capture (at scale 1): the real opencode TUI's frames drawn
    again and again. pyte replays about 1 MB/s, so it ran over a minute; its last
    ``MAX_REPLAY_BYTES`` are replayed, with a warning."""
    data = (OPENCODE_TUI / "tui.typescript").read_bytes()
    start = data.index(b"\x1b[?1049h") + 8
    end = data.rindex(b"\x1b[?1049l")
    body = data[start:end]
    path = root / "tui.typescript"
    with path.open("wb") as fh:
        fh.write(data[:start])
        for _ in range(max(1, int(60_000_000 * scale) // len(body))):
            fh.write(body)
        fh.write(data[end:])
    return ["messages", str(path), "--agent", "terminal"]


CASES: dict[str, Callable[[Path, float], list[str]]] = {
    "inspect-deep-100k": inspect_deep,
    "eval-zip-bomb": eval_zip_bomb,
    "eval-120mb-member": eval_big_member,
    "eval-120mb-member-restore": eval_big_member_restore,
    "opencode-generated-column": opencode_generated_column,
    "opencode-duplicate-ids": opencode_duplicate_ids,
    "opencode-generated-session-id": opencode_generated_session_id,
    "opencode-600mb": opencode_big_db,
    "long-line": long_line,
    "huge-user-message": huge_user_message,
    "claude-deep-json": claude_deep_json,
    "claude-deep-100k": claude_deep_100k,
    "claude-deep-1000": claude_deep_1000,
    "million-bad-lines": bad_lines,
    "gemini-185mb-json": gemini_big_json,
    "claude-10k-branches": claude_branches,
    "claude-10k-branches-tree": claude_branches_tree,
    "dev-zero": dev_zero,
    "terminal-cursor-30000": terminal_cursor_bomb,
    "terminal-script-20000": terminal_script_geometry,
    "terminal-full-screen-60mb": terminal_full_screen,
}
#: Scale that grows each sized case to the size issue 14 reported.
FULL_SCALE = {
    "terminal-full-screen-60mb": 1.0,
    "eval-120mb-member": 1.0,
    "eval-120mb-member-restore": 1.0,
    "opencode-600mb": 1.0,
    "gemini-185mb-json": 1.0,
    "claude-10k-branches": 1.0,
    "eval-zip-bomb": 3.4,
    "opencode-generated-column": 1.0,
    "opencode-duplicate-ids": 1.0,
    "long-line": 4.5,
    "huge-user-message": 2.5,
}
