"""A message's rows: made from the raw message, redacting only the strings they take,
they are the rows of the message redacted whole (``redact_message``, as the API serves it)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from opencode_restore.diagnostics import WarningSink
from opencode_restore.errors import SourceError
from opencode_restore.model import Compaction, Message, MessageType, Role
from opencode_restore.redact import Redactor, redact_message
from opencode_restore.search.rows import Row, message_rows
from opencode_restore.sources import iter_messages
from tests.store.builders import FIXTURES


def plain_rows(m: Message, label: int) -> list[Row]:
    """The rows of ``m`` redacted whole first (a copy: ``redact_message`` works in place)."""
    whole = redact_message(copy.deepcopy(m), Redactor().redact)
    return list(message_rows(whole, label, lambda text: text))


def fast_rows(m: Message, label: int) -> list[Row]:
    return list(message_rows(m, label, Redactor().redact))


def fixture_messages() -> list[Message]:
    """Every message of the agents' fixture logs that read (the hostile ones included)."""
    found: list[Message] = []
    for agent in ("claude-code", "codex", "gemini", "pi", "opencode", "hostile"):
        for path in sorted((FIXTURES / agent).rglob("*.json*")):
            try:
                found += list(iter_messages([path], WarningSink()))
            except (SourceError, OSError, ValueError):
                continue  # not a log (a fixture's expected output, a bad log on purpose)
    return found


def test_the_rows_of_every_fixture_message_are_those_of_it_redacted_whole() -> None:
    messages = fixture_messages()
    assert len(messages) > 1000
    assert {m.type for m in messages} >= {"text", "tool_use", "tool_result", "thinking"}
    changed = 0
    for n, m in enumerate(messages, start=1):
        before = copy.deepcopy(m)
        rows = fast_rows(m, n)
        assert rows == plain_rows(m, n), m.id
        assert m == before  # the raw message is left as it was
        changed += any("[REDACTED:" in r.text for r in rows)
    assert changed >= 5  # the hostile logs' secrets were there to redact


# Secrets, the names that put a value in view of a rule, and the texts around them.
_PIECES = [
    "sk-proj-AbCdEf0123456789AbCdEf0123456789AbCdEf01",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_1234567890abcdefghijABCDEFGHIJ123456",
    "postgres://admin:hunter2pass@db.example.com/prod",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234567890abcdef\n"
    "-----END RSA PRIVATE KEY-----",
    "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijklmnop",
    "OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD",
    "password=hunter2hunter2",
    '{"token": "abcd1234efgh5678ijkl"}',
    "\\n",
    "\n",
    " ",
    "src/app.py",
    "git status",
]
_TEXT = st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=5)), max_size=8).map("".join)
_NAMES = st.sampled_from(
    ["command", "cmd", "file_path", "path", "content", "API_KEY", "password", "x y", "env"]
)
_VALUE: st.SearchStrategy[Any] = st.recursive(
    st.one_of(_TEXT, st.integers(), st.booleans(), st.none()),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(_NAMES, inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    kinds: list[MessageType] = ["text", "tool_use", "tool_result", "thinking", "file_changes"]
    roles: list[Role] = ["user", "assistant", "tool"]
    kind = draw(st.sampled_from(kinds))
    summary = draw(st.one_of(st.none(), _TEXT))
    return Message(
        id="m",
        role=draw(st.sampled_from(roles)),
        type=kind,
        text=draw(_TEXT),
        tool_name=draw(st.one_of(st.none(), st.sampled_from(["Bash", "Read", "Write"]))),
        tool_input=draw(st.one_of(st.none(), st.dictionaries(_NAMES, _VALUE, max_size=4))),
        is_error=draw(st.booleans()),
        compaction=None if summary is None else Compaction(kind="summary", summary=summary),
        meta=draw(st.dictionaries(_NAMES, _VALUE, max_size=2)),
    )


@settings(max_examples=300, deadline=None)
@given(messages())
def test_the_rows_of_any_message_are_those_of_it_redacted_whole(m: Message) -> None:
    before = copy.deepcopy(m)
    assert fast_rows(m, 7) == plain_rows(m, 7)
    assert m == before
