"""Helpers shared by the store, hook and API tests: fixture paths and multi-file chains."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"

CLAUDE_COMPACT = (
    FIXTURES / "claude-code/recorded/tui-compact/e57fea98-e10e-4cce-a470-5de2e7413154.jsonl"
)
CLAUDE_CONTINUE = (
    FIXTURES / "claude-code/recorded/print-continue/d703ad6a-fc57-46ca-94d6-a6af7cf0c933.jsonl"
)
CLAUDE_SPOTTER = FIXTURES / "claude-code/spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
CLAUDE_REWIND = FIXTURES / "claude-code/claude-code-log/dag_compact_after_rewind.jsonl"
CODEX_RESUME = (
    FIXTURES / "codex/recorded/exec-resume/"
    "rollout-2026-11-21T11-41-29-01a1fde9-539c-77f2-9e0a-d405fab49546.jsonl"
)
CODEX_COMPACT = (
    FIXTURES / "codex/recorded/tui-compact/"
    "rollout-2026-11-21T11-38-37-01a1fde6-b303-7f63-b067-d32dfaddcad9.jsonl"
)
GEMINI_LEGACY = FIXTURES / "gemini/own/session-2026-02-04T07-00-gemresum.json"
GEMINI_CONTINUED = FIXTURES / "gemini/own/session-2026-02-04T07-00-gemresum.jsonl"
GEMINI_COMPRESSION = FIXTURES / "gemini/own/compression.jsonl"
OPENCODE_DB = FIXTURES / "opencode/recorded/tui-compact/opencode.db"
PI_TREE = FIXTURES / "pi/own/tree-v3.jsonl"
HOOKS = FIXTURES / "hooks/claude-code"


def split_file(src: Path, at_line: int, out_dir: Path, names: tuple[str, str]) -> list[Path]:
    """Split a JSONL file after line ``at_line`` into two files (a rotated transcript)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    first, second = out_dir / names[0], out_dir / names[1]
    with src.open("rb") as fh, first.open("wb") as a, second.open("wb") as b:
        for lineno, raw in enumerate(fh, 1):
            (a if lineno <= at_line else b).write(raw)
    return [first, second]


def line_of(src: Path, needle: str) -> int:
    """The 1-based number of the first line of ``src`` containing ``needle``."""
    with src.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if needle in line:
                return lineno
    raise AssertionError(f"{needle!r} not in {src}")


def copy_to(src: Path, directory: Path, name: str | None = None) -> Path:
    """Copy a fixture into ``directory`` (tests never write next to fixtures)."""
    directory.mkdir(parents=True, exist_ok=True)
    dest = directory / (name or src.name)
    shutil.copyfile(src, dest)
    return dest


def fake_home(home: Path) -> dict[str, list[Path]]:
    """Lay out one session per agent where each agent writes them by default."""
    made: dict[str, list[Path]] = {}
    claude = home / ".claude/projects/-home-dev-src-greet-cli"
    made["claude-code"] = [copy_to(CLAUDE_COMPACT, claude), copy_to(CLAUDE_CONTINUE, claude)]
    # Claude Code sub-agent files must not become sessions of their own.
    sub = claude / "e57fea98-e10e-4cce-a470-5de2e7413154" / "subagents"
    copy_to(FIXTURES / "claude-code/scout/agent-atest01.jsonl", sub)
    day = home / ".codex/sessions/2026/11/21"
    made["codex"] = [copy_to(CODEX_RESUME, day)]
    made["codex"].append(copy_to(CODEX_COMPACT, home / ".codex/archived_sessions"))
    chats = home / ".gemini/tmp/greet-cli/chats"
    made["gemini"] = [copy_to(GEMINI_LEGACY, chats), copy_to(GEMINI_CONTINUED, chats)]
    made["opencode"] = [copy_to(OPENCODE_DB, home / ".local/share/opencode")]
    pi_dir = home / ".pi/agent/sessions/--work-demo--"
    made["pi"] = [copy_to(PI_TREE, pi_dir, "2026-01-05T10-00-00-000Z_a1b2.jsonl")]
    return made
