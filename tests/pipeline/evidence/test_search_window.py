"""The window a search shows never splits a private key from its BEGIN line (issue 31).

The 1,000 characters around a hit were cut from the line before it was redacted, so a
window that started inside a PEM block had no ``BEGIN`` line and its key lines went to the
model; searches at growing offsets got 33 of 49 lines. Now the line is redacted (block
first) and then cut, and a window that still starts inside a key body masks it.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from opencode_restore.model import Message
from opencode_restore.pipeline.evidence.log_search import mask_key_bodies

from ..helpers import make_session
from .test_tools import tools_for

_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _key_lines(count: int = 49) -> list[str]:
    """The body of a 4096-bit RSA key's shape: 49 lines of base64, the last one shorter."""
    rng = random.Random(31)
    lines = ["".join(rng.choice(_B64) for _ in range(64)) for _ in range(count - 1)]
    return [*lines, "".join(rng.choice(_B64) for _ in range(28)) + "=="]


def _pem(lines: list[str]) -> str:
    body = "\n".join(lines)
    return f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"


def _leaked(lines: list[str], text: str) -> list[str]:
    """Key lines of which 20 characters or more are in ``text``."""
    return [line for line in lines if any(line[i : i + 20] in text for i in range(len(line) - 19))]


#: Searches that put the window's start ever further into the key: each hit is a body
#: line, so the 1,000 characters before it start past the BEGIN line.
_PATTERNS: list[dict[str, Any]] = [
    {"pattern": "-----END RSA PRIVATE KEY", "literal": True},
    *({"pattern": rf"(?<=PRIVATE KEY-----(?:\\n[A-Za-z0-9+/=]+){{{n}}})\\n"} for n in range(1, 49)),
]


def test_a_window_inside_a_jsonl_key_shows_none_of_it(tmp_path: Path) -> None:
    lines = _key_lines()
    log = tmp_path / "s.jsonl"
    record = {"type": "user", "text": "deploy key:\n" + _pem(lines) + "\nthanks"}
    log.write_text(json.dumps({"type": "user", "text": "hi"}) + "\n" + json.dumps(record) + "\n")
    msgs = [Message("u1", "user", "text", "hi", entry_index=1)]
    tools, _, _ = tools_for(make_session(msgs, files=[str(log)]))
    seen = ""
    for args in _PATTERNS:
        result = tools.run("SEARCH_LOG", {**args, "context_lines": 0})
        assert result.ok, result.text
        assert "1 hit(s)" in result.text, (args, result.text)
        seen += result.text
    assert _leaked(lines, seen) == []
    assert "[REDACTED:private-key]" in seen


def test_a_key_in_a_message_is_redacted_before_its_lines_are_searched(tmp_path: Path) -> None:
    """A session without a line per message searches its messages a line at a time: a key
    over several lines is redacted whole first (its short last line has no shape of its
    own), and full body lines without their BEGIN line are masked."""
    lines = _key_lines()
    msgs = [
        Message("u1", "user", "text", "here:\n" + _pem(lines) + "\nbye", entry_index=1),
        Message(
            "u2", "user", "text", "a paste cut short:\n" + "\n".join(lines[:40]), entry_index=2
        ),
    ]
    session = make_session(msgs, files=[str(tmp_path / "gone.jsonl")])
    tools, _, _ = tools_for(session)
    seen = ""
    for args in (
        {"pattern": "here:", "context_lines": 10},
        {"pattern": "-----END RSA", "literal": True, "context_lines": 10},
        {"pattern": lines[30][:8], "literal": True, "context_lines": 10},
        {"pattern": "cut short", "context_lines": 10},
    ):
        result = tools.run("SEARCH_LOG", args)
        assert result.ok, result.text
        seen += result.text
    assert _leaked(lines, seen) == []
    assert "[REDACTED:private-key]" in seen
    assert "[REDACTED:key-body]" in seen


def test_the_hit_stays_in_view_after_a_key_before_it_is_redacted(tmp_path: Path) -> None:
    """Redacting a 3 KB key shortens the line: the match is found where it moved to."""
    text = _pem(_key_lines()) + " " + "filler " * 300 + "NEEDLE here " + "tail " * 300
    log = tmp_path / "s.jsonl"
    log.write_text(json.dumps({"type": "user", "text": text}) + "\n")
    msgs = [Message("u1", "user", "text", "hi", entry_index=1)]
    tools, _, _ = tools_for(make_session(msgs, files=[str(log)]))
    result = tools.run("SEARCH_LOG", {"pattern": "NEEDLE", "context_lines": 0})
    assert "NEEDLE here" in result.text


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("\n".join(_key_lines(3)), True),
        ("\\n".join(_key_lines(3)), True),  # JSON-escaped line breaks
        ("sha256 " + "0123456789abcdef" * 4, False),  # a hex digest is kept
        ("a" * 80, False),
        ("short Ab1", False),
    ],
)
def test_key_bodies_are_masked_by_their_shape(text: str, masked: bool) -> None:
    out = mask_key_bodies(text)
    assert ("[REDACTED:key-body]" in out) is masked
    if masked:
        assert _leaked(_key_lines(3), out) == []
    else:
        assert out == text
