"""MCP ``search_log`` shows no private key through its window either (issue 31).

The same look-behind searches at growing offsets that took a key's lines out of SEARCH_LOG
went through ``search_log`` too: a window cut from a log line before it was redacted had
no BEGIN line to recognise the block by.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio

from opencode_restore.config import load_config
from opencode_restore.mcp.tools import HistoryTools
from tests.batch.helpers import CLAUDE_3_TURNS
from tests.pipeline.evidence.test_search_window import _key_lines, _leaked, _pem

PROMPT = "Add a --shout flag"


def _with_key(lines: list[str]) -> str:
    """The recorded session, with a private key pasted into its first prompt."""
    out = []
    for raw in CLAUDE_3_TURNS.read_text().splitlines():
        record: dict[str, Any] = json.loads(raw)
        message = record.get("message")
        if record.get("type") == "user" and isinstance(message, dict):
            content = message.get("content")
            if isinstance(content, str) and content.startswith(PROMPT):
                message["content"] = f"{content}\nuse this key:\n{_pem(lines)}\nthanks"
        out.append(json.dumps(record))
    return "\n".join(out) + "\n"


def test_search_log_windows_never_show_key_lines() -> None:
    lines = _key_lines()
    projects = Path(os.environ["HOME"]) / ".claude" / "projects" / "-home-dev-p"
    projects.mkdir(parents=True)
    (projects / CLAUDE_3_TURNS.name).write_text(_with_key(lines))
    history = HistoryTools(load_config())
    patterns = ["-----END RSA PRIVATE KEY"] + [
        rf"(?<=PRIVATE KEY-----(?:\\n[A-Za-z0-9+/=]+){{{n}}})\\n" for n in range(1, 49, 4)
    ]

    async def main() -> str:
        seen = ""
        for pattern in patterns:
            found = await history.search_log(CLAUDE_3_TURNS.stem, pattern)
            assert found.labels, (pattern, found.result)
            seen += found.result
        return seen

    seen = anyio.run(main)
    assert _leaked(lines, seen) == []
    assert "[REDACTED:private-key]" in seen
