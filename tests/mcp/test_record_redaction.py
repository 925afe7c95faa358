"""A message record served by MCP redacts a tool's input field by field, with its name."""

from __future__ import annotations

from opencode_restore.mcp.tools import _record
from opencode_restore.model import Message
from opencode_restore.timeline.numbering import Numbering

# A Datadog application key: 40 hex characters, a secret only by the name it sits under.
APP_KEY = "4f8a1c9e2b7d6a3f0e5c8b1a9d2e7f6c3b0a5d8e"


def test_a_tool_inputs_secret_named_field_is_redacted_and_the_input_stays_an_object() -> None:
    message = Message(
        id="m1",
        role="assistant",
        type="tool_use",
        text="",
        tool_name="Bash",
        tool_input={"DATADOG_APP_KEY": APP_KEY, "command": "ls -la"},
    )
    record = _record(message, Numbering())
    assert isinstance(record["tool_input"], dict)
    assert APP_KEY not in str(record)
    assert record["tool_input"]["command"] == "ls -la"
